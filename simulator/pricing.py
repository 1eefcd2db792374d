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

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from hwmodels.opkinds import KINDS
from hwmodels.roofline import price
from simulator import memory
from simulator.combo import Combo
from simulator.layers import body_ops
from simulator.ops import OpBuilder, OpTable, row_tables
from simulator.strategies.base import StepShape


def _at(shape: StepShape, layers) -> StepShape:
    """`shape` run in `layers` layers (the attention kernel's count, from layers.body_ops)."""
    return shape if layers == shape.layers else replace(shape, layers=layers)


def decode_builder(combo: Combo, batch: np.ndarray, kv_len: np.ndarray):
    """The ops of one decode round (drafting + target forward), not yet built, and the round's plan."""
    attended = combo.kv_policy.attended_tokens(combo, kv_len)
    plan = combo.speculation.round_plan(combo, batch, attended)
    n = len(batch)
    q = np.full(n, float(plan.query_rows))
    shape = StepShape(batch=batch, query_rows=q, context=attended, phase="decode", layers=combo.model.layers)
    b = OpBuilder(n)
    if plan.add_draft_ops is not None:
        plan.add_draft_ops(b, combo, shape)
    rows = shape.rows
    body_ops(b, combo, rows, rows, "decode", lambda bb, layers: combo.attention.decode_ops(bb, combo, _at(shape, layers)))
    combo.kv_policy.decode_ops(b, combo, shape)
    return b, plan


def decode_ops(combo: Combo, batch: np.ndarray, kv_len: np.ndarray):
    """Op table of one decode round (drafting + target forward) and the round's plan."""
    b, plan = decode_builder(combo, batch, kv_len)
    return b.build(), plan


def prefill_builder(combo: Combo, prompt: np.ndarray) -> OpBuilder:
    """The ops of the prefill of one prompt per setting (batch 1), not yet built."""
    n = len(prompt)
    ones = np.ones(n)
    shape = StepShape(batch=ones, query_rows=prompt, context=prompt, phase="prefill", layers=combo.model.layers)
    b = OpBuilder(n)
    body_ops(b, combo, prompt, ones, "prefill", lambda bb, layers: combo.attention.prefill_ops(bb, combo, _at(shape, layers)))
    combo.kv_policy.prefill_ops(b, combo, shape)
    combo.speculation.prefill_draft_ops(b, combo, prompt)
    return b


def prefill_ops(combo: Combo, prompt: np.ndarray) -> OpTable:
    """Op table of the prefill of one prompt per setting (batch 1)."""
    return prefill_builder(combo, prompt).build()


#: columns of a priced setting, in table order (kind columns f"{kind}_ms" follow fixed_ms, in KINDS order)
RESULT_COLUMNS = ("step_ms", "tokens_per_round", "tpot_ms", "tokens_per_s", "bytes_per_step", "flops_per_step",
                  "bw_floor_ms", "launches_per_step", "launch_ms", "fixed_ms")
TAIL_COLUMNS = ("ttft_ms", "kv_bytes_per_seq", "kv_bytes", "max_batch", "fits")
KIND_COLUMNS = tuple(f"{k}_ms" for k in KINDS)

#: Op rows priced per roofline call: the roofline makes ~50 passes over its arrays, which run several times
#: faster while they stay in cache than over arrays of millions of rows (measured: 2.1M rows priced whole
#: 1.3-2.8 s, in blocks of 65,536 rows 0.26 s, identical results — every row is priced on its own).
PRICE_ROWS = 1 << 16


@dataclass
class PricedGroup:
    """The Python half of pricing one combo (scalar, or array-valued over a group of tuples, see
    docs/VECTOR_COMBOS.md) over `n` settings: its ops, not yet built or priced.

    `prefill` holds one prefill per distinct (tuple, prompt) pair; `prefill_inv` maps each setting to its
    row there. `tuple_of` gives each setting's tuple (0..n_tuples-1 inside the group)."""

    combo: Combo
    batch: np.ndarray
    decode: OpBuilder
    tokens_per_round: np.ndarray
    prefill: OpBuilder
    prefill_inv: np.ndarray
    kv_bytes_per_seq: np.ndarray
    max_batch: np.ndarray
    tuple_of: np.ndarray
    n_tuples: int


def build_group(combo: Combo, batch, context, output_tokens, tuple_of=None, expand=None) -> PricedGroup:
    """Ops and memory columns of `combo` at (batch, context, output_tokens) (equal-length arrays).

    For a group of tuples priced together: `tuple_of` (int array, one entry per setting) says which tuple of
    the group a setting belongs to and `expand(tuple_index_array)` returns the combo whose array-valued fields
    have one value per entry of that array (the decode pass uses expand(tuple_of), the prefill pass expands
    over its distinct (tuple, prompt) pairs). Without them, `combo` itself prices every setting."""
    batch = np.asarray(batch, dtype=np.float64)
    context = np.asarray(context, dtype=np.float64)
    out_len = np.asarray(output_tokens, dtype=np.float64)
    n = len(batch)
    if tuple_of is None:
        tuple_of = np.zeros(n, dtype=np.int64)
    vc = combo if expand is None else expand(tuple_of)
    kv_mean = context - (out_len + 1.0) / 2.0
    ops, plan = decode_builder(vc, batch, kv_mean)
    tokens_per_round = np.broadcast_to(np.asarray(plan.tokens_per_round, dtype=np.float64), batch.shape)

    prompt = context - out_len
    if expand is None:
        uniq, inv = np.unique(prompt, return_inverse=True)
        pops = prefill_builder(vc, uniq)
    else:  # one prefill per distinct (tuple, prompt) pair: TTFT does not depend on the batch
        order = np.lexsort((prompt, tuple_of))
        t_s, p_s = tuple_of[order], prompt[order]
        new = np.ones(n, dtype=bool)
        new[1:] = (t_s[1:] != t_s[:-1]) | (p_s[1:] != p_s[:-1])
        inv = np.empty(n, dtype=np.int64)
        inv[order] = np.cumsum(new) - 1
        first = order[new]
        pops = prefill_builder(expand(tuple_of[first]), prompt[first])

    cached = vc.kv_policy.cached_tokens(vc, vc.attention.cached_tokens(vc, context))
    kv_seq = memory.kv_bytes_per_sequence(vc, cached)
    mb = memory.max_batch(vc, cached)
    return PricedGroup(combo=combo, batch=batch, decode=ops, tokens_per_round=tokens_per_round, prefill=pops,
                       prefill_inv=inv, kv_bytes_per_seq=kv_seq, max_batch=mb, tuple_of=tuple_of,
                       n_tuples=int(tuple_of.max()) + 1 if n else 0)


def _sums(builders: list[OpBuilder], hw, launch: str, kinds: bool):
    """Per-setting sums over the op rows of `builders` (settings numbered one builder after the other):
    time, launch and fixed time, bytes moved, FLOPs and kernel launches, and (kinds=True) time per op kind
    plus which kinds each setting has. The rows are built and priced in pieces of about PRICE_ROWS rows
    and accumulated in row order (np.add.at), which equals np.bincount over the whole table bit for bit;
    the full table is never held in memory."""
    n = sum(b.n for b in builders)
    acc = {k: np.zeros(n) for k in ("time", "launch", "fixed", "moved", "flops", "count")} if kinds else \
        {"time": np.zeros(n)}
    kind_t = np.zeros((len(KINDS), n)) if kinds else None
    has = np.zeros((len(KINDS), n), dtype=bool) if kinds else None
    for t in row_tables(builders, PRICE_ROWS):
        pr = price(t, hw, launch, detail=kinds)
        s = t.setting
        if not kinds:
            np.add.at(acc["time"], s, pr)
            continue
        np.add.at(acc["time"], s, pr.time_s)
        np.add.at(acc["launch"], s, pr.launch_s)
        np.add.at(acc["fixed"], s, pr.fixed_s)
        np.add.at(acc["moved"], s, (t.bytes_read + t.bytes_written) * t.count)
        np.add.at(acc["flops"], s, t.flops * t.count)
        np.add.at(acc["count"], s, t.count)
        for code in np.unique(t.kind).tolist():
            sel = t.kind == code
            np.add.at(kind_t[code], s[sel], pr.time_s[sel])   # rows of other kinds add 0.0: no change
            has[code, s[sel]] = True
    return acc, kind_t, has


def finish_groups(groups: list[PricedGroup], hw, launch: str) -> tuple[dict, np.ndarray]:
    """Price the ops of groups that share hardware and launch mode together (decode with `launch`, prefill
    eager) and return (result columns over the groups' settings one after the other, kinds_present) where
    kinds_present[t, k] says whether tuple t (numbered across the groups) has an op of kind k: a tuple
    without one gets NaN in that kind's column (as a per-tuple table without the column would)."""
    one = len(groups) == 1
    batch = groups[0].batch if one else np.concatenate([g.batch for g in groups])
    tokens_per_round = groups[0].tokens_per_round if one else np.concatenate([g.tokens_per_round for g in groups])
    tuple_off = np.cumsum([0] + [g.n_tuples for g in groups])
    tuple_of = groups[0].tuple_of if one else np.concatenate([g.tuple_of + o for g, o in zip(groups, tuple_off[:-1])])
    n_tuples = int(tuple_off[-1])

    acc, kind_t, has = _sums([g.decode for g in groups], hw, launch, kinds=True)
    step_s = acc["time"]
    tpot_s = step_s / tokens_per_round
    moved = acc["moved"]
    cols = {
        "step_ms": step_s * 1e3,
        "tokens_per_round": tokens_per_round,
        "tpot_ms": tpot_s * 1e3,
        "tokens_per_s": batch / tpot_s,
        "bytes_per_step": moved,
        "flops_per_step": acc["flops"],
        "bw_floor_ms": moved / hw.hbm_bw_bytes_s * 1e3,
        "launches_per_step": acc["count"],
        "launch_ms": acc["launch"] * 1e3,
        "fixed_ms": acc["fixed"] * 1e3,
    }
    present = np.zeros((n_tuples, len(KINDS)), dtype=bool)
    for code, kind in enumerate(KINDS):
        if has[code].any():
            cols[f"{kind}_ms"] = kind_t[code] * 1e3
            present[:, code] = np.bincount(tuple_of[has[code]], minlength=n_tuples) > 0

    pacc, _, _ = _sums([g.prefill for g in groups], hw, "eager", kinds=False)
    ttft = pacc["time"] * 1e3
    poff = np.cumsum([0] + [g.prefill.n for g in groups[:-1]])
    cols["ttft_ms"] = ttft[groups[0].prefill_inv if one else
                           np.concatenate([g.prefill_inv + o for g, o in zip(groups, poff)])]
    kv_seq = np.concatenate([np.broadcast_to(g.kv_bytes_per_seq, g.batch.shape) for g in groups])
    cols["kv_bytes_per_seq"] = kv_seq
    cols["kv_bytes"] = kv_seq * batch
    mb = np.concatenate([np.broadcast_to(g.max_batch, g.batch.shape) for g in groups])
    cols["max_batch"] = mb
    cols["fits"] = batch <= mb
    return cols, present


def price_combo(combo: Combo, batch, context, output_tokens, breakdown: bool = False):
    """Results for every (batch, context, output_tokens) triple (equal-length arrays) under `combo`.

    Returns (columns dict of arrays, breakdown DataFrame or None). The breakdown has one row per
    (setting, op name) with its time and bytes. A kind column (f"{kind}_ms") is present only when the
    combo has an op of that kind."""
    g = build_group(combo, batch, context, output_tokens)
    cols, present = finish_groups([g], combo.hardware, combo.launch)
    for code, kind in enumerate(KINDS):
        if not present[:, code].any():
            cols.pop(f"{kind}_ms", None)
    bd = breakdown_frame(g.decode.build(), combo.hardware, combo.launch) if breakdown else None
    return cols, bd


def breakdown_frame(ops: OpTable, hw, launch: str) -> pd.DataFrame:
    """One row per (setting, op name): time, compute/memory/launch/fixed parts, bound, launches, bytes, FLOPs."""
    pr = price(ops, hw, launch, detail=True)
    names = np.asarray(ops.names, dtype=object)
    return pd.DataFrame({
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
