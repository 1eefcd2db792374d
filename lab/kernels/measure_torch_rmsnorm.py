"""s26rn: time torch's F.rms_norm (bf16, weight) on grid 1's shapes as lab/measure.py's fam_elementwise times it
(harness.Bencher: spin + CUDA events, rotation sets to 256 MiB, budget_s 0.03), then one profiler trace of the kernel
(name, grid, block, registers, blocks per SM). Writes $OUT/rms.csv, $OUT/trace.txt; prints a table last.
s27rn: `--grid blind2` reads pred2.csv (grid 2's committed prices), writes $OUT/rms2.csv carrying every pred_*
column, makes one untimed warm-up call first (grid 1's first row, 1 x 2048, ran ~20 % slow as the run's first shape),
and traces grid 2's shapes; the timing (harness.Bencher, rotation sets, budget) is grid 1's.
s28rn: `--grid blind3` does the same as blind2 with pred3.csv (grid 3's committed prices) -> $OUT/rms3.csv (carrying
its `target` column too) and traces grid 3's shapes; blind2's behaviour is unchanged."""
import csv, json, math, os, sys, time
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]   # harness.py beside it (device copy) or in lab/
import torch
import torch.nn.functional as F
from harness import Env, Bencher, quantile

OUT = os.environ.get("OUT", "/tmp/s26rn_out")
os.makedirs(OUT, exist_ok=True)
DRY = "--dry-run" in sys.argv
G3 = "blind3" in sys.argv
G2 = "blind2" in sys.argv or G3   # grid 3 runs as grid 2 (warm-up, pred_* columns), its own files and traces
MiB = 1 << 20
ROT = 256 * MiB
T_END = time.time() + (30 if DRY else 150)


def nrot_for(b, cap=16):
    return int(max(1, min(cap, math.ceil(ROT / max(b, 1)))))


def rnd(shape, dt, dev):
    t = torch.empty(shape, dtype=dt, device=dev)
    t.normal_(0.0, 1.0)
    return t


env = Env("cpu" if DRY else "cuda")
bench = Bencher(env)
dev, dt = env.device, torch.bfloat16
PRED = next((a for a in sys.argv[1:] if a.endswith(".csv")), os.path.join(HERE, "pred3.csv" if G3 else ("pred2.csv" if G2 else "pred.csv")))
shapes = list(csv.DictReader(open(PRED)))
PCOLS = [c for c in shapes[0] if c.startswith("pred_")] if G2 else ["pred_main_us", "pred_cand_us", "pred_nol2_us"]
if G2:   # one untimed warm-up call (the kernel loaded, the clocks up) before the first timed shape
    _x = rnd((64, 4096), dt, dev)
    _w = rnd((4096,), dt, dev)
    for _ in range(20):
        F.rms_norm(_x, (4096,), _w, 1e-5)
    env.sync()
    del _x, _w
if DRY:
    shapes = shapes[:3]
rows = []
for s in shapes:
    if time.time() > T_END:
        print("time budget over, skipping", s["rows"], s["n"], flush=True)
        continue
    B, H = int(s["rows"]), int(s["n"])
    if DRY:
        B = min(B, 4)
    nrot = nrot_for(2 * B * H * 2)
    xs = [rnd((B, H), dt, dev) for _ in range(nrot)]
    w = rnd((H,), dt, dev)
    t = bench.run(lambda i: F.rms_norm(xs[i % nrot], (H,), w, 1e-5), nrot, budget_s=0.03)
    r = dict(rows=s["rows"], n=H, kind=s["kind"], regime=s["regime"], median_us=round(t["median"], 3),
             p20_us=round(t["p20"], 3), p80_us=round(t["p80"], 3), repeats=t["reps"], inner_calls=t["inner"],
             rotation_sets=nrot, **({"target": s["target"]} if G3 else {}), **{c: s[c] for c in PCOLS})
    rows.append(r)
    print(f"{B:6d} x {H:6d} {t['median']:10.3f} us (p20 {t['p20']:.3f} p80 {t['p80']:.3f}) nrot {nrot}", flush=True)
    del xs
    env.free()

with open(os.path.join(OUT, "rms3.csv" if G3 else ("rms2.csv" if G2 else "rms.csv")), "w", newline="") as f:
    wr = csv.DictWriter(f, fieldnames=list(rows[0]))
    wr.writeheader()
    wr.writerows(rows)

# the launch shape, from one profiler trace per shape
trace_lines = [f"device={env.name} sm={env.sm_count} l2={env.l2_bytes} torch={torch.__version__} "
               f"cuda={torch.version.cuda} driver={env.driver} date={env.date}"]
if not DRY:
    from torch.profiler import ProfilerActivity, profile
    TRACE = (((16000, 256), (2112, 1664), (40000, 896)) if G3 else ((132, 11264), (1900, 4608), (30720, 2048)) if G2
             else ((1, 16384), (16384, 8192), (1024, 4096)))
    for B, H in TRACE:
        try:
            x = rnd((B, H), dt, dev)
            w = rnd((H,), dt, dev)
            F.rms_norm(x, (H,), w, 1e-5)
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                F.rms_norm(x, (H,), w, 1e-5)
                torch.cuda.synchronize()
            p = os.path.join("/tmp", f"s26rn_trace_{B}_{H}.json")
            prof.export_chrome_trace(p)
            ev = json.load(open(p))
            for e in ev.get("traceEvents", []):
                if e.get("cat") == "kernel":
                    a = e.get("args", {})
                    keep = {k: a.get(k) for k in ("grid", "block", "registers per thread", "shared memory",
                                                  "blocks per SM", "warps per SM", "est. achieved occupancy %")}
                    trace_lines.append(f"{B}x{H} dur_us={e.get('dur')} name={e.get('name')[:160]} {keep}")
        except Exception as ex:  # noqa: BLE001
            trace_lines.append(f"{B}x{H} trace failed: {type(ex).__name__}: {ex}")
open(os.path.join(OUT, "trace.txt"), "w").write("\n".join(trace_lines) + "\n")
print("\n".join(trace_lines))


def ape(p, m):
    return abs(float(p) / m - 1) * 100


NAMES = [c[len("pred_"):-len("_us")] for c in PCOLS]
print(f"\n{'rows':>6} {'n':>6} {'kind':>7} {'regime':>6} {'meas_us':>9} " + " ".join(f"{k + '%':>8}" for k in NAMES))
for r in rows:
    m = r["median_us"]
    print(f"{int(r['rows']):6d} {r['n']:6d} {r['kind']:>7} {r['regime']:>6} {m:9.2f} "
          + " ".join(f"{(float(r[c]) / m - 1) * 100:+8.1f}" for c in PCOLS))
for reg in ("lone", "mid", "stream") + (("target",) if G3 else ()):
    rr = [r for r in rows if r["kind"] == "blind" and (r["regime"] == reg or (reg == "target" and r.get("target") == "1"))]
    if rr:
        out = f"{reg:<6} n={len(rr):2d}"
        for c, k in zip(PCOLS, NAMES):
            e = sorted(ape(r[c], r["median_us"]) for r in rr)
            out += f" {k} {quantile(e, 0.5):.1f}/{quantile(e, 0.9):.1f}"
        print(out)
