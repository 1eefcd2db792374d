#!/usr/bin/env python3
"""The discrete-event engine against two real engines measured on an H100 (issue 12's validation).

    python benchmarks/des_validation.py [--data DIR] [--csv OUT.csv]

Reads the committed serving measurements (hwmodels/calibration/data/serving/, made by
hwmodels/calibration/serving/run_server.py and hf_cb.py; records.py there describes the files) and, for
every load level and the Azure slice, replays the SAME requests (the measured arrival times, prompt and output
lengths) through `simulator.engine.api.simulate` with the configuration the GPU ran:

  own server  Llama-3.1-8B on H100-SXM (the committed calibrated fit), dense attention, bf16 KV,
              runtime {launch: graph, kernels: unfused} (the server's plain-PyTorch kernels; decode-only
              steps replayed as CUDA graphs, steps with a prefill chunk eager: scheduler.mixed_launch eager),
              the scheduler parameters of the run (block 16, max_num_batched_tokens 8192, max_num_seqs 1024,
              prefix caching on) and its KV blocks (num_blocks from the run's config: the server sized its
              cache from the device, so the simulator uses the same number).
  HF CB       the same model and device, runtime {launch: eager, kernels: unfused}, dense attention with
              gqa_expand repeat_kv (HF's paged|sdpa repeats K/V per query head), block 256, token budget
              8192, the run's num_blocks: the closest the engine's knobs come; notes/HF_CB_MODEL.md lists what
              it cannot express (the one mask over all queries and keys of a batch among them).

Printed per level: requests compared (finished in the measurement), measured and simulated TTFT / TPOT
medians, and the per-request relative error |sim / measured - 1| at its median and 90th percentile (the
goal for the own server: median <= 10 %, p90 <= 15 %), then the signed bias. Then the step-cost check: every
measured step of the own server priced by the engine's step pricer (StepCostModel.step_s) for its recorded
composition, against its measured device span (CUDA events) and its wall time, by composition class; and
the host time per step the device span does not cover (scheduler, input packing, sync), which the engine
does not model. Nothing is fitted here.
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "hwmodels" / "calibration" / "data" / "serving"
sys.path.insert(0, str(ROOT / "hwmodels" / "calibration" / "serving"))
import records  # noqa: E402


def serving_config(run: dict, engine: str):
    """A ServingConfig replaying one measured run (one replica, the run's scheduler knobs and KV blocks)."""
    from simulator.engine.config import parse_serving_section

    c = run["config"]
    s = c["scheduler"]
    if engine == "own":
        sched = {"max_num_batched_tokens": int(s["max_num_batched_tokens"]), "max_num_seqs": int(s["max_num_seqs"]),
                 "block_size": int(s["block_size"]), "num_blocks": int(s["num_blocks"]),
                 "enable_prefix_caching": bool(s["enable_prefix_caching"]), "mixed_launch": "eager"}
        strategies = {"attention": "dense"}
        runtime = {"launch": "graph", "kernels": "unfused"}
    else:
        sched = {"max_num_batched_tokens": int(s["max_num_batched_tokens"]), "max_num_seqs": 1024,
                 "block_size": int(s["block_size"]), "num_blocks": int(s["num_blocks"]),
                 "enable_prefix_caching": False, "mixed_launch": "eager"}
        strategies = {"attention": {"dense": {"gqa_expand": "repeat_kv"}}}
        runtime = {"launch": "eager", "kernels": "unfused"}
    doc = {"hardware": ["H100-SXM"], "model": "Llama-3.1-8B", "strategies": strategies, "runtime": runtime}
    section = {"requests": {"poisson": {"rate": 1.0, "count": 1}, "input_tokens": {"fixed": 16},
                            "output_tokens": {"fixed": 16}},
               "replicas": [{"count": 1}], "scheduler": sched, "decode_run_steps": 256}
    return parse_serving_section(section, file=f"<des_validation {engine}>", base=ROOT, doc=doc)


def trace_of(rows: list[dict], name: str):
    from simulator.traces.requests import RequestTrace

    arr = np.asarray([r["arrival_s"] for r in rows], dtype=np.float64)
    return RequestTrace(name=name, source=f"measured arrivals ({name})", arrival_s=arr,
                        input_tokens=np.asarray([r["input_tokens"] for r in rows], dtype=np.int64),
                        output_tokens=np.asarray([r["output_tokens"] for r in rows], dtype=np.int64))


def compare_level(cfg, rows: list[dict], name: str) -> dict:
    """Simulate one level's requests; per-request errors over the requests the measurement finished."""
    from simulator.engine.api import simulate

    rows = sorted(rows, key=lambda r: (r["arrival_s"], r["rid"]))
    res = simulate(cfg, trace_of(rows, name), seed=0)
    df = res.requests
    if len(df) != len(rows) or not np.allclose(df["arrival_s"].to_numpy(), [r["arrival_s"] - rows[0]["arrival_s"]
                                                                            for r in rows], atol=1e-9):
        raise RuntimeError(f"{name}: the simulated request table does not line up with the measured requests")
    m_ttft = np.asarray([r["first_token_s"] - r["arrival_s"] for r in rows])
    m_tpot = np.asarray([(r["finish_s"] - r["first_token_s"]) / (r["output_tokens"] - 1) if r["output_tokens"] > 1
                         else math.nan for r in rows])
    done = np.isfinite(np.asarray([r["finish_s"] for r in rows]))
    s_ttft = df["ttft_s"].to_numpy()
    s_tpot = df["tpot_s"].to_numpy()
    out = {"level": name, "n": int(len(rows)), "compared": int(done.sum()), "sim_s": res.wall_s}
    for key, m, s in (("ttft", m_ttft, s_ttft), ("tpot", m_tpot, s_tpot)):
        ok = done & np.isfinite(m) & np.isfinite(s) & (m > 0)
        rel = s[ok] / m[ok] - 1.0
        out[f"{key}_meas_p50"] = float(np.median(m[ok])) if ok.any() else math.nan
        out[f"{key}_sim_p50"] = float(np.median(s[ok])) if ok.any() else math.nan
        out[f"{key}_meas_p90"] = float(np.percentile(m[ok], 90)) if ok.any() else math.nan
        out[f"{key}_sim_p90"] = float(np.percentile(s[ok], 90)) if ok.any() else math.nan
        out[f"{key}_err_p50"] = float(np.median(np.abs(rel))) if len(rel) else math.nan
        out[f"{key}_err_p90"] = float(np.percentile(np.abs(rel), 90)) if len(rel) else math.nan
        out[f"{key}_bias"] = float(np.median(rel)) if len(rel) else math.nan
    return out


def print_levels(title: str, results: list[dict], goal: bool) -> None:
    print(f"\n{title}")
    print(f"{'level':<13} {'cmp/n':>9} | {'TTFT p50 meas':>13} {'sim':>8} {'err p50':>8} {'err p90':>8} {'bias':>7} | "
          f"{'TPOT p50 meas':>13} {'sim':>8} {'err p50':>8} {'err p90':>8} {'bias':>7}")
    for r in results:
        flag = ""
        if goal:
            ok = (r["ttft_err_p50"] <= 0.10 and r["ttft_err_p90"] <= 0.15 and r["tpot_err_p50"] <= 0.10
                  and r["tpot_err_p90"] <= 0.15)
            flag = "  ok" if ok else "  MISS"
        print(f"{r['level']:<13} {r['compared']:>4}/{r['n']:<4} | {r['ttft_meas_p50'] * 1e3:11.1f}ms "
              f"{r['ttft_sim_p50'] * 1e3:6.1f}ms {r['ttft_err_p50']:8.1%} {r['ttft_err_p90']:8.1%} {r['ttft_bias']:+7.1%} | "
              f"{r['tpot_meas_p50'] * 1e3:11.2f}ms {r['tpot_sim_p50'] * 1e3:6.2f}ms {r['tpot_err_p50']:8.1%} "
              f"{r['tpot_err_p90']:8.1%} {r['tpot_bias']:+7.1%}{flag}")


def step_class(n_decode: int, chunks) -> str:
    if not chunks:
        b = n_decode
        return ("decode b=1" if b == 1 else "decode b=2-8" if b <= 8 else "decode b=9-32" if b <= 32 else
                "decode b=33-128" if b <= 128 else "decode b>128")
    pt = sum(c for c, _ in chunks)
    return ("mixed p<=128" if pt <= 128 else "mixed p<=1024" if pt <= 1024 else "mixed p<=4096" if pt <= 4096
            else "mixed p>4096")


def replay(cfg, rows: list[dict], step_time) -> tuple[np.ndarray, np.ndarray]:
    """The same scheduler, the same requests, one step after another with step_time(plan) seconds per step
    (a plain loop: what the engine does for one replica, without its decode-run fast path). Returns per-request
    TTFT and TPOT (NaN where undefined). Used for the queueing diagnosis only."""
    from simulator.engine.scheduler import Request, Scheduler, SchedulerConfig

    k = cfg.scheduler
    sc = Scheduler(SchedulerConfig(num_blocks=int(k["num_blocks"]), block_size=int(k["block_size"]),
                                   max_num_batched_tokens=int(k["max_num_batched_tokens"]),
                                   max_num_seqs=int(k["max_num_seqs"]),
                                   enable_prefix_caching=bool(k["enable_prefix_caching"])))
    rows = sorted(rows, key=lambda r: (r["arrival_s"], r["rid"]))
    reqs = [Request(i, r["input_tokens"], r["output_tokens"], r["arrival_s"]) for i, r in enumerate(rows)]
    n, i, t = len(reqs), 0, 0.0
    done = 0
    while done < n:
        while i < n and reqs[i].arrival <= t:
            sc.add_request(reqs[i], reqs[i].arrival)
            i += 1
        if sc.idle:
            t = reqs[i].arrival
            continue
        plan = sc.schedule(t)
        if plan.empty:
            t = reqs[i].arrival if i < n else t + 1e-3
            continue
        t += step_time(plan)
        ev = sc.step_done(plan, t)
        done += len(ev.finished)
    ttft = np.asarray([r.first_token_time - r.arrival for r in reqs])
    tpot = np.asarray([(r.finish_time - r.first_token_time) / (r.output - 1) if r.output > 1 else math.nan
                       for r in reqs])
    return ttft, tpot


def queueing_check(cfg, run: dict) -> None:
    """Step costs or queueing? Replay each level with (a) the engine's step prices and (b) the same prices
    scaled, per composition class, by the median measured/priced ratio of the serving steps of that class,
    plus the measured median host time per step of the class (wall - device span). If (b) matches the
    measured latencies, the scheduler and the queueing are right and the miss is in the step costs.
    (b) uses the compared runs' own step costs: a diagnosis, not a prediction."""
    from simulator.engine.sim import _cost_model

    k = cfg.scheduler
    cost = _cost_model(cfg.groups[0].combo, int(k["max_num_batched_tokens"]), int(k["max_num_seqs"]),
                       k["mixed_launch"])
    from simulator.engine.step_cost import Composition

    ratio, host = {}, {}
    for s in run["steps"]:
        if s["workload"] == "calib":
            continue
        chunks = tuple(records.parse_chunks(s["prefill_chunks"]))
        comp = Composition(total_tokens=int(s["tokens"]), logit_rows=int(s["rows"]), n_decode=int(s["n_decode"]),
                           decode_ctx_sum=float(s["decode_ctx_sum"]), chunks=chunks)
        c = step_class(s["n_decode"], chunks)
        ratio.setdefault(c, []).append(s["gpu_s"] / cost.step_s(comp))
        host.setdefault(c, []).append(s["wall_s"] - s["gpu_s"])
    ratio = {c: float(np.median(v)) for c, v in ratio.items()}
    host = {c: float(np.median(v)) for c, v in host.items()}

    def corrected(plan):
        c = step_class(plan.n_decode, plan.chunks)
        return cost.step_s(plan) * ratio.get(c, 1.0) + host.get(c, 0.0)

    print("\nqueueing diagnosis (own server): the simulator's scheduler replayed with (a) priced steps, (b) steps "
          "corrected per class by the measured/priced ratio and host time of the serving steps")
    print("  class ratios measured/priced: " + ", ".join(f"{c} {r:.2f}" for c, r in sorted(ratio.items())))
    print(f"{'level':<13} | {'TTFT err p50 (a)':>16} {'(b)':>7} {'p90 (b)':>8} {'bias (b)':>8} | {'TPOT err p50 (a)':>16} "
          f"{'(b)':>7} {'p90 (b)':>8} {'bias (b)':>8}")
    by = {}
    for r in run["requests"]:
        by.setdefault(r["workload"], []).append(r)
    for name, rows in by.items():
        rows = sorted(rows, key=lambda r: (r["arrival_s"], r["rid"]))
        m_ttft = np.asarray([r["first_token_s"] - r["arrival_s"] for r in rows])
        m_tpot = np.asarray([(r["finish_s"] - r["first_token_s"]) / (r["output_tokens"] - 1) if r["output_tokens"] > 1
                             else math.nan for r in rows])
        out = []
        for fn in (cost.step_s, corrected):
            tt, tp = replay(cfg, rows, fn)
            for m, s_ in ((m_ttft, tt), (m_tpot, tp)):
                ok = np.isfinite(m) & np.isfinite(s_) & (m > 0)
                e = s_[ok] / m[ok] - 1
                out.append((np.median(np.abs(e)), np.percentile(np.abs(e), 90), np.median(e)))
        (ta, _, _), (pa, _, _), (tb, tb9, tbb), (pb, pb9, pbb) = out
        print(f"{name:<13} | {ta:16.1%} {tb:7.1%} {tb9:8.1%} {tbb:+7.1%} | {pa:16.1%} {pb:7.1%} {pb9:8.1%} {pbb:+7.1%}")


def step_check(cfg, steps: list[dict], title: str) -> list[dict]:
    """Price every measured step's composition with the engine's step pricer; group by composition class."""
    from simulator.engine.sim import _cost_model
    from simulator.engine.step_cost import Composition

    g = cfg.groups[0]
    knobs = cfg.scheduler
    cost = _cost_model(g.combo, int(knobs["max_num_batched_tokens"]), int(knobs["max_num_seqs"]),
                       knobs["mixed_launch"])
    classes = {}
    for s in steps:
        chunks = tuple(records.parse_chunks(s["prefill_chunks"]))
        comp = Composition(total_tokens=int(s["tokens"]), logit_rows=int(s["rows"]), n_decode=int(s["n_decode"]),
                           decode_ctx_sum=float(s["decode_ctx_sum"]), chunks=chunks)
        pred = cost.step_s(comp)
        cls = step_class(s["n_decode"], chunks)
        if s["workload"] == "calib":
            cls = "calib " + cls
        pmax = math.nan
        if not chunks and s["n_decode"]:   # the same step priced at its LONGEST decode context (diagnosis)
            mx = max(records.parse_decode_ctx(s["decode_ctx"]))
            pmax = cost.step_s(Composition(total_tokens=comp.total_tokens, logit_rows=comp.logit_rows,
                                           n_decode=comp.n_decode, decode_ctx_sum=float(mx * comp.n_decode)))
        classes.setdefault(cls, []).append((pred, s["gpu_s"], s["wall_s"], pmax))
    print(f"\n{title}")
    print(f"{'composition':<22} {'steps':>6} {'meas dev p50':>13} {'pred p50':>9} | {'pred/dev p50':>12} "
          f"{'|err| p50':>9} {'|err| p90':>9} | {'pred/wall p50':>13} {'host p50':>9} | {'max-ctx pred/dev':>16}")
    order = ["decode b=1", "decode b=2-8", "decode b=9-32", "decode b=33-128", "decode b>128", "mixed p<=128",
             "mixed p<=1024", "mixed p<=4096", "mixed p>4096"]
    out = []
    for cls in order + ["calib " + o for o in order]:
        v = classes.get(cls)
        if not v:
            continue
        a = np.asarray(v, dtype=np.float64)
        pred, dev, wall, pmax = a[:, 0], a[:, 1], a[:, 2], a[:, 3]
        okd = np.isfinite(dev) & (dev > 0)
        rd = pred[okd] / dev[okd]
        rw = pred / wall
        host = wall - np.where(okd, dev, np.nan)
        row = {"class": cls, "steps": len(a), "dev_p50": float(np.median(dev[okd])) if okd.any() else math.nan,
               "pred_p50": float(np.median(pred)), "pred_dev": float(np.median(rd)) if len(rd) else math.nan,
               "err_p50": float(np.median(np.abs(rd - 1))) if len(rd) else math.nan,
               "err_p90": float(np.percentile(np.abs(rd - 1), 90)) if len(rd) else math.nan,
               "pred_wall": float(np.median(rw)), "host_p50": float(np.nanmedian(host)) if okd.any() else math.nan}
        out.append(row)
        print(f"{cls:<22} {row['steps']:>6} {row['dev_p50'] * 1e3:11.2f}ms {row['pred_p50'] * 1e3:7.2f}ms | "
              f"{row['pred_dev']:12.3f} {row['err_p50']:9.1%} {row['err_p90']:9.1%} | {row['pred_wall']:13.3f} "
              f"{row['host_p50'] * 1e3:7.3f}ms | "
              + (f"{np.median(pmax[okd] / dev[okd]):16.3f}" if np.isfinite(pmax).any() else f"{'-':>16}"))
    print("(max-ctx: the decode step priced as if every row had the batch's longest context; FlashAttention-2's "
          "varlen kernel without split-KV lasts as long as its longest request)")
    return out


def hf_step_check(cfg, steps: list[dict]) -> None:
    """HF CB steps have no device span (its own stream); wall time against the pricer, by class."""
    from simulator.engine.sim import _cost_model
    from simulator.engine.step_cost import Composition

    g = cfg.groups[0]
    knobs = cfg.scheduler
    cost = _cost_model(g.combo, int(knobs["max_num_batched_tokens"]), int(knobs["max_num_seqs"]),
                       knobs["mixed_launch"])
    rows = []
    for s in steps:
        chunks = tuple(records.parse_chunks(s["prefill_chunks"]))
        comp = Composition(total_tokens=int(s["tokens"]), logit_rows=int(s["rows"]), n_decode=int(s["n_decode"]),
                           decode_ctx_sum=float(s["decode_ctx_sum"]), chunks=chunks)
        kv = s["decode_ctx_sum"] + sum(c + o for c, o in chunks)   # keys in HF's one mask
        rows.append((bool(chunks), s["rows"], s["tokens"], kv, cost.step_s(comp), s["wall_s"]))
    a = np.asarray(rows, dtype=np.float64)
    print("\nHF CB steps: wall time against the engine's price (runtime eager/unfused, repeat_kv), by class")
    print(f"{'class':<28} {'steps':>6} {'wall p50':>9} {'pred p50':>9} {'pred/wall p50':>13}")
    for name, sel in (("decode, rows 1-4", (a[:, 0] == 0) & (a[:, 1] <= 4)),
                      ("decode, rows 5-16", (a[:, 0] == 0) & (a[:, 1] > 4) & (a[:, 1] <= 16)),
                      ("decode, rows > 16", (a[:, 0] == 0) & (a[:, 1] > 16)),
                      ("with prefill, keys <= 8K", (a[:, 0] == 1) & (a[:, 3] <= 8192)),
                      ("with prefill, keys > 8K", (a[:, 0] == 1) & (a[:, 3] > 8192))):
        if sel.any():
            print(f"{name:<28} {int(sel.sum()):>6} {np.median(a[sel, 5]) * 1e3:7.1f}ms {np.median(a[sel, 4]) * 1e3:7.1f}ms "
                  f"{np.median(a[sel, 4] / a[sel, 5]):13.3f}")


HF_DECODE_CSV = ROOT / "hwmodels" / "calibration" / "data" / "hf_decode_nvidia-h100-80gb-hbm3_2026-11-22.csv"


def hf_host_floor_s() -> float:
    """HF transformers' per-step host floor, measured separately (measure_hf_decode.py, committed CSV): the
    median of its attention-free SDPA steps (context 16, batches 1, 2, 4) in eager PyTorch. None of the serving
    runs is used."""
    import csv

    with open(HF_DECODE_CSV, newline="") as f:
        v = [float(r["median_ms"]) for r in csv.DictReader(f)
             if r["attn_implementation"] == "sdpa" and r["context"] == "16" and r["median_ms"]]
    return float(np.median(v)) / 1e3


def hf_floor_check(cfg, run: dict) -> None:
    """HF CB replayed by the simulator's scheduler with step = max(priced step, HF's host floor measured
    separately): how much of HF's latency a per-step host floor explains (the engine has no such knob)."""
    from simulator.engine.sim import _cost_model

    k = cfg.scheduler
    cost = _cost_model(cfg.groups[0].combo, int(k["max_num_batched_tokens"]), int(k["max_num_seqs"]),
                       k["mixed_launch"])
    floor = hf_host_floor_s()
    print(f"\nHF CB with a per-step host floor of {floor * 1e3:.1f} ms (measure_hf_decode.py's attention-free SDPA "
          "step, a separate measurement): step = max(price, floor), same scheduler replay")
    print(f"{'level':<13} | {'TTFT err p50':>12} {'p90':>7} {'bias':>7} | {'TPOT err p50':>12} {'p90':>7} {'bias':>7}")
    by = {}
    for r in run["requests"]:
        by.setdefault(r["workload"], []).append(r)
    for name, rows in by.items():
        rows = sorted(rows, key=lambda r: (r["arrival_s"], r["rid"]))
        m_ttft = np.asarray([r["first_token_s"] - r["arrival_s"] for r in rows])
        m_tpot = np.asarray([(r["finish_s"] - r["first_token_s"]) / (r["output_tokens"] - 1) if r["output_tokens"] > 1
                             else math.nan for r in rows])
        tt, tp = replay(cfg, rows, lambda plan: max(cost.step_s(plan), floor))
        cells = []
        for m, s_ in ((m_ttft, tt), (m_tpot, tp)):
            ok = np.isfinite(m) & np.isfinite(s_) & (m > 0)
            e = s_[ok] / m[ok] - 1
            cells += [np.median(np.abs(e)), np.percentile(np.abs(e), 90), np.median(e)]
        print(f"{name:<13} | {cells[0]:12.1%} {cells[1]:7.1%} {cells[2]:+7.1%} | {cells[3]:12.1%} {cells[4]:7.1%} "
              f"{cells[5]:+7.1%}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=str(DATA), help="folder of the serving measurements")
    ap.add_argument("--csv", default="", help="also write the per-level figures to this CSV")
    a = ap.parse_args(argv)
    all_rows = []
    for engine, title in (("own", "OWN SERVER (PyTorch, FlashAttention-2 varlen, CUDA-graph decode) vs engine"),
                          ("hf", "HF TRANSFORMERS CONTINUOUS BATCHING (paged|sdpa) vs engine")):
        try:
            run = records.load_run(a.data, engine)
        except FileNotFoundError as e:
            print(f"\n{title}: no measurements ({e})")
            continue
        cfg = serving_config(run, engine)
        c = run["config"]
        print(f"\n=== {title}\n    {c['gpu']}, torch {c['torch_version']}"
              + (f", transformers {c.get('transformers_version')}" if engine == "hf" else "")
              + f", {c['date']}; num_blocks {c['num_blocks']} x {c['block_size']} tokens; "
              f"replayed on H100-SXM Llama-3.1-8B, runtime {cfg.groups[0].combo.launch}/{cfg.groups[0].combo.kernels}")
        levels = []
        by = {}
        for r in run["requests"]:
            by.setdefault(r["workload"], []).append(r)
        for name, rows in by.items():
            res = compare_level(cfg, rows, name)
            res["engine"] = engine
            levels.append(res)
        print_levels(f"per-request error, {engine}", levels, goal=(engine == "own"))
        all_rows += levels
        if engine == "own":
            serving = [s for s in run["steps"] if s["workload"] != "calib"]
            step_check(cfg, serving + [s for s in run["steps"] if s["workload"] == "calib"],
                       "step cost: engine price vs measured device span (CUDA events) and wall time, own server")
            host = np.asarray([s["sched_s"] + s["prep_s"] + s["update_s"] for s in serving])
            gap = np.asarray([s["wall_s"] - s["gpu_s"] for s in serving])
            print(f"host time per serving step (scheduler + input packing + scheduler update): median "
                  f"{np.median(host) * 1e3:.3f} ms, p90 {np.percentile(host, 90) * 1e3:.3f} ms; wall - device span: "
                  f"median {np.median(gap) * 1e3:.3f} ms (not in the engine's step price)")
            queueing_check(cfg, run)
        else:
            hf_step_check(cfg, run["steps"])
            hf_floor_check(cfg, run)
    if a.csv and all_rows:
        import pandas as pd

        pd.DataFrame(all_rows).to_csv(a.csv, index=False)
        print(f"\nwrote {a.csv}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
