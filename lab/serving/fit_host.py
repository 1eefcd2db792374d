#!/usr/bin/env python3
"""Fit HF continuous batching's per-step host time (and, as a cross-check, its device time) from the PROFILE runs
of hf_cb_runtime.py, and judge every fitted term on the held-out VALIDATION runs' steps.

    python lab/serving/fit_host.py                 # the committed H100 runs (2026-11-26)
    python lab/serving/fit_host.py --yaml          # also print the measured block of the hf-cb engine profile
    python lab/serving/fit_host.py --profile hfeffprof --validation none --tag nvidia-h100-80gb-hbm3_2026-11-27
                                                   # the SDPA-without-cuDNN runs (--sdpa-backend efficient)

Pure numpy (no torch, no pandas): it reads the committed CSVs with records.py. What a step is made of (the
timers of hf_cb_runtime.py):

    wall = sched + prep + kwargs + launch + sync + update        (gap: host time between two steps)
    pre  = sched + prep + kwargs    FIFO scheduling, the input lists (read/write indices: one Python int per key),
                                    the block-diagonal mask (a few tensor ops per request), the copies to the GPU
    launch                          the host issuing the eager forward + sampling (~1,530-1,690 kernels, counted in
                                    the profile's kernel tables); the forward runs while it is issued
    sync                            waiting for the GPU after the last launch (device-bound steps)
    update                          request bookkeeping and outputs after the token ids reach the host

Terms (least squares on the profile steps, both profile samples pooled):
    pre    = a + b*rows + c*keys + d*Q + e*new_requests
    update = a + b*rows + c*finished + d*first_tokens
    gap    = median
    launch = per-step constant on host-bound steps (sync < 2 ms), split by whether the step's attention shape
             (Q, K of the whole step) ran before in the process (seen_qk: cuDNN's SDPA graph is cached per shape):
             the new shapes' median and quantiles, the seen shapes' median (~2.5x faster). Within each, the spread
             (~1.7x) is the speed of the vCPU the engine's thread runs on (host_speed_probe.py), not content
    device = d0 + dQ*Q + dK*K + dQK*Q*K on device-bound steps (the replayed forward's CUDA-event span when it is
             device-dominated, else the in-situ span when the host waited >= 50 % of it); Q*K is the batch-wide
             mask that cuDNN's SDPA computes in full
    norm   = p of the forward (launch^p + device^p)^(1/p) against launch + sync over the profile steps (p = inf would
             be max(launch, device); measured ~1.4 x max where launch and device are equal: the host blocks well
             before the GPU finishes)
A step's predicted wall: pre + (launch^p + device^p)^(1/p) + update (+ gap). Nothing here reads the validation runs'
per-request latencies; the validation steps are only used to score the fitted terms.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import records  # noqa: E402

from simulator.engine.runtime import fit_overlap_norm  # noqa: E402

DATA = os.path.join(ROOT, "hwmodels", "calibration", "data", "serving")
SLUG_DATE = "nvidia-h100-80gb-hbm3_2026-11-26"
PROFILE = ("hfprof", "hfprofpin")
VALIDATION = "hfval"
NUM = ("sched_s", "prep_s", "kwargs_s", "launch_s", "sync_s", "update_s", "wall_s", "gap_s", "gpu_span_s",
       "gpu_busy_s", "rows", "tokens", "keys", "n_decode", "n_prefill", "new_reqs", "first_tokens", "finished",
       "seen_q", "seen_qk", "seg_alloc")
HOST_BOUND_SYNC_S = 0.002      # a step whose host waited less than this for the GPU after its last launch
DEVICE_BOUND_FRAC = 0.5        # the host waited at least this share of the in-situ device span


def load_steps(path: str) -> dict:
    """Columns of a steps CSV as float arrays (empty cells -> nan) plus 'workload' and the raw composition."""
    rows = records.read_csv(path)
    out = {k: np.asarray([_num(r.get(k, "")) for r in rows], dtype=np.float64) for k in NUM}
    out["workload"] = np.asarray([r["workload"] for r in rows])
    out["n"] = len(rows)
    return out


def _num(v):
    if isinstance(v, (int, float)):
        return float(v)
    return float(v) if v not in ("", None) else math.nan


def pool(*tabs) -> dict:
    out = {k: np.concatenate([t[k] for t in tabs]) for k in tabs[0] if k != "n"}
    out["n"] = sum(t["n"] for t in tabs)
    return out


def sub(t: dict, m: np.ndarray) -> dict:
    out = {k: v[m] for k, v in t.items() if k != "n"}
    out["n"] = int(m.sum())
    return out


def lstsq(cols: list[np.ndarray], y: np.ndarray) -> np.ndarray:
    a = np.column_stack([np.ones(len(y))] + cols)
    return np.linalg.lstsq(a, y, rcond=None)[0]


def predict(c: np.ndarray, cols: list[np.ndarray]) -> np.ndarray:
    return c[0] + sum(ci * x for ci, x in zip(c[1:], cols))


def err(pred: np.ndarray, meas: np.ndarray) -> dict:
    """Absolute (ms) and relative error figures: |e| p50 / p90, signed median bias."""
    e = pred - meas
    r = pred / meas - 1
    return {"abs_p50_ms": float(np.median(np.abs(e))) * 1e3, "abs_p90_ms": float(np.percentile(np.abs(e), 90)) * 1e3,
            "rel_p50": float(np.median(np.abs(r))), "rel_p90": float(np.percentile(np.abs(r), 90)),
            "bias": float(np.median(r)), "n": int(len(e))}


# ---- the terms ------------------------------------------------------------------------------------------------
PRE_TERMS = ("rows", "keys", "tokens", "new_reqs")
UPD_TERMS = ("rows", "finished", "first_tokens")
DEV_TERMS = ("tokens", "keys", "q_x_k")


def pre_s(t):
    return t["sched_s"] + t["prep_s"] + t["kwargs_s"]


def cols(t, names):
    return [t["tokens"] * t["keys"] if n == "q_x_k" else t[n] for n in names]


def host_bound(t):
    return (t["sync_s"] < HOST_BOUND_SYNC_S) & (t["n_prefill"] == 0) & np.isfinite(t["launch_s"])


def device_target(t):
    """Device time of a step where it can be read: the replay's span when the replay was device-dominated (its
    span > 0.6 x the in-situ span), else the in-situ span of a step whose host waited >= DEVICE_BOUND_FRAC of it."""
    busy, span = t["gpu_busy_s"], t["gpu_span_s"]
    rep = np.isfinite(busy) & (busy > 0.6 * span)
    dev = np.where(rep, busy, np.where(t["sync_s"] >= DEVICE_BOUND_FRAC * span, span, math.nan))
    return dev


def fit(prof: dict) -> dict:
    """Every term from the profile steps."""
    f = {}
    f["pre"] = lstsq(cols(prof, PRE_TERMS), pre_s(prof))
    f["update"] = lstsq(cols(prof, UPD_TERMS), prof["update_s"])
    g = prof["gap_s"][np.isfinite(prof["gap_s"])]
    f["gap_s"] = float(np.median(g))
    hb = host_bound(prof)
    ok = hb & (prof["launch_s"] < 0.3)    # > 0.3 s: the stalls, reported apart
    seen = prof["seen_qk"] == 1           # the step's attention shape (Q, K) ran before in the process
    lau = prof["launch_s"][ok & ~seen]
    big = hb & (prof["launch_s"] >= 0.3)
    f["stalls"] = {"n": int(big.sum()), "s": prof["launch_s"][big].round(2).tolist(),
                   "where": [f"{w}#{int(k)}" for w, k in zip(prof["workload"][big], np.flatnonzero(big))]}
    f["launch_q"] = {q: float(np.percentile(lau, q)) for q in (5, 10, 25, 50, 75, 90, 95)}
    f["launch_s"] = f["launch_q"][50]
    f["launch_seen_s"] = float(np.median(prof["launch_s"][ok & seen]))
    f["n_launch_seen"] = int((ok & seen).sum())
    dev = device_target(prof)
    m = np.isfinite(dev)
    f["device"] = lstsq(cols(sub(prof, m), DEV_TERMS), dev[m])
    f["n_device"] = int(m.sum())
    # how launch and device overlap in a forward: (launch^p + device^p)^(1/p) against launch + sync, over every
    # profile step (the stalls left out); device = the fit above
    mx = np.isfinite(prof["sync_s"]) & np.isfinite(prof["launch_s"]) & (prof["launch_s"] < 0.3)
    f["norm_p"] = fit_overlap_norm(prof["launch_s"][mx], predict(f["device"], cols(sub(prof, mx), DEV_TERMS)),
                                   prof["launch_s"][mx] + prof["sync_s"][mx])
    f["n_norm"] = int(mx.sum())
    # first-seen query length: launch minus the local median (13 host-bound steps around it, same workload)
    ex_new, ex_old = [], []
    for w in np.unique(prof["workload"]):
        mw = (prof["workload"] == w) & hb
        lw, sq = prof["launch_s"][mw], prof["seen_q"][mw]
        for i in range(len(lw)):
            lo, hi = max(0, i - 6), min(len(lw), i + 7)
            if hi - lo < 3:
                continue
            ex = lw[i] - np.median(lw[lo:hi])
            (ex_new if sq[i] == 0 else ex_old).append(ex)
    f["first_seen_q_excess"] = {"n": len(ex_new), "p50_s": float(np.median(ex_new)) if ex_new else math.nan,
                                "p90_s": float(np.percentile(ex_new, 90)) if ex_new else math.nan,
                                "seen_p50_s": float(np.median(ex_old))}
    return f


def score(f: dict, t: dict) -> dict:
    """Held-out error of every term on a table of steps."""
    out = {"pre": err(predict(f["pre"], cols(t, PRE_TERMS)), pre_s(t)),
           "update": err(predict(f["update"], cols(t, UPD_TERMS)), t["update_s"])}
    hb = host_bound(t)
    out["launch"] = err(launch_of(f, t)[hb], t["launch_s"][hb])
    dev = device_target(t)
    m = np.isfinite(dev) & (t["n_prefill"] > 0)
    out["device_mixed"] = err(predict(f["device"], cols(sub(t, m), DEV_TERMS)), dev[m])
    m2 = np.isfinite(dev) & (t["n_prefill"] == 0)
    out["device_decode"] = err(predict(f["device"], cols(sub(t, m2), DEV_TERMS)), dev[m2]) if m2.any() else None
    return out


def launch_of(f: dict, t: dict) -> np.ndarray:
    """The fitted launch of every step of t: the seen-shape median where the step's attention shape (Q, K) ran
    before in its process (seen_qk), else the new-shape median."""
    return np.where(t["seen_qk"] == 1, f["launch_seen_s"], f["launch_s"])


def step_wall(f: dict, t: dict, launch_s) -> np.ndarray:
    dev = predict(f["device"], cols(t, DEV_TERMS))
    p = f["norm_p"]
    fwd = (np.asarray(launch_s, dtype=np.float64) ** p + np.maximum(dev, 0.0) ** p) ** (1.0 / p)
    return predict(f["pre"], cols(t, PRE_TERMS)) + fwd + predict(f["update"], cols(t, UPD_TERMS))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--tag", default=SLUG_DATE, help="<gpu slug>_<date> of the runs")
    ap.add_argument("--yaml", action="store_true", help="print the measured block for simulator/engine/profiles")
    ap.add_argument("--profile", default=",".join(PROFILE), help="comma list of the profile runs' engine names "
                    "(serving_<name>_steps_<tag>.csv.gz) the terms are fitted on")
    ap.add_argument("--validation", default=VALIDATION, help="engine name of the held-out steps scored ('none': "
                    "fit only, e.g. before the validation runs exist)")
    a = ap.parse_args(argv)
    path = lambda eng: os.path.join(a.data, f"serving_{eng}_steps_{a.tag}.csv.gz")  # noqa: E731
    prof_names = [x.strip() for x in a.profile.split(",") if x.strip()]
    prof = pool(*[load_steps(path(e)) for e in prof_names])
    f = fit(prof)
    ms = lambda x: x * 1e3  # noqa: E731
    val = None if a.validation == "none" else load_steps(path(a.validation))
    print(f"profile steps {prof['n']} ({' + '.join(prof_names)}), held-out validation steps "
          f"{val['n'] if val else 0} ({a.validation})\n")
    print("fitted on the profile (host seconds per step):")
    c = f["pre"]
    print(f"  pre    = {ms(c[0]):.3f} ms + {c[1] * 1e6:.1f} us/request + {c[2] * 1e6:.4f} us/key + "
          f"{c[3] * 1e6:.3f} us/query token + {c[4] * 1e6:.1f} us/new request")
    c = f["update"]
    print(f"  update = {ms(c[0]):.3f} ms + {c[1] * 1e6:.2f} us/request + {c[2] * 1e6:.1f} us/finished + "
          f"{c[3] * 1e6:.1f} us/first token")
    print(f"  gap    = {ms(f['gap_s']):.3f} ms (median)")
    q = f["launch_q"]
    print(f"  launch = {ms(q[50]):.1f} ms median on host-bound decode steps of a new attention shape (Q, K); p5 "
          f"{ms(q[5]):.1f}, p25 {ms(q[25]):.1f}, p75 {ms(q[75]):.1f}, p95 {ms(q[95]):.1f} ms (the host's speed); "
          f"{ms(f['launch_seen_s']):.1f} ms (median of {f['n_launch_seen']}) where the shape ran before")
    st = f["stalls"]
    print(f"  stalls: {st['n']} host-bound decode steps launched in > 0.3 s ({', '.join(f'{x:.2f}' for x in st['s'])} s) "
          f"at {', '.join(st['where'])}")
    fs = f["first_seen_q_excess"]
    print(f"  first-seen query length: launch +{ms(fs['p50_s']):.1f} ms (p50), +{ms(fs['p90_s']):.1f} ms (p90) over "
          f"the local median, {fs['n']} steps (seen before: {ms(fs['seen_p50_s']):+.1f} ms)")
    print(f"  forward = (launch^p + device^p)^(1/p), p = {f['norm_p']:.2f} ({f['n_norm']} steps; p = inf would be "
          "max(launch, device))")
    c = f["device"]
    print(f"  device = {ms(c[0]):.2f} ms + {c[1] * 1e6:.3f} us/query token + {c[2] * 1e6:.4f} us/key + "
          f"{c[3] * 1e9 * 1e3:.0f} ms per 1e9 (Q x K)   [{f['n_device']} device-bound steps]")
    if val is None:
        sp = score(f, prof)
        print("  (on the profile itself: pre rel p50 %.1f%%, update %.1f%%, launch %.1f%%, device_mixed %.1f%%)" % (
            sp["pre"]["rel_p50"] * 100, sp["update"]["rel_p50"] * 100, sp["launch"]["rel_p50"] * 100,
            sp["device_mixed"]["rel_p50"] * 100))
        if a.yaml:
            print("\n" + yaml_block(f, {}))
        return 0
    print("\nheld-out error of each term on the validation steps (|error| p50 / p90, signed median bias):")
    sc = score(f, val)
    for k, e in sc.items():
        if e is None:
            continue
        print(f"  {k:<14} n {e['n']:>5}  |err| {e['abs_p50_ms']:7.2f} / {e['abs_p90_ms']:7.2f} ms   "
              f"rel {e['rel_p50']:6.1%} / {e['rel_p90']:6.1%}   bias {e['bias']:+6.1%}")
    sp = score(f, prof)
    print("  (on the profile itself: pre rel p50 %.1f%%, update %.1f%%, launch %.1f%%, device_mixed %.1f%%)" % (
        sp["pre"]["rel_p50"] * 100, sp["update"]["rel_p50"] * 100, sp["launch"]["rel_p50"] * 100,
        sp["device_mixed"]["rel_p50"] * 100))
    print("\nwhole steps (wall + gap) of each validation run: pre + (launch^p + device^p)^(1/p) + update + gap")
    print(f"  {'run':<20} {'steps':>5} {'meas p50':>9} | {'launch=profile median':>22} | {'launch=run median*':>19}")
    meas_all = val["wall_s"] + np.nan_to_num(val["gap_s"], nan=f["gap_s"])
    for w in dict.fromkeys(val["workload"].tolist()):
        m = val["workload"] == w
        t = sub(val, m)
        meas = meas_all[m]
        p1 = step_wall(f, t, launch_of(f, t)) + f["gap_s"]
        dec = (t["n_prefill"] == 0) & (t["launch_s"] < 0.3)
        own = float(np.median(t["launch_s"][dec])) if dec.any() else f["launch_s"]
        p2 = step_wall(f, t, own) + f["gap_s"]
        e1, e2 = err(p1, meas), err(p2, meas)
        print(f"  {w:<20} {int(m.sum()):>5} {ms(np.median(meas)):8.1f}m | p50 {e1['rel_p50']:5.1%} bias "
              f"{e1['bias']:+6.1%} | p50 {e2['rel_p50']:5.1%} bias {e2['bias']:+6.1%}")
    print("  * diagnostic only: the run's own median launch time of its decode steps (its host regime), not a "
          "prediction")
    if a.yaml:
        print("\n" + yaml_block(f, sc))
    return 0


def yaml_block(f: dict, sc: dict) -> str:
    """The measured numbers as the hf-cb profile's `measured:` block (milliseconds / microseconds)."""
    p, u, d, q = f["pre"], f["update"], f["device"], f["launch_q"]
    doc = {"pre_forward": {"base_ms": round(p[0] * 1e3, 3), "per_request_us": round(p[1] * 1e6, 1),
                           "per_key_us": round(p[2] * 1e6, 4), "per_query_token_us": round(p[3] * 1e6, 3),
                           "per_new_request_us": round(p[4] * 1e6, 1)},
           "update": {"base_ms": round(u[0] * 1e3, 3), "per_request_us": round(u[1] * 1e6, 2),
                      "per_finished_us": round(u[2] * 1e6, 1), "per_first_token_us": round(u[3] * 1e6, 1)},
           "gap_ms": round(f["gap_s"] * 1e3, 3),
           "forward_launch_ms": {**{f"p{k}": round(v * 1e3, 1) for k, v in q.items()},
                                 "seen_shape_p50": round(f["launch_seen_s"] * 1e3, 1)},
           "device": {"base_ms": round(d[0] * 1e3, 2), "per_query_token_us": round(d[1] * 1e6, 3),
                      "per_key_us": round(d[2] * 1e6, 4), "per_1e9_qk_ms": round(d[3] * 1e12, 0)},
           "launch_overlap": {"norm_p": f["norm_p"]},
           "stalls_s": f["stalls"]["s"],
           "first_seen_query_len_ms": {"p50": round(f["first_seen_q_excess"]["p50_s"] * 1e3, 1),
                                       "p90": round(f["first_seen_q_excess"]["p90_s"] * 1e3, 1)},
           "held_out_rel_err_p50": {k: round(v["rel_p50"], 3) for k, v in sc.items() if v}}
    return json.dumps(doc, indent=1)


if __name__ == "__main__":
    raise SystemExit(main())
