#!/usr/bin/env python3
"""What the host-speed probe says about HF continuous batching's launch wander (CPU only; reads committed data).

    python lab/serving/host_speed_analysis.py [--data hwmodels/calibration/data/serving]

Inputs (H100 SXM, 2026-11-26, torch 2.11.0+cu130, transformers 5.17.0):
  hostprobe_{iters,monitor,gc,config}_*  host_speed_probe.py: one one-row decode request, and before every step a
                                          pure-Python probe (py), 1,600 tiny in-place adds (add) and 1,600 bare
                                          launches (drv), in the engine's own thread; a monitor process on another
                                          vCPU; gc collections; six torch.profiler tables of whole steps
  serving_hfvalprobe_{steps,requests,config}_*  hf_cb_runtime.py --host-probe 128: held-out runs re-recorded with a
                                          128-launch 'add' probe timed in the gap before every step (probe_s)

Printed: the launch (c) against the probes in 4-s windows; the client-polling and gc checks; where a profiled
step's host time goes; and, in the re-recorded runs, the launch per probe launch ("r": launch / (1,600 x probe's
time per launch)), which separates the machine's host speed (the probe) from what the forward itself does, split
by whether the step's attention shape (Q, K) ran before in the process (the tracer's seen_qk).
"""
from __future__ import annotations

import argparse
import csv
import gzip
import json
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "..", "hwmodels", "calibration", "data", "serving")
TAG = "nvidia-h100-80gb-hbm3_2026-11-26"
N_LAUNCH = 1600       # launches of host_speed_probe.py's add probe, and the scale r is expressed in
#: r below this is the 'fast' mode, above it the 'slow' one: the geometric middle of the two modes seen
#: (~2.5 and ~5.5 per probe launch; see mode_split)
R_SPLIT = 3.7


def read_rows(path: str) -> list[dict]:
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt", newline="") as f:
        return list(csv.DictReader(f))


def num(rows: list[dict], key: str) -> np.ndarray:
    return np.array([float(r[key]) if r.get(key) not in (None, "") else math.nan for r in rows], dtype=np.float64)


def spearman(a, b) -> float:
    """Rank correlation of two equal-length arrays (NaN pairs dropped; ties broken by order)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    ok = np.isfinite(a) & np.isfinite(b)
    if ok.sum() < 3:
        return math.nan
    ra = np.argsort(np.argsort(a[ok])).astype(np.float64)
    rb = np.argsort(np.argsort(b[ok])).astype(np.float64)
    return float(np.corrcoef(ra, rb)[0, 1])


def window_medians(t, cols: dict, width: float) -> dict:
    """Median of each column per window of `width` seconds of t: {'t': starts, name: medians}."""
    t = np.asarray(t, dtype=np.float64)
    k = np.floor(t / width).astype(np.int64)
    keys = np.unique(k)
    out = {"t": keys * width}
    for name, v in cols.items():
        v = np.asarray(v, dtype=np.float64)
        out[name] = np.array([np.nanmedian(v[k == i]) if np.isfinite(v[k == i]).any() else math.nan for i in keys])
    return out


def mode_split(r, split: float = R_SPLIT) -> dict:
    """Fast / slow share and median of r (launch per probe launch, in units of N_LAUNCH launches)."""
    r = np.asarray(r, dtype=np.float64)
    r = r[np.isfinite(r)]
    fast, slow = r[r < split], r[r >= split]
    return {"n": len(r), "fast_share": len(fast) / len(r) if len(r) else math.nan,
            "fast_r": float(np.median(fast)) if len(fast) else math.nan,
            "slow_r": float(np.median(slow)) if len(slow) else math.nan}


def host_bound_decode(steps: list[dict]) -> list[dict]:
    """Pure-decode steps whose forward is host-bound (the device finished within 2 ms of the launch), as
    des_validation._run_launch_s selects them."""
    return [s for s in steps if not s.get("prefill_chunks") and int(s["n_decode"]) > 0
            and float(s.get("sync_s") or 0) < 0.002 and float(s["launch_s"]) < 0.3]


def request_launch_spread(run: dict) -> np.ndarray:
    """Per request: the mean launch of the host-bound decode steps that started inside its decode window (first
    token to finish; the step timers and the token times share the run's clock), divided by the run's median launch
    (NaN where no such step). Its spread is what no constant launch can follow."""
    st = [s for s in run["steps"] if not s["prefill_chunks"] and s["n_decode"] and float(s.get("sync_s") or 0) < 0.002
          and float(s["launch_s"]) < 0.3]
    if not st:
        return np.full(len(run["rows"]), math.nan)
    t = np.asarray([float(s["t_start_s"]) for s in st])
    la = np.asarray([float(s["launch_s"]) for s in st])
    med = float(np.median(la))
    out = []
    for r in run["rows"]:
        a, b = float(r.get("first_token_s") or math.nan), float(r.get("finish_s") or math.nan)
        m = (t >= a) & (t < b) if math.isfinite(a) and math.isfinite(b) else np.zeros(len(t), bool)
        out.append(float(la[m].mean()) / med if m.any() else math.nan)
    return np.asarray(out)


def probe_section(data: str) -> dict:
    it = read_rows(os.path.join(data, f"hostprobe_iters_{TAG}.csv.gz"))
    mon = read_rows(os.path.join(data, f"hostprobe_monitor_{TAG}.csv.gz"))
    gcs = read_rows(os.path.join(data, f"hostprobe_gc_{TAG}.csv.gz"))
    cfg = json.load(open(os.path.join(data, f"hostprobe_config_{TAG}.json")))
    prof_t = num([r for r in it if r.get("flag") == "prof"], "t_s")
    it = [r for r in it if not r.get("flag")]
    t, c, py, add, drv = (num(it, k) for k in ("t_s", "c_launch_s", "py_s", "add_s", "drv_s"))
    keep = c < 0.3                       # the gen-2 collection stalls are counted apart below
    mt = num(mon, "t_s")
    mt = mt - mt[0] + 0.2                # the monitor starts ~0.2 s after the probe's t0 (same monotonic clock)
    print(f"=== host_speed_probe.py: {len(it)} one-row decode steps over {t[-1]:.0f} s, CPU {cfg['cpu_model']}, "
          f"{cfg['cpu_count']} vCPUs ({'1 thread per core' if 'Thread(s) per core:                      1' in cfg['lscpu'] else 'see lscpu'}), "
          f"engine thread on CPUs {sorted(set(int(x) for x in num(it, 'cpu_c0')))}, monitor on {cfg['monitor_cpu']}")
    w = window_medians(t[keep], {"c": c[keep], "py": py[keep], "add": add[keep], "drv": drv[keep]}, 4.0)
    wm = window_medians(mt, {"mon": num(mon, "py_s")}, 4.0)
    mon_at = np.interp(w["t"], wm["t"], wm["mon"])
    print(f"{'t s':>5} {'c ms':>6} {'py ms':>6} {'add ms':>6} {'drv ms':>6} {'mon py':>6} {'c/add':>6} {'c/py':>6}")
    for i in range(len(w["t"])):
        print(f"{w['t'][i]:5.0f} {w['c'][i] * 1e3:6.1f} {w['py'][i] * 1e3:6.2f} {w['add'][i] * 1e3:6.2f} "
              f"{w['drv'][i] * 1e3:6.2f} {mon_at[i] * 1e3:6.2f} {w['c'][i] / w['add'][i]:6.2f} "
              f"{w['c'][i] / w['py'][i]:6.2f}")
    ca = w["c"] / w["add"]
    res = {"c_range": float(np.nanmax(w["c"]) / np.nanmin(w["c"])), "py_range": float(np.nanmax(w["py"]) /
                                                                                     np.nanmin(w["py"])),
           "c_add_p10": float(np.nanpercentile(ca, 10)), "c_add_p50": float(np.nanmedian(ca)),
           "c_add_p90": float(np.nanpercentile(ca, 90)),
           "rho_c_add": spearman(w["c"], w["add"]), "rho_c_py": spearman(w["c"], w["py"]),
           "rho_c_mon": spearman(w["c"], mon_at), "rho_step_c_add": spearman(c[keep], add[keep])}
    print(f"4-s windows: launch c varies {res['c_range']:.2f}x (max/min of window medians), the Python probe "
          f"{res['py_range']:.2f}x; c/add p10/p50/p90 {res['c_add_p10']:.2f} / {res['c_add_p50']:.2f} / "
          f"{res['c_add_p90']:.2f}; Spearman c~add {res['rho_c_add']:.2f}, c~py {res['rho_c_py']:.2f}, c~monitor "
          f"(another vCPU) {res['rho_c_mon']:.2f}; per step c~add {res['rho_step_c_add']:.2f}")
    cpu = num(it, "c_cpu_s")
    print(f"the engine thread is on a CPU for {np.nanmedian(cpu[keep] / c[keep]):.2f} of the launch (thread_time / "
          f"wall), run-queue wait median {np.nanmedian(num(it, 'c_wait_ns')) / 1e3:.0f} us, steal on its CPU "
          f"{np.nanmean(num(it, 'cpu_steal')) * 100:.2f} % on average ({np.nanmax(num(it, 'cpu_steal')) * 100:.0f} % "
          f"at most in one step), involuntary switches "
          f"{np.nanmedian(num(it, 'c_nvcsw')):.0f} per step (median); GPU SM clock "
          f"{sorted(set(num(it, 'gpu_sm_mhz').astype(int).tolist()))} MHz")
    mode = np.array([r["mode"] for r in it])
    for m in ("poll", "sleep"):
        s = (mode == m) & keep
        print(f"client {m:>5}: c median {np.median(c[s]) * 1e3:6.1f} ms (p10 {np.percentile(c[s], 10) * 1e3:5.1f}, "
              f"p90 {np.percentile(c[s], 90) * 1e3:5.1f}), c/add {np.median(c[s] / add[s]):.2f}, voluntary switches "
              f"in the launch {np.median(num(it, 'c_vcsw')[s]):.0f} per step")
    gen = num(gcs, "generation")
    dur = num(gcs, "duration_s")
    g2 = dur[gen == 2]
    g2t = num(gcs, "t_s")[gen == 2]
    near = int(sum(1 for x in g2t if len(prof_t) and np.min(np.abs(prof_t - x)) < 1.0))
    late = int((g2t > t[-1]).sum())
    share = float(np.nansum(num(it, "c_gc_s")[keep]) / c[keep].sum())
    print(f"gc: {len(gcs)} collections; generation 0/1 {dur[gen < 2].sum() * 1e3:.0f} ms in all; generation 2: "
          f"{len(g2)} x {np.median(g2) * 1e3:.0f} ms (median), {g2.max() * 1e3:.0f} ms at most, {near} of them within "
          f"1 s of a profiled step (the profiler's objects) and {late} after the last step; gc inside the launches: "
          f"{share:.2%} of their time; steps over 0.3 s: {int((~keep).sum())}, with "
          f"{int(np.nansum(num(it, 'gc_n')[~keep]))} collections in them")
    res.update({"gc2_n": int(len(g2)), "gc2_ms": float(np.median(g2) * 1e3), "gc_share": share})
    for p in cfg.get("profiles", []):
        if "top" not in p:
            continue
        cud = sum(x["self_us"] for x in p["top"] if "cudnn_attention" in x["name"])
        print(f"profiled step {p['it']:>4}: {p['wall_s'] * 1e3:5.0f} ms, py {p['py_s'] * 1e3:5.2f} ms, add "
              f"{p['add_s'] * 1e3:5.1f} ms; host self time {p['self_cpu_us_total'] / 1e3:5.0f} ms of which "
              f"aten::_cudnn_attention_forward {cud / 1e3:4.0f} ms ({cud / p['self_cpu_us_total']:.0%}, 32 calls)")
    return res


def runs_section(data: str) -> dict:
    steps = read_rows(os.path.join(data, f"serving_hfvalprobe_steps_{TAG}.csv.gz"))
    cfg = json.load(open(os.path.join(data, f"serving_hfvalprobe_config_{TAG}.json")))
    n = int(cfg.get("host_probe_launches") or 128)
    hb = host_bound_decode(steps)
    print(f"\n=== held-out runs re-recorded with a {n}-launch probe before every step (hf_cb_runtime.py --host-probe "
          f"{n}); host-bound decode steps; r = launch / ({N_LAUNCH} x probe time per launch)")
    print(f"{'run':<20} {'n':>4} {'launch p10/p50/p90 ms':>22} {'probe us/launch p10/p90':>24} {'r p50':>6} "
          f"{'fast':>5} {'r fast':>6} {'r slow':>6}")
    out = {}
    allr = []
    for name in dict.fromkeys(s["workload"] for s in hb):
        g = [s for s in hb if s["workload"] == name]
        la, pr = num(g, "launch_s"), num(g, "probe_s") / n
        r = la / (pr * N_LAUNCH)
        allr += r.tolist()
        ms = mode_split(r)
        out[name] = ms
        print(f"{name:<20} {len(g):>4} {np.percentile(la, 10) * 1e3:6.1f} {np.median(la) * 1e3:6.1f} "
              f"{np.percentile(la, 90) * 1e3:6.1f}    {np.percentile(pr, 10) * 1e6:8.2f} {np.percentile(pr, 90) * 1e6:8.2f}"
              f"       {np.median(r):6.2f} {ms['fast_share']:5.0%} {ms['fast_r']:6.2f} {ms['slow_r']:6.2f}")
    ms = mode_split(allr)
    out["all"] = ms
    print(f"all runs: {ms['n']} steps, {ms['fast_share']:.0%} in the fast mode (r {ms['fast_r']:.2f}), the rest "
          f"r {ms['slow_r']:.2f}: the launch per unit of host speed is bimodal (x{ms['slow_r'] / ms['fast_r']:.1f}) "
          f"while the probe stays put")
    r = num(hb, "launch_s") / (num(hb, "probe_s") / n * N_LAUNCH)
    sq = num(hb, "seen_qk")
    for k, what in ((0, "new to the process"), (1, "run before in the process")):
        m = sq == k
        out[f"seen{k}"] = {"n": int(m.sum()), "r": float(np.median(r[m])), "fast_share": float(np.mean(r[m] < R_SPLIT))}
        print(f"steps whose attention shape (Q, K) is {what:<26}: {int(m.sum()):>5}, r median {np.median(r[m]):.2f}, "
              f"{np.mean(r[m] < R_SPLIT):.0%} in the fast mode")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=DATA)
    a = ap.parse_args(argv)
    res = probe_section(a.data)
    modes = runs_section(a.data)
    print("\nVERDICT: the launch is (host speed of the engine's vCPU) x (a two-level factor set by the step's attention shape). Host speed: in the "
          f"probe run the launch followed the probes (4-s windows: c varied {res['c_range']:.2f}x, c/add within "
          f"{res['c_add_p10']:.2f}-{res['c_add_p90']:.2f}); not steal, not the client's GIL hand-offs, not gc ({res['gc_share']:.2%} of the "
          f"launch time), not the GPU clock, and not machine-wide "
          f"(another vCPU's probe: rho {res['rho_c_mon']:.2f}). The factor: with the probe steady, the launch of the "
          f"same step sits at r ~{modes['all']['fast_r']:.1f} or ~{modes['all']['slow_r']:.1f}, and which one is "
          f"set by whether the step's attention shape (Q, K) ran before in the process ({modes['seen1']['fast_share']:.0%} "
          f"of seen shapes fast, {modes['seen0']['fast_share']:.0%} of new ones): the profiled steps (all new shapes) "
          "spend ~55 % of their host time inside aten::_cudnn_attention_forward (1.4-2.3 ms per call), about the "
          "difference between the two modes (likely cuDNN's SDPA graph, cached per shape and built again for a new one; "
          "no seen-shape step was profiled to confirm it).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
