"""Price one strategy tuple (Combo) over arrays of numeric settings: TPOT, throughput, TTFT, memory.

Definitions (per setting = one batch size B, context C, output length L):
  context C      the KV length a sequence reaches at the end of generation (prompt P = C - L tokens,
                 then L generated tokens), so C may go up to the model's max_context
  step time      one decode round at the mean KV length over the generation, C - (L + 1) / 2
                 (step time is affine in KV length up to wave rounding, so this is the mean step time);
                 a KV policy (StreamingLLM, SnapKV, ...) may cap the tokens the kernel attends over
  TPOT           step time / tokens per round (1 without speculation)
  tokens/s       B / TPOT: the decode throughput of the whole batch
  TTFT           prefill of one prompt of P tokens at batch 1 (eager launches, no chunking)
  max batch      largest B whose KV caches at C tokens fit beside the weights (simulator.memory)
  bw floor       bytes the step moves / peak HBM bandwidth: the pure bandwidth floor, no launch cost
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from hwmodels.opkinds import KINDS
from hwmodels.roofline import price
from simulator import memory
from simulator.combo import Combo
from simulator.layers import body_ops
from simulator.ops import OpBuilder, OpTable
from simulator.strategies.base import StepShape


def decode_ops(combo: Combo, batch: np.ndarray, kv_len: np.ndarray):
    """Op table of one decode round (drafting + target forward) and the round's plan."""
    attended = combo.kv_policy.attended_tokens(combo, kv_len)
    plan = combo.speculation.round_plan(combo, batch, attended)
    n = len(batch)
    q = np.full(n, float(plan.query_rows))
    shape = StepShape(batch=batch, query_rows=q, context=attended, phase="decode",
                      extra={"layers": combo.model.layers})
    b = OpBuilder(n)
    if plan.add_draft_ops is not None:
        plan.add_draft_ops(b, combo, shape)
    rows = shape.rows
    body_ops(b, combo, rows, rows, "decode", lambda bb, count: combo.attention.decode_ops(bb, combo, shape))
    combo.kv_policy.decode_ops(b, combo, shape)
    return b.build(), plan


def prefill_ops(combo: Combo, prompt: np.ndarray) -> OpTable:
    """Op table of the prefill of one prompt per setting (batch 1)."""
    n = len(prompt)
    ones = np.ones(n)
    shape = StepShape(batch=ones, query_rows=prompt, context=prompt, phase="prefill",
                      extra={"layers": combo.model.layers})
    b = OpBuilder(n)
    body_ops(b, combo, prompt, ones, "prefill", lambda bb, count: combo.attention.prefill_ops(bb, combo, shape))
    combo.kv_policy.prefill_ops(b, combo, shape)
    combo.speculation.prefill_draft_ops(b, combo, prompt)
    return b.build()


def _per_setting(ops: OpTable, values: np.ndarray) -> np.ndarray:
    return np.bincount(ops.setting, weights=values, minlength=ops.n_settings)


def price_combo(combo: Combo, batch, context, output_tokens, breakdown: bool = False):
    """Results for every (batch, context, output_tokens) triple (equal-length arrays) under `combo`.

    Returns (columns dict of arrays, breakdown DataFrame or None). The breakdown has one row per
    (setting, op name) with its time and bytes.
    """
    batch = np.asarray(batch, dtype=np.float64)
    context = np.asarray(context, dtype=np.float64)
    out_len = np.asarray(output_tokens, dtype=np.float64)
    hw = combo.hardware
    kv_mean = context - (out_len + 1.0) / 2.0

    ops, plan = decode_ops(combo, batch, kv_mean)
    pr = price(ops, hw, combo.launch, detail=True)
    step_s = _per_setting(ops, pr.time_s)
    tokens_per_round = np.broadcast_to(np.asarray(plan.tokens_per_round, dtype=np.float64), batch.shape)
    tpot_s = step_s / tokens_per_round
    moved = _per_setting(ops, (ops.bytes_read + ops.bytes_written) * ops.count)
    flops = _per_setting(ops, ops.flops * ops.count)
    cols = {
        "step_ms": step_s * 1e3,
        "tokens_per_round": tokens_per_round,
        "tpot_ms": tpot_s * 1e3,
        "tokens_per_s": batch / tpot_s,
        "bytes_per_step": moved,
        "flops_per_step": flops,
        "bw_floor_ms": moved / hw.hbm_bw_bytes_s * 1e3,
        "launches_per_step": _per_setting(ops, ops.count),
        "launch_ms": _per_setting(ops, pr.launch_s) * 1e3,
        "fixed_ms": _per_setting(ops, pr.fixed_s) * 1e3,
    }
    for code, kind in enumerate(KINDS):
        sel = ops.kind == code
        if sel.any():
            cols[f"{kind}_ms"] = _per_setting(ops, np.where(sel, pr.time_s, 0.0)) * 1e3

    prompt = context - out_len
    uniq, inv = np.unique(prompt, return_inverse=True)
    pops = prefill_ops(combo, uniq)
    cols["ttft_ms"] = (_per_setting(pops, price(pops, hw, "eager")) * 1e3)[inv]

    cached = combo.kv_policy.cached_tokens(combo, combo.attention.cached_tokens(combo, context))
    kv_seq = memory.kv_bytes_per_sequence(combo, cached)
    cols["kv_bytes_per_seq"] = kv_seq
    cols["kv_bytes"] = kv_seq * batch
    mb = memory.max_batch(combo, cached)
    cols["max_batch"] = mb
    cols["fits"] = batch <= mb

    bd = None
    if breakdown:
        names = np.asarray(ops.names, dtype=object)
        bd = pd.DataFrame({
            "setting": ops.setting,
            "op": names[ops.name_id],
            "kind": np.asarray(KINDS, dtype=object)[ops.kind],
            "time_ms": pr.time_s * 1e3,
            "compute_ms": pr.compute_s * 1e3,
            "memory_ms": pr.memory_s * 1e3,
            "launch_ms": pr.launch_s * 1e3,
            "fixed_ms": pr.fixed_s * 1e3,
            "bound": np.where(pr.memory_bound, "memory", "compute"),
            "launches": ops.count,
            "bytes": (ops.bytes_read + ops.bytes_written) * ops.count,
            "flops": ops.flops * ops.count,
        }).groupby(["setting", "op", "kind", "bound"], as_index=False, sort=False).sum()
    return cols, bd
