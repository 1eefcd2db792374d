"""DeepGEMM's DSA-indexer logits kernels measured by lab/kernels/measure_deepgemm_indexer.py (H100, sgl-deep-gemm
0.2.5): fp8_paged_mqa_logits (decode / verification; kind indexer_dg) and fp8_mqa_logits (prefill; kind
indexer_dg_prefill), each priced with the work decomposition of simulator/kernels/indexer.py. Three steps:

1. first look  (a) the model as it was before any measurement (simulator/strategies/dsa.py at db3789c: kind
               gemm_fp8_block, one paged item = one K step of the block GEMM, one prefill key block = 256 / 192 K steps,
               prefill critical path = mean key blocks per query block over ceil(query blocks / SMs) waves) and (b) the
               structure read again from sgl-deep-gemm 0.2.5 (busiest persistent CTA's key blocks in prefill, the
               schedule-metadata kernel priced as one small launch) at the same borrowed rates (`borrowed_eff`).
               lab/kernels/predict_deepgemm_indexer.py wrote both into deepgemm_indexer_first_look_*.csv, committed
               before the measurement.
2. fit         each kind's terms (compute, memory, fixed_us, cta_fixed_us, iter_us: the per-item / per-key-block time
               on the busiest CTA's chain) by least squares on log time over FIT_DECODE / FIT_PREFILL rows only; the
               paged kind's compute, cta_fixed_us and iter_us are set by its structure (PAGED_HELD), memory and fixed_us
               fitted.
3. held out    every other row, by regime (decode next_n 1 short / long context x small / large batch; verification
               next_n 2; prefill).
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from hwmodels.roofline import price
from hwmodels.spec import Efficiency, HardwareSpec
from simulator.kernels import indexer as X

DATA_DIR = Path(__file__).resolve().parents[2] / "hwmodels" / "calibration" / "data" / "production_kernels"
HEADS, HEAD_DIM = 64, 128              # DeepSeek-V3.2's indexer (index_n_heads, index_head_dim)
PAGED, PREFILL = "indexer_dg", "indexer_dg_prefill"
#: the paged kernel over keys that are not in L2 (hwmodels/roofline.py CHAIN_COLD_HEAD): what a serving step's layers
#: run, each on its own layer's keys; measured with the script's rotation "cold" (one fresh block table per call over a
#: 400 MB pool), kind indexer_dg being rotation "warm8" (8 tables rotated: small shapes' pages stay in the L2)
PAGED_COLD = "indexer_dg_cold"
#: a cold first item's dependent loads that miss the L2 beside its page: the block-table entry (a fresh table per call
#: in the measurement; in a serving step the table was read by the layer before, ~1 GB of weights and keys earlier).
#: The schedule_meta pair and the context length are the same tensors every call of the measurement (L2 hits);
#: ASSUMPTION for the engine: priced the same (a step's schedule metadata is read by every layer's indexer)
COLD_EXTRA_MISSES = 1
#: the rows the fit sees (chosen before the measurement was read); everything else is held out
FIT_DECODE = {"batch": (16,)}
FIT_PREFILL = {"rows": (4096,)}
TERMS = ("compute", "memory", "fixed_us", "cta_fixed_us", "iter_us")
BORROWED_FROM = "gemm_fp8_block"
#: the paged kind's terms that the structure fixes instead of the fit:
#:   compute       none: the kind is in hwmodels.roofline CHAIN_TENSOR (each warpgroup's WGMMA waits on its own page's
#:                 load and is part of the per-item time iter_us), so the body is its bytes alone and the compute
#:                 efficiency prices nothing (written as 1.0, unused)
#:   cta_fixed_us  0: the grid is num_sms persistent CTAs, one wave, so a per-CTA prologue is one per launch and
#:                 indistinguishable from fixed_us (the fit had split that one sum between the two)
#:   iter_us       one item's dependent-load chain (paged_item_latency_us), from the device's measured latencies: the
#:                 fit rows never bind it (their bytes' arrival is longer than one item there)
PAGED_HELD = {"compute": 1.0, "cta_fixed_us": 0.0}
#: the prefill kind's terms that the structure fixes (sm90_fp8_mqa_logits.cuh @ 54e2261); the fit on the 4K-row
#: prefill had driven compute to its upper bound (1.5) and memory to 0.15, i.e. neither a tensor stream nor the HBM
#: bytes set its time, the busiest CTA's chain does:
#:   compute       none: the kind is in hwmodels.roofline CHAIN_TENSOR (each key block's WGMMAs are waited for,
#:                 warpgroup_wait<0>, and reduced before the next block: part of iter_us); written as 1.0, unused
#:   cta_fixed_us  0: num_sms persistent CTAs, one wave (a per-CTA prologue is one per launch: fixed_us)
#:   memory        the paged kind's fitted memory (ASSUMPTION: the same TMA streams of the same fp8 key layout; its
#:                 HBM bytes, the keys once, the queries and the logits, never bind at the fit rows)
#: so fixed_us and iter_us (one 256-key block: 4 WGMMAs [64 x 128] x [128 x 128] + the head reduction) are fitted
PREFILL_HELD = {"compute": 1.0, "cta_fixed_us": 0.0}
#: dependent loads before a CTA's first page reaches its warpgroups (sm90_fp8_paged_mqa_logits.cuh and
#: scheduler/sm90_paged_mqa_logits.cuh @ 54e2261): its schedule_meta pair (written by the metadata kernel just before),
#: then context_lens[q] (refresh_num_kv), then the block-table entries of its split, all L2-resident in a serving step
#: (the metadata and lengths of this step, the same block table for every layer), then the page's TMA load from HBM
ITEM_L2_LOADS, ITEM_DRAM_LOADS = 3, 1


def paged_item_latency_us(hw: HardwareSpec) -> float:
    """One paged item on a CTA's chain: ITEM_L2_LOADS L2 and ITEM_DRAM_LOADS device-memory dependent-load latencies
    (the pointer-chase latencies measured by lab/measure_latency.py, hwmodels/calibration/fitted latency: l2_us,
    dram_us); the item's WGMMA, head reduction and logits store (tens of ns) are left out (ASSUMPTION: they are small
    beside the loads)."""
    e = hw.efficiency
    if not e.l2_latency_s or not e.dram_latency_s:
        raise ValueError("the paged indexer's item latency needs the device's measured l2 / dram latencies")
    return round((ITEM_L2_LOADS * e.l2_latency_s + ITEM_DRAM_LOADS * e.dram_latency_s) * 1e6, 4)


def cold_extra_us(hw: HardwareSpec) -> float:
    """What a cold launch's first item adds beside the stream's late start (CHAIN_COLD_HEAD): COLD_EXTRA_MISSES
    dependent loads from device memory instead of L2 (measured latencies dram_us - l2_us each), once per launch."""
    e = hw.efficiency
    return round(COLD_EXTRA_MISSES * (e.dram_latency_s - e.l2_latency_s) * 1e6, 4)


KEY_BYTES = HEAD_DIM + 4.0             # fp8 values + one fp32 scale per token
#: the paged kernel's math warpgroups per CTA (split_kv 256 / mma_m 64: csrc/jit_kernels/impls/sm90_fp8_mqa_logits.hpp
#: @ 54e2261) and, per extra next_n row, the epilogue instructions of one math warp: the ReLU x weight transform and
#: sum of kNumHeads / 2 = 32 accumulators (max, mul, add: 3 each) plus the two scale multiplies, two xor-shuffle
#: rounds of two values with their adds, the offsets and two stores (~14): ASSUMPTION, counted from the source's
#: loop (sm90_fp8_paged_mqa_logits.cuh @ 54e2261), not from its SASS
PAGED_MATH_WARPGROUPS = 4
EPILOGUE_INSTR_PER_ROW = 3 * (HEADS // 2) + 14
#: warps per SM sub-partition scheduler (16 math warps over the SM's 4 schedulers, one instruction per clock each:
#: H100 whitepaper, 4 warp schedulers per SM)
WARPS_PER_SCHEDULER = PAGED_MATH_WARPGROUPS * 4 // 4


def verify_row_tail_us(hw: HardwareSpec) -> float:
    """What one more next_n row adds to a paged launch, exposed once (the last item of a CTA's chain): on sm_90 the
    kernel takes both rows of next_n = 2 in one atom (the scheduler's kNumNextNAtoms = 1, the metadata's next_n_atom
    = 2: items as for next_n = 1), so each page's WGMMA grows from N = 64 to N = 128 (FP8MMASelector<kNextN x
    kNumHeads>) and the head reduction and logits store run once per row (the kNextN loop), after the WGMMA waits
    (warpgroup_wait<0>), sm90_fp8_paged_mqa_logits.cuh @ 54e2261. The loads of the next pages are already in flight
    (3 KV stages per warpgroup), so along a chain the extra work overlaps the next item's load and only the last
    item's is exposed (the chain's iter_us stays the load latency). Derived, not fitted:
        WGMMA     4 warpgroups x 2 x 64 keys x 64 heads x 128 dims fp8 flops at one SM's dense fp8 peak
                  (datasheet peak / SMs)
        epilogue  EPILOGUE_INSTR_PER_ROW instructions x WARPS_PER_SCHEDULER warps at one per clock (datasheet clock)."""
    mma = PAGED_MATH_WARPGROUPS * 2.0 * 64 * HEADS * HEAD_DIM / (hw.flops_for("fp8") / hw.units)
    epi = EPILOGUE_INSTR_PER_ROW * WARPS_PER_SCHEDULER / hw.clock_hz
    return round((mma + epi) * 1e6, 4)


def latest_csv(kind: str = "") -> Path | None:
    fs = sorted(DATA_DIR.glob(f"deepgemm_indexer_nvidia-*{kind}.csv"))
    fs = [f for f in fs if "first_look" not in f.name]
    return fs[-1] if fs else None


def load(path: str | Path) -> pd.DataFrame:
    return pd.read_csv(path)


def regime(df: pd.DataFrame) -> pd.Series:
    """decode next_n 1: short (<= 8K) / long context x small (<= 4) / large batch; verify next_n 2; prefill."""
    dec = df["part"] == "decode"
    ctx = np.where(df["context"] <= 8192, "short ctx", "long ctx")
    bat = np.where(df["batch"] <= 4, "small batch", "large batch")
    lab = np.where(df["next_n"] == 1, "decode 1-row " + pd.Series(ctx) + ", " + pd.Series(bat), "verify next_n 2")
    return pd.Series(np.where(dec, lab, "prefill many-row"), index=df.index)


def blind4_regime(df: pd.DataFrame) -> np.ndarray:
    """The fourth blind grid's regimes (the indexer's STANDING regimes): verification next_n 2, else batch <= 4 / 5-32 /
    > 32 x context <= 8K / longer (batch > 32 pooled), the rotation in brackets."""
    b, c = df["batch"].to_numpy(), df["context"].to_numpy()
    bat = np.where(b <= 4, "batch 1-4", np.where(b <= 32, "batch 5-32", "batch 33-128"))
    ctx = np.where(b > 32, "", np.where(c <= 8192, ", ctx <= 8K", ", ctx > 8K"))
    lab = np.where(df["next_n"].to_numpy() >= 2, "verify next_n 2", "decode " + bat.astype(object) + ctx.astype(object))
    return lab.astype(object) + " [" + df["rotation"].astype(str).to_numpy().astype(object) + "]"


def fit_mask(df: pd.DataFrame) -> np.ndarray:
    dec = (df["part"] == "decode") & df["batch"].isin(FIT_DECODE["batch"])
    pre = (df["part"] == "prefill") & df["rows"].isin(FIT_PREFILL["rows"])
    return (dec | pre).to_numpy()


def borrowed_eff(hw: HardwareSpec) -> Efficiency:
    """Both indexer kinds at the block-scaled fp8 GEMM's fitted terms (first look (b)): one paged item = one K step,
    one prefill key block (a 128 x 256 x 128 WGMMA) = ITERS_PER_PREFILL_BLOCK K steps of the measured 128 x 192 tile."""
    e = hw.efficiency
    s = BORROWED_FROM
    it = e.iter_s.get(s, 0.0) or 1e-9
    return replace(e, compute={**e.compute, PAGED: e.compute[s], PREFILL: e.compute[s]},
                   memory={**e.memory, PAGED: e.memory[s], PREFILL: e.memory[s]},
                   fixed_s={**e.fixed_s, PAGED: e.fixed_s.get(s, 0.0), PREFILL: e.fixed_s.get(s, 0.0)},
                   cta_slots={**e.cta_slots, PAGED: 1.0, PREFILL: 1.0},
                   cta_fixed_s={**e.cta_fixed_s, PAGED: e.cta_fixed_s.get(s, 0.0), PREFILL: e.cta_fixed_s.get(s, 0.0)},
                   iter_s={**e.iter_s, PAGED: it, PREFILL: it * X.ITERS_PER_PREFILL_BLOCK})


def eff_with(hw: HardwareSpec, kind: str, x, base: Efficiency | None = None) -> Efficiency:
    e = base or borrowed_eff(hw)
    c, mem, fx, cf, it = x
    return replace(e, compute={**e.compute, kind: c}, memory={**e.memory, kind: mem},
                   fixed_s={**e.fixed_s, kind: fx * 1e-6}, cta_fixed_s={**e.cta_fixed_s, kind: cf * 1e-6},
                   cta_slots={**e.cta_slots, kind: 1.0}, iter_s={**e.iter_s, kind: it * 1e-6})


def add_paged(b, B, q, N, count, sms: int, kind: str = PAGED, where=None) -> None:
    """fp8_paged_mqa_logits (simulator/kernels/indexer.py): min(items, SMs) persistent CTAs, ceil(items / SMs) items
    on the busiest one; flops of whole 256-key items; keys read once; fp32 logits written; next_n - 1 exposed
    extra-row tails (sync_steps x sync[kind] = verify_row_tail_us)."""
    R = B * q
    ctas, chain = X.paged_chain(B, N, sms, q)
    keys = np.ceil(np.asarray(N, float) / X.SPLIT_KV) * X.SPLIT_KV
    b.add("indexer_logits", kind, flops=2.0 * R * keys * HEADS * HEAD_DIM + 3.0 * R * keys * HEADS,
          bytes_read=B * N * KEY_BYTES + R * HEADS * (HEAD_DIM + 4.0), bytes_written=R * N * 4.0,
          parallel_units=ctas, serial_iters=chain, sync_steps=np.asarray(q, float) - 1.0, dtype="fp8",
          count=count, where=where)


def add_prefill(b, rows, keys, count, sms: int, kind: str = PREFILL, exact: bool = True, where=None) -> None:
    """fp8_mqa_logits over a ragged chunk (simulator/kernels/indexer.py prefill_schedule): min(query blocks, SMs)
    persistent CTAs, the busiest one's key blocks on the chain, flops of whole key blocks, fp32 logits of the pairs."""
    rows, keys = np.atleast_1d(np.asarray(rows, float)), np.atleast_1d(np.asarray(keys, float))
    if exact:
        sch = np.array([X.prefill_schedule(int(r), int(k), HEADS, sms) for r, k in zip(rows, keys)])
        nq, total, busiest, pairs = sch.T
    else:
        busiest, total = X.prefill_busiest(rows, keys, HEADS, sms)
        nq = np.ceil(rows / (X.BLOCK_QH // HEADS))
        pairs = rows * (keys - rows) + rows * (rows + 1) / 2.0
    bq = X.BLOCK_QH // HEADS
    fb = 2.0 * bq * HEADS * HEAD_DIM * X.BLOCK_KV_PREFILL + 3.0 * bq * HEADS * X.BLOCK_KV_PREFILL
    b.add("indexer_logits", kind, flops=total * fb, bytes_read=keys * KEY_BYTES + rows * HEADS * (HEAD_DIM + 4.0),
          bytes_written=pairs * 4.0, parallel_units=np.minimum(nq, sms), serial_iters=busiest, dtype="fp8",
          count=count, where=where)


def predict_us(df: pd.DataFrame, hw: HardwareSpec, eff: Efficiency) -> np.ndarray:
    """Device microseconds of each measured launch (the graph gap between calls left out, as the timer's calls back
    to back in a graph include only the kernel's device time and the gap the harness measures within it); decode rows
    of rotation "cold" (a column the later grids have) as kind indexer_dg_cold, the others as indexer_dg."""
    from simulator.ops import OpBuilder

    h = hw.with_efficiency(eff)
    out = np.zeros(len(df))
    for i, r in enumerate(df.itertuples()):
        b = OpBuilder(1)
        if r.part == "decode":
            kind = PAGED_COLD if getattr(r, "rotation", "") == "cold" else PAGED
            add_paged(b, float(r.batch), float(r.next_n), float(r.context), 1.0, hw.units, kind)
        else:
            add_prefill(b, r.rows, r.keys, 1.0, hw.units)
        out[i] = (price(b.build(), h, "graph").sum() - h.launch_graph_s) * 1e6
    return out


def predict_meta_us(df: pd.DataFrame, hw: HardwareSpec) -> np.ndarray:
    """The schedule-metadata kernel (get_paged_mqa_logits_metadata: one 32-thread CTA, a prefix sum over the batch and
    a binary search per SM) priced as one elementwise launch of one CTA (its work is a few hundred instructions)."""
    from simulator.ops import OpBuilder

    b = OpBuilder(len(df))
    b.add("indexer_metadata", "elementwise", flops=0.0, bytes_read=4.0 * df["batch"].to_numpy(float),
          bytes_written=8.0 * (hw.units + 1), parallel_units=1.0, dtype="fp32")
    return (price(b.build(), hw, "graph") - hw.launch_graph_s) * 1e6


def fit_kind(df: pd.DataFrame, hw: HardwareSpec, kind: str, base: Efficiency | None = None) -> dict:
    from scipy.optimize import least_squares

    part = "prefill" if kind == PREFILL else "decode"
    sel = fit_mask(df) & (df["part"] == part).to_numpy()
    if kind == PAGED_COLD:   # only the cold-rotation fit rows (COLD_FIT_GLOB; set `fit` where the grid marks one)
        sel = sel & (df.get("rotation", pd.Series("", index=df.index)) == "cold").to_numpy()
        if "set" in df:
            sel = sel & (df["set"] == "fit").to_numpy()
    sub = df[sel].reset_index(drop=True)
    y = np.log(sub["median_us"].to_numpy(float))

    def resid(x):
        return np.log(np.maximum(predict_us(sub, hw, eff_with(hw, kind, x, base)), 1e-3)) - y
    x0, lo, hi = [0.8, 0.8, 3.0, 1.0, 1.0], [0.05, 0.05, 0.0, 0.0, 0.001], [1.5, 1.5, 50.0, 50.0, 20.0]
    if kind in (PAGED, PAGED_COLD):
        held = {**PAGED_HELD, "iter_us": paged_item_latency_us(hw)}
    else:
        held = {**PREFILL_HELD, "memory": float((base or hw.efficiency).memory[PAGED])}
    free = [i for i, t in enumerate(TERMS) if t not in held]

    def full(z):
        x = [held.get(t, 0.0) for t in TERMS]
        for i, v in zip(free, z):
            x[i] = v
        return x
    r = least_squares(lambda z: resid(full(z)), [x0[i] for i in free],
                      bounds=([lo[i] for i in free], [hi[i] for i in free]))
    return {k: round(float(v), 4) for k, v in zip(TERMS, full(r.x))} | {
        "fit_rows": int(sel.sum()), "free_terms": [TERMS[i] for i in free],
        "rms_log_error": round(float(np.sqrt(np.mean(r.fun ** 2))), 4)}


def with_verify_tail(hw: HardwareSpec, base: Efficiency | None = None) -> Efficiency:
    """`base` (default the borrowed terms) with the paged kind's derived extra-row tail as sync[indexer_dg]."""
    e = base or borrowed_eff(hw)
    return replace(e, sync_s={**e.sync_s, PAGED: verify_row_tail_us(hw) * 1e-6})


def fitted_eff(df: pd.DataFrame, hw: HardwareSpec) -> tuple[Efficiency, dict, dict]:
    """Both kinds fitted on their fit rows (each kind's fit sees only its own part's fit rows); the paged kind's
    extra-row tail is derived (verify_row_tail_us) and present while its terms are fitted."""
    base = with_verify_tail(hw)
    fp = fit_kind(df, hw, PAGED, base)
    e = eff_with(hw, PAGED, [fp[k] for k in TERMS], base)
    fq = fit_kind(df, hw, PREFILL, e)
    e = eff_with(hw, PREFILL, [fq[k] for k in TERMS], e)
    return e, fp, fq


def derived_cold_eff(hw: HardwareSpec, base: Efficiency) -> Efficiency:
    """The cold kind before any cold fit row: the warm kind's terms (`base`), fixed + cold_extra_us (the block-table
    miss), the same verification tail; the stream's late start is the roofline's rule (CHAIN_COLD_HEAD)."""
    return replace(base, compute={**base.compute, PAGED_COLD: base.compute[PAGED]},
                   memory={**base.memory, PAGED_COLD: base.memory[PAGED]},
                   fixed_s={**base.fixed_s, PAGED_COLD: base.fixed_s[PAGED] + cold_extra_us(hw) * 1e-6},
                   cta_fixed_s={**base.cta_fixed_s, PAGED_COLD: base.cta_fixed_s.get(PAGED, 0.0)},
                   cta_slots={**base.cta_slots, PAGED_COLD: 1.0},
                   iter_s={**base.iter_s, PAGED_COLD: base.iter_s[PAGED]},
                   sync_s={**base.sync_s, PAGED_COLD: base.sync_s.get(PAGED, 0.0)})


def cold_terms(eff: Efficiency) -> dict:
    """The cold kind's terms of `eff` in the fit's units (TERMS)."""
    k = PAGED_COLD
    return {"compute": eff.compute[k], "memory": eff.memory[k], "fixed_us": round(eff.fixed_s[k] * 1e6, 4),
            "cta_fixed_us": round(eff.cta_fixed_s.get(k, 0.0) * 1e6, 4), "iter_us": round(eff.iter_s[k] * 1e6, 4)}


def fitted_cold(cold_df: pd.DataFrame | None, hw: HardwareSpec, base: Efficiency) -> tuple[Efficiency, dict]:
    """The cold kind: memory and fixed_us fitted on the cold-rotation fit rows (FIT_DECODE batches, rotation cold)
    where `cold_df` has them, iter_us held (paged_item_latency_us), the stream's late start from the roofline; else
    derived_cold_eff (no cold row fitted)."""
    e = derived_cold_eff(hw, base)
    if cold_df is None or not ((cold_df.get("rotation", "") == "cold") & fit_mask(cold_df)).any():
        return e, cold_terms(e) | {"fit_rows": 0, "free_terms": [], "derived": "warm kind's terms + cold_extra_us"}
    fc = fit_kind(cold_df, hw, PAGED_COLD, e)
    return eff_with(hw, PAGED_COLD, [fc[k] for k in TERMS], e), fc


def error_table(pred, meas, reg: pd.Series, fit: np.ndarray) -> pd.DataFrame:
    """Median / p90 / max |error| per regime, fit rows and held-out rows apart."""
    err = (np.asarray(pred) / np.asarray(meas) - 1.0) * 100.0
    rows = []
    for name in sorted(set(reg)):
        for tag, m in (("fit", fit), ("held out", ~fit)):
            sel = (reg == name).to_numpy() & m
            if sel.any():
                a = np.abs(err[sel])
                rows.append({"regime": name, "set": tag, "n": int(sel.sum()), "median_abs_pct": np.median(a),
                             "p90_abs_pct": np.quantile(a, 0.9), "max_abs_pct": a.max(),
                             "mean_signed_pct": err[sel].mean()})
    return pd.DataFrame(rows)


def first_look_frame(meas_csv: str | Path, first_look_csv: str | Path) -> pd.DataFrame:
    """The measured rows joined to the first look's committed prices (pred_main_us = (a) the model before any
    measurement, pred_struct_us = (b) the structure re-read at borrowed rates), on the shape keys."""
    key = ["part", "batch", "context", "next_n", "rows", "keys"]
    return load(meas_csv).merge(load(first_look_csv), on=key, how="inner")


def accuracy(meas_csv: str | Path, first_look_csv: str | Path, hw: HardwareSpec,
             eff: Efficiency | None = None) -> pd.DataFrame:
    """Per regime: first look (a) and (b) on every row (blind: predicted before the measurement), and the fitted
    terms (`eff`, default the device's committed ones) on fit rows and held-out rows apart."""
    d = first_look_frame(meas_csv, first_look_csv)
    reg = regime(d)
    fit = fit_mask(d)
    pred = predict_us(d, hw, eff or hw.efficiency)
    out = []
    for name, col, mask in (("first look (a) db3789c", d["pred_main_us"], np.ones(len(d), bool)),
                            ("first look (b) 0.2.5 structure", d["pred_struct_us"], np.ones(len(d), bool))):
        t = error_table(col, d["median_us"], reg, mask)
        out.append(t.assign(model=name, set="blind (all rows)"))
    t = error_table(pred, d["median_us"], reg, fit)
    out.append(t.assign(model="fitted kinds"))
    cols = ["model", "regime", "set", "n", "median_abs_pct", "p90_abs_pct", "max_abs_pct", "mean_signed_pct"]
    return pd.concat(out, ignore_index=True)[cols]


#: the measurement holding the cold kind's fit rows: the fourth grid (lab/kernels/predict_deepgemm_indexer_blind4.py),
#: whose rows of set `fit` are the FIT_DECODE batch measured with rotation cold (its other rows are blind: no batch 16)
COLD_FIT_GLOB = "deepgemm_indexer_blind4_nvidia-*.csv"


def latest_cold_csv() -> Path | None:
    fs = sorted(DATA_DIR.glob(COLD_FIT_GLOB))
    return fs[-1] if fs else None


def write(data_csv: str | Path, target: str, hw: HardwareSpec, out_dir: Path,
          cold_csv: str | Path | None = None) -> tuple[Path, dict, dict]:
    """Fit both indexer kinds on their fit rows, and the cold kind on the cold-rotation fit rows of `cold_csv`
    (derived from the warm kind where there are none: fitted_cold), and merge their terms into out_dir/<target>.yaml
    (others kept)."""
    from simulator.calibration import checks as C

    df = load(data_csv)
    e, fp, fq = fitted_eff(df, hw)
    _, fc = fitted_cold(load(cold_csv) if cold_csv else None, hw, e)
    K = (PAGED, PAGED_COLD, PREFILL)
    own = {"cta_slots": {PAGED: 1.0, PAGED_COLD: 1.0, PREFILL: 1.0},
           "sync_us": {PAGED: verify_row_tail_us(hw), PAGED_COLD: verify_row_tail_us(hw)},
           **{t: {PAGED: fp[t], PAGED_COLD: fc[t], PREFILL: fq[t]}
              for t in ("iter_us", "fixed_us", "cta_fixed_us", "compute", "memory")},
           "deepgemm_indexer": {
               "source": f"simulator/calibration/fit_deepgemm_indexer.py on {Path(data_csv).name} (lab/kernels/"
                         "measure_deepgemm_indexer.py: deepseek-ai/DeepGEMM @ 54e2261's host code built on the lent "
                         "H100 against its PyTorch, whose paged and metadata kernels are sgl-deep-gemm 0.2.5's): "
                         "fp8_paged_mqa_logits (kind indexer_dg) and fp8_mqa_logits (kind indexer_dg_prefill), priced "
                         "with simulator/kernels/indexer.py",
               "fit_shapes": {"decode": {k: list(v) for k, v in FIT_DECODE.items()},
                              "prefill": {k: list(v) for k, v in FIT_PREFILL.items()}},
               "verify_row_tail_us": verify_row_tail_us(hw),
               "cold_source": (f"{Path(cold_csv).name}: the fit rows measured with rotation cold (kind {PAGED_COLD})"
                               if cold_csv and fc.get("fit_rows") else
                               f"kind {PAGED_COLD} derived: {PAGED}'s terms, fixed + cold_extra_us "
                               f"{cold_extra_us(hw)} (COLD_EXTRA_MISSES x (dram_us - l2_us))"),
               PAGED: fp, PAGED_COLD: fc, PREFILL: fq}}
    p = Path(out_dir) / f"{target}.yaml"
    doc = C.merge_into(p, own, {"cta_slots": K, "sync_us": (PAGED, PAGED_COLD), "iter_us": K, "fixed_us": K,
                                "cta_fixed_us": K, "compute": K, "memory": K, "deepgemm_indexer": None})
    return C.write_checked(p, doc, ""), fp, fq


def write_borrowed(target: str, hw: HardwareSpec, out_dir: Path) -> Path:
    """Until a measurement exists: both kinds carry the block-scaled fp8 GEMM kind's fitted terms (borrowed_eff: one
    paged item = one K step, one prefill key block = ITERS_PER_PREFILL_BLOCK K steps), merged into out_dir/<target>.yaml
    and labelled as borrowed. `write` replaces them with fitted terms once a measurement is committed."""
    from simulator.calibration import checks as C

    e = borrowed_eff(hw)
    terms = {k: {"compute": e.compute[k], "memory": e.memory[k], "fixed_us": round(e.fixed_s[k] * 1e6, 4),
                 "cta_fixed_us": round(e.cta_fixed_s[k] * 1e6, 4), "iter_us": round(e.iter_s[k] * 1e6, 4)}
             for k in (PAGED, PREFILL)}
    own = {"cta_slots": {PAGED: 1.0, PREFILL: 1.0},
           **{t: {k: terms[k][t] for k in (PAGED, PREFILL)} for t in TERMS},
           "deepgemm_indexer": {
               "source": f"NOT MEASURED: the terms of {BORROWED_FROM} (fitted on cuBLASLt's block-scaled fp8 GEMM), "
                         "one paged item = one K step, one prefill key block = 256 / 192 K steps (ASSUMPTION, "
                         "simulator/calibration/fit_deepgemm_indexer.py borrowed_eff); the structure is sgl-deep-gemm "
                         "0.2.5's (simulator/kernels/indexer.py)",
               PAGED: terms[PAGED], PREFILL: terms[PREFILL]}}
    p = Path(out_dir) / f"{target}.yaml"
    doc = C.merge_into(p, own, {"cta_slots": (PAGED, PREFILL), "iter_us": (PAGED, PREFILL),
                                "fixed_us": (PAGED, PREFILL), "cta_fixed_us": (PAGED, PREFILL),
                                "compute": (PAGED, PREFILL), "memory": (PAGED, PREFILL), "deepgemm_indexer": None})
    return C.write_checked(p, doc, "")


if __name__ == "__main__":   # python -m simulator.calibration.fit_deepgemm_indexer [CSV [COLD_CSV] | --borrowed]
    import sys

    from hwmodels.spec import load_hardware

    hw0 = load_hardware("H100-SXM")
    fitted_dir = Path(__file__).resolve().parents[2] / "hwmodels" / "calibration" / "fitted"
    if sys.argv[1:] == ["--borrowed"]:
        print(write_borrowed("H100-SXM", hw0, fitted_dir))
    else:
        csv_path = Path(sys.argv[1]) if len(sys.argv) > 1 else latest_csv()
        cold_path = Path(sys.argv[2]) if len(sys.argv) > 2 else latest_cold_csv()
        path, fp0, fq0 = write(csv_path, "H100-SXM", hw0, fitted_dir, cold_path)
        print(path, fp0, fq0)
