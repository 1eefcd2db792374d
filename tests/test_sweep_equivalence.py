"""The fast sweep (structure groups, scalar-lazy OpBuilder, one table at the end, chunks, Parquet streaming)
gives the same numbers as pricing every tuple on its own the way sparsesim did before (issue 13).

The reference below is the previous implementation, kept verbatim in spirit: an eager OpBuilder that
materializes every column of every op with np.full, `price_combo` per tuple, one DataFrame per tuple with
its labels inserted, and pd.concat. It prices through today's strategies, layers and roofline, so the check
stays meaningful while those change: only the sweep machinery differs between the two sides.
Equality is to rtol 1e-12 on every column (in practice bit for bit) plus identical labels, skips and row order.
"""
from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest

from hwmodels.opkinds import DTYPE_CODE, KIND_CODE, KINDS
from hwmodels.roofline import price
from simulator import memory, planner
from simulator.layers import body_ops
from simulator.ops import OpTable
from simulator.scenario import load_scenario, numeric_grid, scenario_from_dict
from simulator.shipped import shipped_scenarios
from simulator.strategies.base import AXES, StepShape

_FLOAT_COLUMNS = ("flops", "bytes_read", "bytes_written", "parallel_units", "count", "devices", "onchip_bytes",
                  "spill_bytes", "reread_bytes", "working_set", "sync_steps", "serial_iters", "l1_iters",
                  "resident_ctas", "cta_extra", "cluster_ctas", "after_gemm", "lone_tile_bytes", "epilogue_bytes")


class EagerOpBuilder:
    """The previous OpBuilder: every column of every op materialized (np.full for scalars)."""

    def __init__(self, n_settings: int):
        self.n = int(n_settings)
        self._blocks: list[tuple] = []
        self._names: dict[str, int] = {}

    def _col(self, v) -> np.ndarray:
        a = np.asarray(v, dtype=np.float64)
        if a.ndim == 0:
            return np.full(self.n, float(a))
        assert a.shape == (self.n,)
        return a

    def add(self, name, kind, *, flops=0.0, bytes_read=0.0, bytes_written=0.0, parallel_units=0.0, dtype="bf16",
            count=1.0, devices=1.0, where=None, onchip_bytes=0.0, spill_bytes=0.0, reread_bytes=0.0,
            working_set=0.0, sync_steps=0.0, serial_iters=0.0, l1_iters=0.0, resident_ctas=0.0, cta_extra=0.0,
            cluster_ctas=0.0, after_gemm=0.0, lone_tile_bytes=0.0, epilogue_bytes=0.0) -> None:
        nid = self._names.setdefault(name, len(self._names))
        cols = [self._col(c) for c in (flops, bytes_read, bytes_written, parallel_units, count, devices,
                                       onchip_bytes, spill_bytes, reread_bytes, working_set, sync_steps,
                                       serial_iters, l1_iters, resident_ctas, cta_extra, cluster_ctas, after_gemm,
                                       lone_tile_bytes, epilogue_bytes)]
        idx = np.arange(self.n)
        if where is not None:
            mask = np.broadcast_to(np.asarray(where, dtype=bool), (self.n,))
            if not mask.any():
                return
            idx = idx[mask]
            cols = [c[mask] for c in cols]
        self._blocks.append((nid, KIND_CODE[kind], DTYPE_CODE[dtype], cols, idx))

    def build(self) -> OpTable:
        sizes = [len(b[4]) for b in self._blocks]
        cols = {c: np.concatenate([b[3][i] for b in self._blocks]) for i, c in enumerate(_FLOAT_COLUMNS)}
        names = [None] * len(self._names)
        for k, v in self._names.items():
            names[v] = k
        return OpTable(names=names,
                       name_id=np.repeat(np.array([b[0] for b in self._blocks], dtype=np.int32), sizes),
                       kind=np.repeat(np.array([b[1] for b in self._blocks], dtype=np.int8), sizes),
                       dtype=np.repeat(np.array([b[2] for b in self._blocks], dtype=np.int8), sizes),
                       setting=np.concatenate([b[4] for b in self._blocks]), n_settings=self.n, **cols)


def _decode_ops(combo, batch, kv_len):
    attended = combo.kv_policy.attended_tokens(combo, kv_len)
    plan = combo.speculation.round_plan(combo, batch, attended)
    n = len(batch)
    shape = StepShape(batch=batch, query_rows=np.full(n, float(plan.query_rows)), context=attended,
                      phase="decode", layers=combo.model.layers)
    b = EagerOpBuilder(n)
    if plan.add_draft_ops is not None:
        plan.add_draft_ops(b, combo, shape)
    rows = shape.rows
    body_ops(b, combo, rows, rows, "decode", lambda bb, layers: combo.attention.decode_ops(bb, combo, shape))
    combo.kv_policy.decode_ops(b, combo, shape)
    return b.build(), plan


def _prefill_ops(combo, prompt):
    n = len(prompt)
    ones = np.ones(n)
    shape = StepShape(batch=ones, query_rows=prompt, context=prompt, phase="prefill", layers=combo.model.layers)
    b = EagerOpBuilder(n)
    body_ops(b, combo, prompt, ones, "prefill", lambda bb, layers: combo.attention.prefill_ops(bb, combo, shape))
    combo.kv_policy.prefill_ops(b, combo, shape)
    combo.speculation.prefill_draft_ops(b, combo, prompt)
    return b.build()


def _per(ops, v):
    return np.bincount(ops.setting, weights=v, minlength=ops.n_settings)


def reference_price_combo(combo, batch, context, output_tokens):
    batch, context = np.asarray(batch, dtype=np.float64), np.asarray(context, dtype=np.float64)
    out_len = np.asarray(output_tokens, dtype=np.float64)
    hw = combo.hardware
    ops, plan = _decode_ops(combo, batch, context - (out_len + 1.0) / 2.0)
    pr = price(ops, hw, combo.launch, detail=True)
    step_s = _per(ops, pr.time_s)
    tpr = np.broadcast_to(np.asarray(plan.tokens_per_round, dtype=np.float64), batch.shape)
    tpot_s = step_s / tpr
    moved = _per(ops, (ops.bytes_read + ops.bytes_written) * ops.count)
    cols = {"step_ms": step_s * 1e3, "tokens_per_round": tpr, "tpot_ms": tpot_s * 1e3, "tokens_per_s": batch / tpot_s,
            "bytes_per_step": moved, "flops_per_step": _per(ops, ops.flops * ops.count),
            "bw_floor_ms": moved / hw.hbm_bw_bytes_s * 1e3, "launches_per_step": _per(ops, ops.count),
            "launch_ms": _per(ops, pr.launch_s) * 1e3, "fixed_ms": _per(ops, pr.fixed_s) * 1e3}
    for code, kind in enumerate(KINDS):
        sel = ops.kind == code
        if sel.any():
            cols[f"{kind}_ms"] = _per(ops, np.where(sel, pr.time_s, 0.0)) * 1e3
    uniq, inv = np.unique(context - out_len, return_inverse=True)
    pops = _prefill_ops(combo, uniq)
    cols["ttft_ms"] = (_per(pops, price(pops, hw, "eager")) * 1e3)[inv]
    cached = combo.kv_policy.cached_tokens(combo, combo.attention.cached_tokens(combo, context))
    kv_seq = memory.kv_bytes_per_sequence(combo, cached)
    cols["kv_bytes_per_seq"] = kv_seq
    cols["kv_bytes"] = kv_seq * batch
    mb = memory.max_batch(combo, cached)
    cols["max_batch"] = mb
    cols["fits"] = batch <= mb
    return cols


def reference_evaluate(sc):
    """The previous planner.evaluate: one DataFrame per tuple, labels inserted, pd.concat."""
    B, C, L = numeric_grid(sc)
    frames, skipped = [], Counter()
    for combo in planner.combos(sc):
        reason = planner.combo_refusal(combo)
        if reason:
            skipped[reason] += len(B)
            continue
        m = combo.model
        ok = (C <= m.max_context) & (L < C)
        if not ok.all():
            n_long = int((C > m.max_context).sum())
            if n_long:
                skipped[f"context beyond {m.name}'s limit of {m.max_context} tokens"] += n_long
            n_short = int(((C <= m.max_context) & (L >= C)).sum())
            if n_short:
                skipped["output_tokens >= context leaves no prompt"] += n_short
            if not ok.any():
                continue
        over, why = planner.onchip_overflow(combo, B, C)
        if (over & ok).any():
            skipped[why] += int((over & ok).sum())
            ok = ok & ~over
            if not ok.any():
                continue
        b, c, o = B[ok], C[ok], L[ok]
        df = pd.DataFrame(reference_price_combo(combo, b, c, o))
        df.insert(0, "output_tokens", o)
        df.insert(0, "context", c)
        df.insert(0, "batch", b)
        for name, value in reversed(
                [("hardware", combo.hardware.name), ("model", m.name), ("strategy", combo.strategy_label())]
                + [(a, getattr(combo, a).label()) for a in AXES]
                + [("kv_dtype", combo.kv_dtype), ("weight_dtype", combo.weight_dtype), ("tp", combo.tp),
                   ("ep", combo.ep), ("attn_dp", combo.attn_dp), ("parallel", combo.parallel_label()),
                   ("launch", combo.launch)]):
            df.insert(0, name, value)
        frames.append(df)
    results = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if not results.empty:
        results["slo_ok"] = planner.slo_mask(results, sc.slo)
    return results, skipped


def assert_same_table(new: pd.DataFrame, ref: pd.DataFrame) -> None:
    assert set(new.columns) == set(ref.columns), (set(new.columns) ^ set(ref.columns))
    assert len(new) == len(ref)
    for c in ref.columns:
        a, b = new[c], ref[c]
        if b.dtype.kind in "fiub" and a.dtype.kind in "fiub":
            av, bv = a.to_numpy(), b.to_numpy()
            if bv.dtype.kind == "f" or av.dtype.kind == "f":
                np.testing.assert_allclose(av.astype(float), bv.astype(float), rtol=1e-12, atol=0, equal_nan=True,
                                           err_msg=c)
            else:
                assert np.array_equal(av, bv), c
        else:
            assert a.astype(str).tolist() == b.astype(str).tolist(), c


# ---- the sweeps checked -------------------------------------------------------------------------------------
def _bench_docs():
    """Small versions of benchmarks/price_speed.py's three sweeps (same axes, fewer values: the per-tuple reference
    prices each tuple on its own, so the tuple count sets the test's time)."""
    dense = {"name": "eq-dense", "hardware": ["H100-SXM", "H200", "B200"], "model": "Llama-3.1-8B",
             "workload": {"batch": [1], "context": [4096, 16384, 131072], "output_tokens": 256},
             "strategies": {"attention": [{"dense": {"split_tokens": [16, 256, 2099]}}],
                            "kv_dtype": ["bf16", "fp8"], "weight_dtype": ["native", "fp8"],
                            "parallelism": [{"tp": [1, 2, 4, 8]}]},
             "objective": {"slo": {"tpot_ms": 50}}}
    ssv = {"name": "eq-ssv", "hardware": ["H100-SXM"], "model": "Llama-3.1-8B",
           "workload": {"batch": [1, 8], "context": [8192, 131072], "output_tokens": 256},
           "strategies": {"attention": [{"nsa": {"top_n": 16}}],
                          "speculation": [{"eagle3": {"k": [2, 4]}},
                                          {"eagle3": {"tree": {"branch": 3, "depth": 3, "nodes": 12}}}],
                          "verify_kernel": ["per_query", "dense_union", {"ssv": {"group": [4], "mode": ["exact", "approx"]}}],
                          "schedule": ["none", {"refresh_reuse": {"refresh_every": 4}}],
                          "kv_dtype": ["bf16", "fp8"], "parallelism": [{"tp": [1, 2]}]},
           "objective": {"slo": {"tpot_ms": 50}}}
    draft = {"name": "eq-draft", "hardware": ["H100-SXM", "L40S"], "model": "Llama-2-7B",
             "workload": {"batch": [1, 16], "context": [1024, 4096], "output_tokens": 256},
             "strategies": {"attention": [{"dense": {"split_tokens": [64, 256]}}],
                            "speculation": ["none", {"draft_model": {"model": "TinyLlama-1.1B", "k": [1, 4],
                                                                     "acceptance": [0.5, 0.9]}}],
                            "kv_dtype": ["fp8"], "weight_dtype": ["native", "fp8"],
                            "parallelism": [{"tp": [1, 2]}]},
             "objective": {"slo": {"tpot_ms": 50}}}
    mixed = {"name": "eq-mixed", "hardware": ["H200", "SN40L-16"], "model": ["Llama-3.1-8B", "DeepSeek-V3"],
             "workload": {"batch": [1, 64], "context": [8192, 65536], "output_tokens": 128},
             "strategies": {"attention": ["dense", {"dense": {"split_tokens": 128, "gqa_expand": "repeat_kv"}}],
                            "kv_policy": ["full", {"snapstream": {}}], "kv_dtype": ["bf16"],
                            "parallelism": [{"tp": [1, 8, 16], "ep": 1}, {"tp": 8, "ep": 8}, {"tp": 8, "attn_dp": 2}]},
             "runtime": {"launch": "eager", "kernels": "unfused"}, "objective": {"slo": {"ttft_ms": 5000}}}
    return {"bench_dense": dense, "bench_ssv": ssv, "bench_draft": draft, "mixed": mixed}


BENCH = _bench_docs()
SHIPPED = sorted(shipped_scenarios())


def _scenario(name):
    if name in BENCH:
        return scenario_from_dict(BENCH[name], f"<{name}>")
    return load_scenario(name)


@pytest.mark.parametrize("name", SHIPPED + sorted(BENCH))
def test_sweep_equals_per_tuple_reference(name):
    sc = _scenario(name)
    ref, ref_skipped = reference_evaluate(sc)
    new = planner.evaluate(sc)
    assert list(new.skipped.items()) == list(ref_skipped.items())
    assert len(new.results) == len(ref) > 0
    assert_same_table(new.results, ref)
    # small chunks (one group per few tuples, many chunks) give the same table
    small = planner.evaluate(sc, chunk_settings=7)
    assert_same_table(small.results, ref)


def test_groups_really_merge_tuples():
    """The dense benchmark sweep prices its 144 tuples in a handful of structure groups (one per hardware,
    KV and weight dtype: TP and split_tokens are arrays), not 144 op tables."""
    sc = _scenario("bench_dense")
    cache: dict = {}
    keys = {planner._structure_key(c, cache) for c in planner.combos(sc) if planner.combo_refusal(c) is None}
    assert planner.n_tuples(sc) == 3 * 2 * 2 * 4 * 3 == 144
    assert len(keys) == 3 * 2 * 2


def test_breakdown_matches_per_tuple():
    sc = load_scenario("quickstart")
    from simulator.pricing import price_combo

    r = planner.evaluate(sc, breakdown=True)
    parts, off = [], 0
    B, C, L = numeric_grid(sc)
    for combo in planner.combos(sc):
        _, bd = price_combo(combo, B, C, L, breakdown=True)
        bd["setting"] += off
        off += len(B)
        parts.append(bd)
    ref = pd.concat(parts, ignore_index=True)
    assert_same_table(r.breakdown, ref)


def test_parquet_stream_equals_table(tmp_path):
    sc = _scenario("bench_draft")
    full = planner.evaluate(sc)
    streamed = planner.evaluate(sc, parquet=tmp_path / "r.parquet", chunk_settings=50)
    back = pd.read_parquet(tmp_path / "r.parquet")
    assert streamed.results is None and streamed.rows == len(full.results) == len(back)
    # the streamed file carries every kind column (NaN where absent); the table only those that occur
    assert_same_table(back[list(full.results.columns)], full.results)
    ranked = planner.rank(full, sc)
    assert_same_table(streamed.ranked.head(50)[list(ranked.columns)], ranked.head(50).reset_index(drop=True))
    best = planner.best_per_context(full, sc).reset_index(drop=True)
    assert_same_table(streamed.best[list(best.columns)], best)
    assert streamed.n_oom == int((~full.results["fits"]).sum())


def test_vector_combo_hooks():
    """An array-valued combo prices each setting as its scalar tuple does (what a strategy declaring
    array_combo / array_params promises, docs/VECTOR_COMBOS.md)."""
    from simulator.pricing import build_group, finish_groups, price_combo

    sc = _scenario("bench_dense")
    cs = [c for c in planner.combos(sc) if c.hardware.name == "H200" and c.kv_dtype == "fp8"
          and c.weight_dtype == "bf16"]
    assert len(cs) == 4 * 3 and len({c.tp for c in cs}) == 4
    ctx = np.array([4096.0, 131072.0])
    n = len(ctx)
    tuple_of = np.repeat(np.arange(len(cs)), n)
    g = build_group(cs[0], np.ones(len(tuple_of)), np.tile(ctx, len(cs)), np.full(len(tuple_of), 256.0),
                    tuple_of=tuple_of, expand=planner.vector_combo(cs))
    cols, _ = finish_groups([g], cs[0].hardware, cs[0].launch)
    for t, c in enumerate(cs):
        one, _ = price_combo(c, np.ones(n), ctx, np.full(n, 256.0))
        for k in ("step_ms", "ttft_ms", "max_batch", "kv_bytes", "bytes_per_step"):
            np.testing.assert_array_equal(cols[k][t * n:(t + 1) * n], one[k], err_msg=f"{k} {c.tp}")
