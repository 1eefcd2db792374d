"""The price of one engine step, for its exact batch composition, from the op/roofline model.

A step is one forward pass over `R` rows (the tokens the scheduler gave every request: 1 per decode,
1 + drafts per speculative round, the chunk of each prefill) with `L` logit rows (1 per prefill chunk,
every row of a decode). Its ops, per device (simulator.layers.body_ops + the strategies' hooks), fall
into groups whose roofline prices add up (every op row is priced on its own):

    body(R)           every op of the forward pass except the attention kernel and the LM head: norms,
                      projections, RoPE + KV write, MLP/MoE, TP all-reduces, embedding — one kernel each
                      over all R rows, so weights are read once per step whatever the mix
    head(L)           final norm, LM head, sampling over the L logit rows
    decode(b, T)      what the b decoding requests add: the attention strategy's decode kernels at
                      their mean attended KV length T (sum of context_before + 1 over the rows / b, capped
                      by the KV policy; or the longest row's with decode_context = "max", for kernels
                      without split-KV), the KV policy's per-step ops, and the drafter of a speculative
                      round (RoundPlan.add_draft_ops) — pricing.decode_ops minus body and head
    chunk(c, o)       a prefill chunk of c tokens after o cached ones: the attention strategy's prefill
                      kernel (StepShape.kv_prefix = o, for an attention that declares prices_kv_prefix; any
                      other is priced as the difference of whole-prompt costs, A(o + c) - A(o); exact at every c,
                      or on the grid an attention asks for, chunk_grid_ratio) and the drafter's own prefill of
                      the c tokens (its attention over the prefix is not counted: drafters are small)
    complete(P)       the KV policy's prefill ops (SnapKV / SnapStream compression) once, when a prompt
                      of P tokens finishes its prefill

so a step costs body(R) + head(L) + decode(b, T) + sum chunk(c_i, o_i) + sum complete(P_j).

Launches: a decode-only step is priced with the combo's launch mode (CUDA graphs by default: engines
replay decode batches as graphs); a step holding any prefill chunk with `mixed_launch` (default eager,
the pricer's TTFT convention: simulator/pricing.py prices prefill with eager launches). Under MLA and
attention-DP the body of a mixed step takes the prefill path for all its rows (the decode rows' absorbed
projections and the DP reshard are not split out): an approximation for mixed steps of those models only.

Speed: body and head are exact tables over every R, L = 1 .. max_num_batched_tokens; decode(b, T) is a
bilinear interpolation on a grid (integers up to `exact_below`, then geometric with ratio `grid_ratio`);
chunk(c, o) is priced at every chunk length up to CHUNK_EXACT_BELOW and at each multiple of CHUNK_ALIGN (16) and the
length after it, linear between (a prefill kernel's cost jumps where its CTAs start another query tile or wave, at
multiples of its tile rows, which fall between such a pair; CHUNK_ALIGN 0 prices every length), and linear in o
between prefixes a factor `prefix_ratio` apart
(cost is linear in o between the kinks of the roofline maximum); for a strategy priced by difference, the
whole-prompt cost A(P) is a table exact at every length up to max_context + max_num_batched_tokens (a
difference of interpolated values would drown in A's own wave-quantization steps); complete(P) is exact at
every prompt length and the drafter's chunk cost exact over c. The chunk surface's columns (one prefix point, every
chunk length) are priced the first time a lookup reads them (ChunkSurface: a run prices only the prefixes its chunks
fall between; the prefill schedules' emulations are shared between columns through an emulation memo,
simulator/kernels/emulation_memo.py), so the set-up of a FlashAttention-3 Llama-3.1-70B TP8 model on the H200 is ~2 s
instead of ~45 s, with the same prices; the aligned lengths make each column ~3x cheaper again. Every interpolated grid is refined
(refine_grid) until midpoints match direct pricing within 1e-4 on probe rows, which places grid points on
both sides of each jump of the cost (split-KV combine kernels, waves). The
interpolation error against direct pricing of the same composition is printed by
benchmarks/des_speed.py and bounded in tests/test_engine_step_cost.py (dense, MLA, fp8, TP: < 1e-3; a
strategy whose kernel shapes jump in both batch and context at once, LServe's page selector, keeps errors
up to ~1e-2 on single steps, where a jump in batch moves with the context between probe rows). Building
the surfaces prices a few ten thousand settings in one vectorized call per group (0.1-2 s); steps are then
table lookups.

Serving-harness terms (serving.step_cost, docs/ENGINE_API.md): `graph_sizes` pads a pure decode step to the
smallest captured CUDA-graph batch (padding rows: one query row attending one token; body, head and attention at
the padded batch). An attention that declares reads_ctx_max (its decode ops read StepShape.ctx_max, the batch's
longest attended context; dense fa2_call: varlen) is priced per step instead of from the (batch, mean) surfaces,
memoized on a logarithmic grid of 1/256 in the mean and the longest context (`spread_decode_s`; a decode run's steps in one
vectorized call); StepShape.mixed tells decode rows that share a step with a prefill chunk. `eager_overlap="step"`
prices a step holding a prefill chunk as max(its kernels back to back on the device, with the graph gap between
them; its kernel launches on the host x launch_eager_s): the host runs ahead through the launch queue (the
roofline's eager rule, "kernel", charges each kernel max(device, launch)).

Memory: kv_cache_blocks() sizes a replica's KV cache like vLLM: (gpu_memory_utilization x HBM - weights -
activation workspace of the largest step) / (block_size x KV bytes per token), per device
(simulator.memory's terms; the workspace scales with max_num_batched_tokens).
"""
from __future__ import annotations

import bisect
import copy
import math
import time
from dataclasses import dataclass, field, replace

import numpy as np

from hwmodels.roofline import price
from simulator import memory
from simulator.combo import Combo
from simulator.engine import async_launch
from simulator.engine.runtime import HostSpeedSeries, HostTerms, LaunchModel
from simulator.engine.sizing import (
    DEFAULT_MEMORY_BUDGET_BYTES,
    PRICE_CHUNK_BYTES,
    PRICING_BYTES_PER_OP_ROW,
    ROW_BYTES_PER_POINT,
    check_surface,
)
from simulator.kernels import emulation_memo
from simulator.layers import body_ops
from simulator.ops import OpBuilder
from simulator.strategies.base import StepShape

HEAD_OPS = ("final_norm", "lm_head", "sampling")
#: chunk lengths priced exactly below this where the attention asks for a chunk grid (StrategyBase.chunk_grid_ratio)
CHUNK_EXACT_BELOW = 64
#: ... and the most chunk-length and cached-prefix points its chunk surface refines to
CHUNK_GRID_C_POINTS, CHUNK_GRID_O_POINTS = 800, 160
#: An attention priced exactly in c (chunk_grid_ratio 0) has its chunk surface's columns priced at every length up to
#: CHUNK_EXACT_BELOW, then at every multiple of CHUNK_ALIGN and the length after it, linear in c between. Why: a prefill
#: kernel's CTAs are its query tiles (FlashAttention-3's 128 rows, FlashInfer's 16 / 64 / 128, the op model's 64 / 128),
#: so its waves, tiles and causal blocks mostly step at multiples of 16 tokens, between a priced pair (16k, 16k + 1);
#: what is left between them is the bytes and FLOPs, linear in c. Where a price jumps inside a segment all the same (a
#: packed query tile of 128 / 3 rows, MLA's heads packed into the tile, a split chosen by the chunk, a key tile's edge
#: at o + c) the segment's slope matches neither unit step beside it, and its lengths are priced too (CHUNK_ALIGN_TOL).
#: Against every length priced (benchmarks/results_chunk_surface_aligned.txt, 2026-11-29): max |error| 0.03 % at
#: 1,500-3,000 (c, o) pairs on each of nine models and kernels; the Mooncake hour's summary identical; its columns 3.4x faster
#: to price (7.7 -> 2.3 s). 16 was chosen after 64 and 128 were run: as exact, but slower (more segments flagged).
#: 0 prices every length.
CHUNK_ALIGN = 16
#: ... a segment is priced at every length unless its slope matches a unit step beside it within this share of the
#: price (_unaligned_jumps)
CHUNK_ALIGN_TOL = 1e-4


def _geom_grid(lo: float, hi: float, exact_below: int, ratio: float) -> np.ndarray:
    """Integers lo..exact_below, then geometric steps of `ratio` up to hi (hi included)."""
    pts = list(range(int(lo), int(min(exact_below, hi)) + 1))
    x = float(pts[-1]) if pts else float(lo)
    while x < hi:
        x = max(x + 1.0, math.floor(x * ratio))
        pts.append(min(x, hi))
    return np.unique(np.asarray(pts, dtype=np.float64))


def _aligned_grid(top: int, exact_below: int, align: int) -> np.ndarray:
    """Lengths 1..exact_below, then every multiple of `align` and the length after it, and `top` (CHUNK_ALIGN)."""
    k = np.arange(align, top + 1, align, dtype=np.float64)
    pts = np.concatenate([np.arange(1, min(exact_below, top) + 1, dtype=np.float64), k, k + 1.0, [float(top)]])
    return np.unique(pts[pts <= top])


def _unaligned_jumps(c_pts: np.ndarray, tab: np.ndarray, tol: float) -> tuple[np.ndarray, np.ndarray]:
    """(row, segment) of the aligned grid's segments that a price may jump inside (CHUNK_ALIGN): a segment between
    priced lengths more than 1 apart whose slope matches neither unit step beside it (16k -> 16k + 1 before it, the
    one after it) within `tol` of its value over its width. tab: (rows, len(c_pts)) prices at c_pts."""
    gaps = np.diff(c_pts)
    seg = np.nonzero(gaps > 1)[0]
    if not len(seg):
        return np.zeros(0, dtype=np.int64), seg
    last = len(c_pts) - 1
    s_seg = (tab[:, seg + 1] - tab[:, seg]) / gaps[seg]
    has_l = (seg >= 1) & (gaps[np.maximum(seg - 1, 0)] == 1)
    has_r = (seg + 2 <= last) & (gaps[np.minimum(seg + 1, len(gaps) - 1)] == 1)
    s_l = np.where(has_l, tab[:, seg] - tab[:, np.maximum(seg - 1, 0)], np.nan)
    s_r = np.where(has_r, tab[:, np.minimum(seg + 2, last)] - tab[:, seg + 1], np.nan)
    dev = np.fmin(np.abs(s_seg - s_l), np.abs(s_seg - s_r)) * gaps[seg]
    rows, cols = np.nonzero(~(dev <= tol * np.abs(tab[:, seg + 1])))
    return rows, seg[cols]


def refine_grid(grid: np.ndarray, f, tol: float = 1e-4, min_width: float = 1e-6, integer: bool = False,
                max_rounds: int = 40, max_points: int | None = None) -> np.ndarray:
    """Insert points into a sorted 1-D grid until linear interpolation between neighbours reproduces f at
    every interval's midpoint within `tol` (relative), or the interval is narrower than `min_width` (1 for
    integer grids). f(points) -> array (n_probe, len(points)) of values on a few probe rows. Finds the jumps
    of a cost (a combine kernel that starts above a split size, a wave that fills up) wherever a strategy
    has them, and brackets them tightly. `max_points`: stop before a round would grow the grid beyond it
    (refine_grid_info says whether the grid converged)."""
    return refine_grid_info(grid, f, tol, min_width, integer, max_rounds, max_points)[0]


def refine_grid_info(grid: np.ndarray, f, tol: float = 1e-4, min_width: float = 1e-6, integer: bool = False,
                     max_rounds: int = 40, max_points: int | None = None) -> tuple[np.ndarray, str]:
    """refine_grid, and how it ended: "ok" (every interval met the tolerance), "rounds" (max_rounds ran out) or
    "points" (the next round would have grown the grid beyond max_points).
    f is called once on the initial grid and then only on new midpoints (the values at interval ends are
    kept), so each point is priced once; the decisions are those of pricing every interval's ends again."""
    g = np.asarray(grid, dtype=np.float64)
    vals = np.atleast_2d(f(g))
    for _ in range(max_rounds):
        lo, hi = g[:-1], g[1:]
        wide = (hi - lo) > (1.0 if integer else min_width)
        if not wide.any():
            return g, "ok"
        idx = np.flatnonzero(wide)
        mid = np.floor((lo[idx] + hi[idx]) / 2) if integer else (lo[idx] + hi[idx]) / 2
        if integer:
            keep = (mid > lo[idx]) & (mid < hi[idx])
            idx, mid = idx[keep], mid[keep]
            if not len(mid):
                return g, "ok"
        m_ = np.atleast_2d(f(mid))
        a, b_ = vals[:, idx], vals[:, idx + 1]
        w = (mid - g[idx]) / (g[idx + 1] - g[idx])
        interp = a + (b_ - a) * w
        bad = (np.abs(interp - m_) > tol * np.maximum(np.abs(m_), 1e-12)).any(axis=0)
        if not bad.any():
            return g, "ok"
        if max_points is not None and len(g) + int(bad.sum()) > max_points:
            return g, "points"
        order = np.argsort(np.concatenate([g, mid[bad]]), kind="stable")
        g = np.concatenate([g, mid[bad]])[order]
        vals = np.concatenate([vals, m_[:, bad]], axis=1)[:, order]
    return g, "rounds"


def kv_cache_blocks(combo: Combo, block_size: int, max_num_batched_tokens: int,
                    gpu_memory_utilization: float | None = memory.MEMORY_UTILIZATION) -> int:
    """KV blocks of `block_size` tokens that fit on each device of the replica beside the weights and
    the activation workspace (simulator.memory.workspace_bytes, scaled from its 8192-token step to
    max_num_batched_tokens). Under attention DP a device holds 1/attn_dp of the sequences, which
    kv_fraction_dev already accounts for, so the count is the replica's. gpu_memory_utilization None: the combo's
    own pool rule (simulator.memory.kv_budget_bytes: SGLang's under kv_budget sglang), vLLM's at 0.9 otherwise."""
    hw = combo.hardware
    if gpu_memory_utilization is None and getattr(combo, "kv_budget", "vllm") == "sglang":
        free = memory.kv_budget_bytes(combo)
    else:
        util = memory.MEMORY_UTILIZATION if gpu_memory_utilization is None else gpu_memory_utilization
        free = (hw.hbm_capacity_bytes * util - memory.weight_bytes(combo)
                - memory.workspace_bytes(combo) * max_num_batched_tokens / memory.PREFILL_CHUNK_TOKENS)
    per_token = float(memory.kv_bytes_per_sequence(combo, np.ones(1))[0])
    if free <= 0 or per_token <= 0:
        return 0
    return int(free // (per_token * block_size))


def _sum_by_setting(ops, times, mask=None) -> np.ndarray:
    w = times if mask is None else np.where(mask, times, 0.0)
    return np.bincount(ops.setting, weights=w, minlength=ops.n_settings)


@dataclass(frozen=True)
class HostTime:
    """Host time a serving runtime adds to each step beyond its device time: the engine runtime profile's terms
    (simulator.engine.runtime) with the serving.step_cost knobs as overrides (docs/ENGINE_API.md). All zero by
    default: the op model alone.

    per_step_s  every step (scheduler, input packing), or pure decode steps only when mixed_s is given
    mixed_s     steps holding a prefill chunk (None: per_step_s)
    per_row_s   per request scheduled in the step
    floor_s     a step's device part never takes less (a host-bound engine)
    terms       HostTerms of the step's content (requests, decode rows, chunks, query tokens, keys, new / finished /
                first-token requests), added to the above
    overlap     share f of the host time the engine hides under the GPU (async scheduling)
    launch      LaunchModel: host time to issue the forward, overlapping the device within the step
    rng         the generator a sampled launch draws from (the engine's, seeded)
    pipeline    async launch (serving.step_cost.async_launch): the host issues step N+1 while step N runs on the
                device; the engine prices a step from its parts (plan_parts / run_parts) through
                simulator.engine.async_launch, with the previous step's state, instead of plan_s / run_s
    speed       HostSpeedSeries: the launch scaled by a measured host-speed series at the step's start
                (serving.step_cost.validation_host_speed_series; validation only, never a prediction)

    A step costs (1 - f) x H + max(max(device, floor), launch + f x H), H = per_step (decode | mixed) + per_row x
    requests + terms(content); with neither overlap nor launch that is max(device, floor) + H. A launch model with
    norm_p replaces the max by (device^p + (launch + f x H)^p)^(1/p) (LaunchModel.forward_s)."""

    per_step_s: float = 0.0
    mixed_s: float | None = None
    per_row_s: float = 0.0
    floor_s: float = 0.0
    terms: HostTerms | None = None
    overlap: float = 0.0
    launch: LaunchModel | None = None
    rng: object = field(default=None, compare=False, repr=False)
    #: the attention shapes (Q, K) the replica's process has run, for a launch with seen_s (LaunchModel): a step
    #: whose shape is in it launches in seen_s. One set per replica group: replicas of a group share it (assumed)
    shapes: set | None = field(default=None, compare=False, repr=False)
    pipeline: bool = False
    speed: HostSpeedSeries | None = field(default=None, compare=False, repr=False)

    def _seen(self, q, keys):
        """Whether the attention shape (q, keys) was run before (a scalar step: and record it); None without the
        rule. Arrays (a planned run of decode steps, keys growing): one flag per step, recorded only once the steps
        ran (note_shapes), since a run can be cut short."""
        if self.shapes is None or self.launch is None or self.launch.seen_s is None:
            return None
        if np.ndim(keys) == 0:
            k = (int(q), int(round(float(keys))))
            seen = k in self.shapes
            self.shapes.add(k)
            return seen
        return np.asarray([(int(q), int(round(float(x)))) in self.shapes for x in keys], dtype=bool)

    def note_shapes(self, q, keys) -> None:
        """Record the attention shapes (q, each of keys) of decode steps that ran."""
        if self.shapes is not None:
            self.shapes.update((int(q), int(round(float(x)))) for x in keys)

    def _lau(self, dt, n: int = 1, seen=None, scale=None):
        """The launch of a step (dt a float) or of n steps (dt an array): 0 without a launch model; drawn, constant
        or the seen-shape level; times the host-speed scale when given."""
        lm = self.launch
        if lm is None:
            return 0.0
        if lm.mode == "sample" and self.rng is not None:
            d = lm.draw(self.rng, n)
            lau = float(d[0]) if isinstance(dt, float) else d
        else:
            lau = lm.constant_s
        if seen is not None:
            if isinstance(dt, float):
                lau = lm.seen_s if seen else lau
            else:
                lau = np.where(seen, lm.seen_s, lau)
        if scale is not None:
            lau = lau * scale
        return lau

    def _combine(self, dt, h, n: int = 1, seen=None, scale=None):
        """(1 - f) h + max(dt, launch + f h) for scalars or arrays of n steps; `seen`: the steps whose attention
        shape ran before launch in launch.seen_s; `scale`: the host-speed factor of each step (HostSpeedSeries)."""
        lm = self.launch
        f = self.overlap
        if lm is None and not f:
            return dt + h
        lau = self._lau(dt, n, seen, scale)
        if lm is not None and lm.norm_p is not None:
            return (1.0 - f) * h + lm.forward_s(dt, lau + f * h)
        if isinstance(dt, float):
            x = lau + f * h
            return (1.0 - f) * h + (dt if dt > x else x)
        return (1.0 - f) * h + np.maximum(dt, lau + f * h)

    def step_s(self, device_s: float, requests: int, mixed: bool) -> float:
        """Seconds of a step whose device part takes device_s, with `requests` scheduled, holding a prefill chunk
        when `mixed` (the per-step and per-request terms only; plan_s adds the content terms)."""
        dt = device_s
        if dt < self.floor_s:
            dt = self.floor_s
        per_step = self.per_step_s if not mixed or self.mixed_s is None else self.mixed_s
        return self._combine(float(dt), per_step + self.per_row_s * requests)

    def plan_s(self, device_s: float, plan, t: float | None = None) -> float:
        """Seconds of one step of `plan` (a StepPlan or Composition) whose device part takes device_s, starting at
        engine time t (read only by a host-speed series)."""
        dt = device_s
        if dt < self.floor_s:
            dt = self.floor_s
        h, seen = self._plan_host(plan)
        scale = self.speed.at(t) if self.speed is not None and t is not None else None
        return self._combine(float(dt), h, seen=seen, scale=scale)

    def plan_parts(self, device_s: float, plan, dev_only_s: float | None = None, launch_s: float = 0.0,
                   t: float | None = None) -> tuple[float, float, float, float]:
        """(H, F, D, L) of one step for the async loop (simulator.engine.async_launch): host work H, the forward
        from an idle device F (device_s with the launch model), the device time with the kernels queued D
        (dev_only_s, default device_s) and the host's launch L (launch_s, the eager kernels' launches, plus the
        launch model's)."""
        h, seen = self._plan_host(plan)
        scale = self.speed.at(t) if self.speed is not None and t is not None else None
        f, d, la = self._parts(float(device_s), float(device_s if dev_only_s is None else dev_only_s), launch_s,
                               seen, scale)
        return h, f, d, la

    def _parts(self, fwd, dev, launch_s, seen=None, scale=None, n: int = 1):
        """(F, D, L) from the device side's forward, device-only time and kernel launches (module: async loop)."""
        fl = self.floor_s
        if fl:
            fwd = np.maximum(fwd, fl) if not isinstance(fwd, float) else max(fwd, fl)
            dev = np.maximum(dev, fl) if not isinstance(dev, float) else max(dev, fl)
        lm = self.launch
        if lm is None:
            return fwd, dev, launch_s
        lau = self._lau(fwd, n, seen, scale)
        return lm.forward_s(fwd, lau), dev, launch_s + lau

    def _plan_host(self, plan):
        """(H, seen) of one step: its host work and whether its attention shape ran before (None: no such rule)."""
        reqs = getattr(plan, "reqs", None)
        chunks = plan.chunks
        mixed = bool(chunks)
        nreq = len(reqs) if reqs is not None else plan.n_decode + len(chunks)
        seen = None
        if self.shapes is not None:
            seen = self._seen(plan.total_tokens, plan.decode_ctx_sum + sum(c + o for c, o in chunks))
        h = (self.per_step_s if not mixed or self.mixed_s is None else self.mixed_s) + self.per_row_s * nreq
        t = self.terms
        if t is not None:
            ptok = 0
            keys = plan.decode_ctx_sum
            for c, o in chunks:
                ptok += c
                keys += c + o
            h += (t.per_step_s + (t.per_mixed_step_s if mixed else 0.0) + t.per_request_s * nreq
                  + t.per_decode_row_s * plan.n_decode + t.per_prefill_chunk_s * len(chunks)
                  + t.per_prefill_token_s * ptok + t.per_query_token_s * plan.total_tokens + t.per_key_s * keys
                  + t.per_new_request_s * getattr(plan, "n_new", 0)
                  + t.per_first_token_s * len(getattr(plan, "completes", ())))
            if t.per_finished_s:
                if reqs is None:
                    fin = getattr(plan, "n_finished", 0)
                else:
                    fin = 0
                    for r, dec in zip(reqs, plan.is_decode):
                        if (dec and r.output - r.out <= 1) or (not dec and r.output == 1 and r.computed >= r.prompt):
                            fin += 1
                h += t.per_finished_s * fin
        return h, seen

    def run_s(self, device_s: np.ndarray, batch: int, rows: int | None = None,
              ctx_sums: np.ndarray | None = None, finished_last: int = 0, t0: float | None = None) -> np.ndarray:
        """step_s for each step of a run of pure-decode steps of `batch` requests (`rows` query rows each, keys
        ctx_sums per step; `finished_last` requests finish in the run's last step; t0: the run's start, read only
        by a host-speed series)."""
        if self.floor_s:
            device_s = np.maximum(device_s, self.floor_s)
        h, keys = self._run_host(len(device_s), batch, rows, ctx_sums, finished_last)
        if self.launch is None and not self.overlap:
            if h or self.terms is not None:
                device_s = device_s + (h + keys)
            return device_s
        seen = None
        if self.shapes is not None and ctx_sums is not None:
            seen = self._seen(batch if rows is None else rows, np.asarray(ctx_sums, dtype=np.float64))
        dev = np.asarray(device_s, dtype=np.float64)
        if self.speed is None or t0 is None or self.launch is None:
            return self._combine(dev, h + keys, len(dev), seen=seen)
        # a host-speed series: each step's scale at its own start, which the scales move (a few fixed-point rounds;
        # a sampled launch draws once)
        lau0 = self._lau(dev, len(dev), seen)
        plain = replace(self, launch=replace(self.launch, mode="constant"), rng=None)
        scale = np.full(len(dev), self.speed.at(t0))
        for _ in range(3):
            dts = plain._combine_lau(dev, h + keys, lau0 * scale)
            starts = t0 + np.concatenate([[0.0], np.cumsum(dts)[:-1]])
            scale = self.speed.at(starts)
        return plain._combine_lau(dev, h + keys, lau0 * scale)

    def _combine_lau(self, dt, h, lau):
        """_combine with the launch given."""
        f = self.overlap
        lm = self.launch
        if lm.norm_p is not None:
            return (1.0 - f) * h + lm.forward_s(dt, lau + f * h)
        return (1.0 - f) * h + np.maximum(dt, lau + f * h)

    def run_parts(self, device_s: np.ndarray, batch: int, rows: int | None = None,
                  ctx_sums: np.ndarray | None = None, finished_last: int = 0, t0: float | None = None):
        """(H, F, D, L) of each step of a run of pure-decode steps for the async loop (plan_parts' meaning; the
        device side of a decode step is its forward and its device time at once, graph or not). A host-speed series
        scales the run's launches at its start t0."""
        dev = np.asarray(device_s, dtype=np.float64)
        h, keys = self._run_host(len(dev), batch, rows, ctx_sums, finished_last)
        seen = None
        if self.shapes is not None and ctx_sums is not None:
            seen = self._seen(batch if rows is None else rows, np.asarray(ctx_sums, dtype=np.float64))
        scale = self.speed.at(t0) if self.speed is not None and t0 is not None else None
        f, d, la = self._parts(dev, dev, 0.0, seen, scale, len(dev))
        return h + keys, f, d, la

    def _run_host(self, n: int, batch: int, rows: int | None, ctx_sums, finished_last: int):
        """(H per step, per-step key / finished terms: 0 or an array) of a run of pure-decode steps."""
        h = self.per_step_s + self.per_row_s * batch
        t = self.terms
        keys = 0.0
        if t is not None:
            rows = batch if rows is None else rows
            h += t.per_step_s + (t.per_request_s + t.per_decode_row_s) * batch + t.per_query_token_s * rows
            if t.per_key_s and ctx_sums is not None:
                keys = t.per_key_s * np.asarray(ctx_sums, dtype=np.float64)
            if finished_last and t.per_finished_s:
                keys = keys + np.zeros(n)
                keys[-1] += t.per_finished_s * finished_last
        return h, keys


NO_HOST_TIME = HostTime()


@dataclass(frozen=True)
class StepRuntime:
    """How an engine's runtime shapes a step's device price (simulator.engine.runtime.GraphRules and MaskAttention,
    resolved for one replica; the capture sizes are the model's graph_sizes):

    piecewise    a step holding a prefill chunk of at most the largest captured size runs CUDA-graph pieces: body
                 and head at the padded token count as a graph, the attention (decode rows and chunks) eagerly
                 between them (vLLM's PIECEWISE mode); larger mixed steps stay eager
    eager_above  a pure decode step of more tokens than the largest captured size runs eagerly
    pad_decode   False: a decode batch whose size was not captured runs eagerly instead of padded
    mask         (per_key_s, per_qk_s): the step's attention is one batch-wide masked attention, per_key x K +
                 per_qk x Q x K (Q = the step's tokens, K = the keys it reads), replacing the per-request attention,
                 KV-policy and drafter ops"""

    piecewise: bool = False
    eager_above: bool = False
    pad_decode: bool = True
    mask: tuple | None = None


@dataclass
class Composition:
    """A step's batch composition, as priced (a StepPlan carries the same fields)."""

    total_tokens: int
    logit_rows: int
    n_decode: int = 0
    decode_ctx_sum: float = 0.0
    chunks: tuple = ()
    completes: tuple = ()
    decode_ctx_max: float = 0.0
    decode_ctx: tuple = ()   # each decode row's attended context (per-row pricing; empty: not given)
    n_new: int = 0            # requests admitted in the step (host terms only)
    n_finished: int = 0       # requests finishing in the step (host terms only; a StepPlan counts them itself)


#: how exact_decode_rows_s combines rows of different contexts in one launch, by op kind (hwmodels.opkinds): kinds of
#: one CTA per row whose time is that CTA's work (the longest row's CTA sets the launch), and kinds of a persistent
#: schedule that deals the whole batch's work items over the SMs (DeepGEMM's paged indexer logits, simulator/kernels/
#: indexer.py paged_chain: the busiest SM's items grow with the sum over the rows, not with the longest row)
ROW_CTA_KINDS = frozenset({"topk_cta"})
PERSISTENT_KINDS = frozenset({"gemm_fp8_block", "indexer_dg", "indexer_dg_cold", "indexer_dg_prefill"})

#: Context points of a decode surface at most from refinement to 1e-4 (dense attention needs at most ~7,000). A cost
#: with more kinks than this, and every per-row cost (decode_cost_per_row: DSA's indexer and top-k change their wave
#: count every few dozen tokens at large batches), gets instead a logarithmic grid of FALLBACK_T_STEPS points per factor e (spacing 0.4 %), refined to
#: FALLBACK_TOL at its larger jumps (the top-k threshold, GVR's dispatch bounds) within FALLBACK_MAX_POINTS points;
#: its error against direct pricing is printed by benchmarks/des_speed.py.
MAX_T_POINTS = 8192
FALLBACK_T_STEPS = 256
FALLBACK_TOL = 1e-3
FALLBACK_MAX_POINTS = 4096

def _log_grid(lo: float, hi: float, steps: int) -> np.ndarray:
    """Integers lo..steps, then points exp(k / steps) up to hi (rounded to integers; hi included)."""
    lo, hi = float(lo), float(hi)
    base = np.arange(lo, min(float(steps), hi) + 1.0)
    if hi > steps:
        x = np.exp(np.arange(np.log(steps), np.log(hi), 1.0 / steps))
        base = np.concatenate([base, np.round(x), [hi]])
    return np.unique(base[(base >= lo) & (base <= hi)])


class ChunkSurface:
    """chunk(c, o) of a prefill chunk of every length c = 0 .. max_num_batched_tokens after a cached prefix o, linear in
    o between the points of `o_grid` (a column's lengths priced on the grid StepCostModel gives it, CHUNK_ALIGN). A
    column (one prefix point, every chunk length) is priced the first time a lookup reads it, with the other column
    that lookup reads in the same pricing call: a run prices only the prefixes its chunks fall between (a Llama-3.1-70B FlashAttention-3 table at TP8 is 8,192 lengths x ~970 prefix points, ~40 s
    to price whole). Lookups are those of the whole table priced at once: a column's values do not depend on when, or
    beside which other columns, it is priced. Pricing more neighbours per call (blocks of 4-16 columns) was tried:
    per column 1.3-2x cheaper where every column is read, but the Mooncake hour (serving_mooncake_h100) gained 8 % and
    serving_snapkv_streaming_h100, whose chunks read every other prefix point, lost 50 % (benchmarks/des_speed.py)."""

    def __init__(self, price_columns, o_grid: np.ndarray):
        self.price_columns = price_columns   # prefixes (k,) -> values (k, max_num_batched_tokens) at c = 1 ..
        self.o_grid = o_grid
        self.o_list = o_grid.tolist()
        self.cols: list = [None] * len(o_grid)
        self.built = 0                        # columns priced
        self.build_s = 0.0

    def _build(self, js: list) -> None:
        t0 = time.perf_counter()
        vals = np.atleast_2d(self.price_columns(np.array([self.o_list[j] for j in js], dtype=np.float64)))
        for j, v in zip(js, vals):
            self.cols[j] = [0.0] + v.tolist()
        self.built += len(js)
        self.build_s += time.perf_counter() - t0

    def column(self, j: int) -> list:
        if self.cols[j] is None:
            self._build([j])
        return self.cols[j]

    def at(self, c: int, o: float) -> float:
        ol = self.o_list
        j = bisect.bisect_right(ol, o) - 1
        if j >= len(ol) - 1:
            j = len(ol) - 2
        cols = self.cols
        if cols[j] is None or cols[j + 1] is None:   # both columns, what they lack, in one call
            self._build([i for i in (j, j + 1) if cols[i] is None])
        a = cols[j][c]
        b = cols[j + 1][c]
        o0 = ol[j]
        return a + (b - a) * (o - o0) / (ol[j + 1] - o0)


class DecodeSurface:
    """decode(b, T) of one launch mode on a (b_grid x t_grid) grid whose rows (one batch size, every context point)
    are priced the first time a lookup reads them: a run prices only the batch sizes it visits. Lookups are those
    of a fully priced surface (bilinear; linear in T at the exact batch sizes up to exact_below): a row's values do
    not depend on when, or with which other rows, it is priced. Rows beyond `max_rows` (the memory budget) are
    dropped oldest first and priced again when read."""

    def __init__(self, price_row, b_grid: np.ndarray, t_grid: np.ndarray, exact_below: int, max_rows: int):
        self.price_row = price_row          # b -> values over t_grid
        self.b_grid, self.t_grid = b_grid, t_grid
        self.b_list, self.t_list = b_grid.tolist(), t_grid.tolist()
        self.exact = {int(b): i for i, b in enumerate(self.b_list) if b <= exact_below}
        self.rows: list = [None] * len(b_grid)
        self.lists: list = [None] * len(b_grid)
        self.max_rows = max(2, int(max_rows))
        self._order: list[int] = []
        self._interp: dict = {}              # batch size off the grid -> its interpolated row (decode runs)
        self.built = 0                        # rows priced (again, after a drop, counted again)
        self.build_s = 0.0

    @property
    def rows_held(self) -> int:
        return len(self._order)

    def row(self, i: int) -> np.ndarray:
        r = self.rows[i]
        if r is None:
            t0 = time.perf_counter()
            r = self.price_row(self.b_list[i])
            if len(self._order) >= self.max_rows:
                old = self._order.pop(0)
                self.rows[old] = self.lists[old] = None
                self._interp.clear()
            self.rows[i] = r
            self.lists[i] = r.tolist()
            self._order.append(i)
            self.built += 1
            self.build_s += time.perf_counter() - t0
        return r

    def row_list(self, i: int) -> list:
        v = self.lists[i]
        if v is None:
            self.row(i)
            v = self.lists[i]
        return v

    def at(self, batch: int, T: float) -> float:
        """decode(batch, T): linear in T on an exact batch row, else bilinear."""
        i = self.exact.get(batch)
        if i is not None:
            return float(np.interp(T, self.t_grid, self.row(i)))
        xs, ys = self.b_list, self.t_list
        x, y = float(batch), float(T)
        i = bisect.bisect_right(xs, x) - 1
        if i < 0:
            i = 0
        elif i >= len(xs) - 1:
            i = len(xs) - 2
        j = bisect.bisect_right(ys, y) - 1
        if j < 0:
            j = 0
        elif j >= len(ys) - 1:
            j = len(ys) - 2
        x0, x1, y0, y1 = xs[i], xs[i + 1], ys[j], ys[j + 1]
        fx = (x - x0) / (x1 - x0)
        fy = (y - y0) / (y1 - y0)
        r0 = self.row_list(i)
        a = r0[j] + (r0[j + 1] - r0[j]) * fy
        if fx == 0.0:   # on a grid row: the next row has weight 0 (a + (b - a) * 0 is a), so it is not priced
            return a
        r1 = self.row_list(i + 1)
        b = r1[j] + (r1[j + 1] - r1[j]) * fy
        return a + (b - a) * fx

    def batch_row(self, batch: int) -> np.ndarray:
        """decode(batch, .) over t_grid: the exact row, or the rows around `batch` interpolated linearly."""
        i = self.exact.get(batch)
        if i is not None:
            return self.row(i)
        row = self._interp.get(batch)
        if row is None:
            bg = self.b_grid
            k = min(max(int(np.searchsorted(bg, batch, side="right")) - 1, 0), len(bg) - 2)
            f = (batch - bg[k]) / (bg[k + 1] - bg[k])
            r0 = self.row(k)
            if f == 0.0:   # on a grid row (see at)
                return r0
            r1 = self.row(k + 1)
            row = r0 + (r1 - r0) * f
            if len(self._interp) > 64:
                self._interp.clear()
            self._interp[batch] = row
        return row

    def along(self, batch: int, T) -> np.ndarray:
        """decode(batch, T) for an array of contexts T (one batch size)."""
        return np.interp(T, self.t_grid, self.batch_row(batch))


def _slice_shape(shape: StepShape, lo: int, hi: int, n: int) -> StepShape:
    """Settings lo..hi of a StepShape of n settings (array fields sliced, scalars kept)."""
    from dataclasses import fields, replace

    kw = {}
    for f in fields(shape):
        v = getattr(shape, f.name)
        if isinstance(v, np.ndarray) and v.ndim == 1 and len(v) == n:
            kw[f.name] = v[lo:hi]
    return replace(shape, **kw)


_BODY_CACHE: dict = {}


def body_tables(combo: Combo, max_tokens: int, phase: str, launch: str) -> tuple[np.ndarray, np.ndarray]:
    """body(R) and head(L) for every R = L = 0 .. max_tokens (head ops split out by name), exact. They depend on
    the deployment (device, model, parallelism, dtypes, kernels), not on the strategies, so the tuples of one
    deployment (a plan's candidates, a sweep of attention strategies) share them: memoized within a process."""
    hw, m = combo.hardware, combo.model
    key = (id(hw), id(m), combo.tp, combo.ep, combo.attn_dp, combo.kv_dtype, combo.weight_dtype, combo.kernels,
           combo.allreduce,
           int(max_tokens), phase, launch)
    hit = _BODY_CACHE.get(key)
    if hit is not None and hit[0] is hw and hit[1] is m:
        return hit[2]
    if len(_BODY_CACHE) > 32:
        _BODY_CACHE.clear()
    rows = np.arange(1, int(max_tokens) + 1, dtype=np.float64)
    b = OpBuilder(len(rows))
    body_ops(b, combo, rows, rows, phase, lambda bb, layers: None)
    ops = b.build()
    t = price(ops, hw, launch)
    head_ids = [i for i, n in enumerate(ops.names) if n in HEAD_OPS]
    is_head = np.isin(ops.name_id, head_ids)
    out = (np.concatenate([[0.0], _sum_by_setting(ops, t, ~is_head)]),
           np.concatenate([[0.0], _sum_by_setting(ops, t, is_head)]))
    _BODY_CACHE[key] = (hw, m, out)
    return out


class StepCostModel:
    """Step prices of one strategy tuple (see module docstring)."""

    def __init__(self, combo: Combo, max_num_batched_tokens: int, max_num_seqs: int, max_context: int | None = None,
                 mixed_launch: str = "eager", exact_below: int = 32, grid_ratio: float = 1.06,
                 prefix_ratio: float = 1.25, graph_sizes=None, eager_overlap: str = "kernel",
                 memory_budget_bytes: float | None = None):
        t_start = time.perf_counter()
        self.combo = combo
        self.max_tokens = int(max_num_batched_tokens)
        self.max_seqs = int(max_num_seqs)
        self.max_context = int(max_context or combo.model.max_context)
        self.decode_launch = combo.launch
        self.mixed_launch = mixed_launch
        self.memory_budget = float(DEFAULT_MEMORY_BUDGET_BYTES if memory_budget_bytes is None else memory_budget_bytes)
        layers = combo.model.layers
        self._layers = layers
        plan = combo.speculation.round_plan(combo, np.ones(1), np.ones(1))
        self.query_rows = int(plan.query_rows)
        self._has_draft = plan.add_draft_ops is not None
        # CUDA-graph batch sizes a pure decode step is padded to (None: no padding)
        self.graph_sizes = sorted({int(x) for x in graph_sizes}) if graph_sizes else None
        self._gs_set = frozenset(self.graph_sizes or ())
        # what the attention declares it reads: the batch's longest context (StepShape.ctx_max: decode attention is
        # then priced per step, memoized below, instead of from the (batch, mean context) surfaces), whether decode
        # rows share their launch with a prefill chunk (StepShape.mixed)
        self.spread = combo.attention.reads_ctx_max
        self.reads_mixed = combo.attention.reads_mixed
        # a decode cost that is not linear in a row's context (decode_cost_per_row: a selection budget clips it, a
        # dispatch switches with it): a batch of mixed contexts is priced per row (row_mean), not at its mean
        self.per_row = (not self.spread) and bool(combo.attention.decode_cost_per_row
                                                  or combo.kv_policy.decode_cost_per_row)
        # per-row tuples: the decode ops whose launch lasts as long as the longest row (the strategies'
        # decode_longest_row_ops name prefixes), priced at least at the longest row alone (row_mean_s)
        self.longest_ops = (tuple(combo.attention.decode_longest_row_ops) + tuple(combo.topk.decode_longest_row_ops)
                            if self.per_row else ())
        self.dec_L = self.mix_L = None   # one surface per longest-row op (name), beside the whole decode term's
        self.long_names: tuple = ()
        big = 1e12
        cap = float(combo.kv_policy.attended_tokens(combo, np.array([big]))[0])
        self.kv_cap = cap if cap < big else None   # a KV policy's budget caps the attended context
        self._memo: dict = {}
        self._n_ops: dict = {}
        # eager steps: "kernel" = the roofline's rule, each kernel costs max(device, host launch); "step" = the host
        # issues ahead of the device through the launch queue, so a step costs max(its kernels' device time, its
        # launches' host time) (serving.step_cost.eager_overlap)
        if eager_overlap not in ("kernel", "step"):
            raise ValueError(f"eager_overlap must be kernel or step, got {eager_overlap!r}")
        self.eager_overlap = eager_overlap
        self._dev = None
        if eager_overlap == "step" and mixed_launch == "eager":
            # the device side of a step whose kernels wait in the launch queue: back to back, each after the
            # device's gap between consecutive launches (the graph gap): the same tables priced as graph launches
            self._dev = StepCostModel(combo, max_num_batched_tokens, max_num_seqs, max_context, "graph", exact_below,
                                      grid_ratio, prefix_ratio, graph_sizes, "kernel", memory_budget_bytes)
            self._launch_eager = float(combo.hardware.launch_eager_s)
            self._kernels = self._eager_kernel_counts()

        # --- exact tables over rows (shared by the tuples of one deployment: body_tables) ------------------
        R = np.arange(1, self.max_tokens + 1, dtype=np.float64)
        self.body_dec, self.head_dec = body_tables(combo, self.max_tokens, "decode", self.decode_launch)
        if mixed_launch == self.decode_launch and not self._phase_matters():
            self.body_mix, self.head_mix = self.body_dec, self.head_dec
        else:
            self.body_mix, self.head_mix = body_tables(combo, self.max_tokens, "prefill", mixed_launch)
        self.draft_chunk = self._draft_prefill(R) if self._has_draft else None

        # --- decode surface over (batch, mean attended context), rows priced when first read -------------
        if self.spread:
            self._init_spread()
        else:
            self._init_surfaces(exact_below, grid_ratio)

        # --- prefill chunk surface over (chunk tokens, cached prefix): exact in c (wave quantization makes
        # the kernel's cost jump where its CTAs fill another wave), interpolated in o (linear between kinks)
        self._init_chunks(R, prefix_ratio)
        self.setup_s = time.perf_counter() - t_start

    def _init_spread(self) -> None:
        """Per-step decode attention (memoized on a 1/256 logarithmic grid of the mean and longest context)."""
        self.b_grid = self.t_grid = self.dec = self.mix = None
        self.t_refine = "spread"

    def _init_surfaces(self, exact_below: int, grid_ratio: float) -> None:
        b_grid = _geom_grid(1, self.max_seqs, exact_below, grid_ratio)
        t_hi = self.max_context + self.query_rows + 1
        t_grid = np.unique(np.concatenate([[1.0], _geom_grid(2, t_hi, exact_below, grid_ratio)[0:]]))
        probe_b = np.unique(np.array([1.0, 8.0, 32.0, 128.0, 512.0, float(self.max_seqs)]).clip(1, self.max_seqs))
        probe_t = np.unique(np.array([64.0, 300.0, 1500.0, 5000.0, 20000.0, 60000.0]).clip(1, t_hi))

        def dec_t(pts):
            bb_, tt_ = np.meshgrid(probe_b, pts, indexing="ij")
            return self.price_decode(bb_.ravel(), tt_.ravel(), self.decode_launch).reshape(bb_.shape)

        def dec_b(pts):
            tt_, bb_ = np.meshgrid(probe_t, pts, indexing="ij")
            return self.price_decode(bb_.ravel(), tt_.ravel(), self.decode_launch).reshape(bb_.shape)

        # a per-row cost (selection budgets, dispatch bounds: kinks that move with the batch) goes straight to the
        # logarithmic grid; any other refines to 1e-4 within MAX_T_POINTS first
        self.t_refine = "per-row"
        if not self.per_row:
            t_grid, self.t_refine = refine_grid_info(t_grid, dec_t, max_points=MAX_T_POINTS)
        if self.t_refine in ("points", "per-row"):
            # more kinks than the budget: a 0.4 % logarithmic grid, refined at FALLBACK_TOL where it misses a jump
            t_grid, st = refine_grid_info(_log_grid(1.0, t_hi, FALLBACK_T_STEPS), dec_t, tol=FALLBACK_TOL,
                                          integer=True, max_points=FALLBACK_MAX_POINTS)
            self.t_refine = f"fallback ({st})"
        self.t_grid = t_grid
        self.b_grid = refine_grid(b_grid, dec_b, integer=True)
        # rows of both surfaces (a Python list and a numpy row each) within what the budget leaves beside one pricing
        # call's op table
        twin = self.mixed_launch == self.decode_launch and not self.reads_mixed
        self.long_names = self._longest_names() if self.longest_ops else ()
        n_surf = (1 if twin else 2) * (1 + len(self.long_names))
        max_rows = check_surface(self.combo, len(self.t_grid), self.memory_budget, n_surf)
        tg = self.t_grid
        if self.long_names:
            # the longest-row ops' own surfaces (one per op name) beside the whole decode term's, all from one pricing
            # call per row
            all_d, long_d = self._pair_rows(self.decode_launch, False)
            self.dec = DecodeSurface(all_d, self.b_grid, tg, exact_below, max_rows)
            self.dec_L = [DecodeSurface(f, self.b_grid, tg, exact_below, max_rows) for f in long_d]
        else:
            self.dec = DecodeSurface(lambda b: self.price_decode(np.full(len(tg), b), tg, self.decode_launch),
                                     self.b_grid, tg, exact_below, max_rows)
        if twin:
            self.mix, self.mix_L = self.dec, self.dec_L
        elif self.long_names:
            all_m, long_m = self._pair_rows(self.mixed_launch, True)
            self.mix = DecodeSurface(all_m, self.b_grid, tg, exact_below, max_rows)
            self.mix_L = [DecodeSurface(f, self.b_grid, tg, exact_below, max_rows) for f in long_m]
        else:
            self.mix = DecodeSurface(lambda b: self.price_decode(np.full(len(tg), b), tg, self.mixed_launch,
                                                                 mixed=True), self.b_grid, tg, exact_below, max_rows)

    def _longest_names(self) -> tuple:
        """Names of the decode ops that match longest_ops, over every context up to the surface's end (an op a dispatch
        adds only at some lengths included) and the smallest and largest batch."""
        ctx = _log_grid(1.0, float(self.t_grid[-1]), 16)
        names = set()
        for bb in (1.0, float(self.max_seqs)):
            ops = self._decode_builder(np.full(len(ctx), bb), ctx).build()
            names.update(str(n) for n in ops.names if str(n).startswith(self.longest_ops))
        return tuple(sorted(names))

    def _pair_rows(self, launch: str, mixed: bool):
        """Row pricers of the whole decode term and of each longest-row op at one batch size over t_grid, sharing one
        pricing call: the first keeps the others' rows until they are read."""
        tg = self.t_grid
        kept: dict = {}

        def whole(b):
            a, lo = self.price_decode_split(np.full(len(tg), b), tg, launch, mixed)
            if len(kept) > 64:
                kept.clear()
            kept[b] = {i: r for i, r in enumerate(lo)}
            return a

        def one(i):
            def longest(b):
                held = kept.get(b)
                if held is None or i not in held:
                    return self.price_decode_split(np.full(len(tg), b), tg, launch, mixed)[1][i]
                r = held.pop(i)
                if not held:
                    kept.pop(b, None)
                return r
            return longest

        return whole, [one(i) for i in range(len(self.long_names))]

    def memory_bytes(self) -> int:
        """Bytes the decode surfaces' priced rows hold now (the tables over rows and chunks are fixed beside them)."""
        if self.dec is None:
            return 0
        n = self.dec.rows_held + (self.mix.rows_held if self.mix is not self.dec else 0)
        if self.dec_L is not None:
            n += sum(s.rows_held for s in self.dec_L)
            if self.mix_L is not self.dec_L:
                n += sum(s.rows_held for s in self.mix_L)
        return n * ROW_BYTES_PER_POINT * len(self.t_grid)

    def surface_stats(self) -> dict:
        """What the decode surfaces hold: grid sizes, rows priced, bytes, seconds spent pricing rows."""
        if self.dec is None:
            return {"mode": "spread", "memo": len(self._memo), "bytes": 0, "rows_built": 0, "build_s": 0.0,
                    "setup_s": self.setup_s, **self.chunk_stats()}
        both = [self.dec] if self.mix is self.dec else [self.dec, self.mix]
        return {"mode": "per_row" if self.per_row else "mean", "b_points": len(self.b_grid),
                "t_points": len(self.t_grid), "t_refine": self.t_refine, "rows_built": sum(s.built for s in both),
                "rows_held": sum(s.rows_held for s in both), "bytes": self.memory_bytes(),
                "budget": self.memory_budget, "build_s": sum(s.build_s for s in both), "setup_s": self.setup_s,
                **self.chunk_stats()}

    def chunk_stats(self) -> dict:
        """The chunk surface's prefix points, how many of its columns were priced, and the seconds that took."""
        ch = self.chunks
        if ch is None:
            return {"chunk_o_points": 0, "chunk_cols_built": 0, "chunk_build_s": 0.0}
        return {"chunk_o_points": len(ch.o_list), "chunk_cols_built": ch.built, "chunk_build_s": ch.build_s}

    def _init_chunks(self, R: np.ndarray, prefix_ratio: float) -> None:
        self.chunk_prefix_native = self.combo.attention.prices_kv_prefix
        self._emulated = emulation_memo.EmulationMemo()
        if self.chunk_prefix_native:
            self.o_grid = np.concatenate([[0.0], _geom_grid(1, self.max_context, 16, prefix_ratio)])
            probe_c = np.unique(np.array([1.0, 64.0, 1000.0, float(self.max_tokens)]).clip(1, self.max_tokens))

            def chunk_o(pts):
                cc_, oo_ = np.meshgrid(probe_c, pts, indexing="ij")
                return self.price_chunk_attention(cc_.ravel(), oo_.ravel()).reshape(cc_.shape)

            ratio = self.combo.attention.chunk_grid_ratio(self.combo)
            # a chunk-grid attention's plan steps with the prefix too often for the refinement to converge: its prefix
            # grid stops growing at CHUNK_GRID_O_POINTS
            self.o_grid = refine_grid(self.o_grid, chunk_o, integer=True,
                                      max_points=CHUNK_GRID_O_POINTS if ratio > 1.0 else None)
            c_pts = R
            if ratio > 1.0:   # the grid refined where the plan jumps (a wave of items more) at a few prefixes
                probe_o = np.unique(np.array([0.0, 1000.0, 20000.0, 100000.0]).clip(0, self.max_context))

                def chunk_c(pts):
                    cc_, oo_ = np.meshgrid(probe_o, pts, indexing="ij")
                    return self.price_chunk_attention(oo_.ravel(), cc_.ravel()).reshape(cc_.shape)

                c_pts = refine_grid(_geom_grid(1, float(R[-1]), CHUNK_EXACT_BELOW, ratio), chunk_c, tol=1e-3,
                                    integer=True, max_points=CHUNK_GRID_C_POINTS)
            elif CHUNK_ALIGN and len(R) > 4 * CHUNK_ALIGN:   # the tile-aligned lengths (CHUNK_ALIGN)
                c_pts = _aligned_grid(int(R[-1]), CHUNK_EXACT_BELOW, CHUNK_ALIGN)
            interp = len(c_pts) != len(R)
            aligned = interp and not ratio > 1.0

            def columns(os_):
                oo, cc = np.meshgrid(os_, c_pts, indexing="ij")
                tab = self.price_chunk_attention(cc.ravel(), oo.ravel()).reshape(oo.shape)
                if not interp:
                    return tab
                full = np.stack([np.interp(R, c_pts, row) for row in tab])   # linear in c between the grid's lengths
                if aligned:   # every length inside a segment the price may jump in, priced (CHUNK_ALIGN_TOL)
                    rows, segs = _unaligned_jumps(c_pts, tab, CHUNK_ALIGN_TOL)
                    if len(rows):
                        lo, hi = c_pts[segs].astype(np.int64) + 1, c_pts[segs + 1].astype(np.int64)
                        n = hi - lo
                        r_in = np.repeat(rows, n)
                        c_in = np.repeat(lo, n) + (np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n))
                        full[r_in, c_in - 1] = self.price_chunk_attention(c_in.astype(np.float64),
                                                                          np.asarray(os_, dtype=np.float64)[r_in])
                return full
            self.chunks = ChunkSurface(columns, self.o_grid)
            self.whole = None
        else:
            # chunk(c, o) = A(o + c) - A(o) of the whole-prompt cost A, A exact at every length (a difference
            # of interpolated values would be swamped by A's own wave-quantization steps when c << o)
            self.whole = self._exact_table(self._attn_prefill, self.max_context + self.max_tokens)
            self.o_grid = self.chunks = None

        # --- KV policy's compression at the end of a prompt: exact at every prompt length ----------------
        probe = self.price_complete(np.array([1000.0, 50000.0]))
        self.complete_tab = self._exact_table(self.price_complete, self.max_context) if probe.any() else None

        # python lists for scalar lookups in the hot path
        self._whole = self.whole.tolist() if self.whole is not None else None
        self._complete = self.complete_tab.tolist() if self.complete_tab is not None else None
        self._body_dec = self.body_dec.tolist()
        self._head_dec = self.head_dec.tolist()
        self._body_mix = self.body_mix.tolist()
        self._head_mix = self.head_mix.tolist()
        self._draft = self.draft_chunk.tolist() if self.draft_chunk is not None else None

    # ---- building blocks (vectorized, exact) -----------------------------------------------------------
    def _phase_matters(self) -> bool:
        c = self.combo
        return bool(c.model.mla) or c.attn_dp > 1

    def _draft_prefill(self, rows: np.ndarray) -> np.ndarray:
        b = OpBuilder(len(rows))
        self.combo.speculation.prefill_draft_ops(b, self.combo, rows)
        ops = b.build()
        return np.concatenate([[0.0], _sum_by_setting(ops, price(ops, self.combo.hardware, self.mixed_launch))])

    def _decode_builder(self, batch, context, mixed: bool = False, ctx_max=None) -> OpBuilder:
        """The ops of decode(b, T) (attention strategy + KV policy + drafter, pricing.decode_ops without body and
        head) for arrays of batch sizes and mean attended KV lengths, not yet built."""
        c = self.combo
        batch = np.asarray(batch, dtype=np.float64)
        attended = c.kv_policy.attended_tokens(c, np.asarray(context, dtype=np.float64))
        plan = c.speculation.round_plan(c, batch, attended)
        n = len(batch)
        if ctx_max is not None:
            ctx_max = np.maximum(c.kv_policy.attended_tokens(c, np.asarray(ctx_max, dtype=np.float64)), attended)
        shape = StepShape(batch=batch, query_rows=np.full(n, float(plan.query_rows)), context=attended,
                          phase="decode", layers=self._layers, ctx_max=ctx_max, mixed=bool(mixed))
        b = OpBuilder(n)
        if plan.add_draft_ops is not None:
            plan.add_draft_ops(b, c, shape)
        c.attention.decode_ops(b, c, shape)
        c.kv_policy.decode_ops(b, c, shape)
        return b

    def _chunk_settings(self, mixed: bool) -> int:
        """Settings one pricing call of decode ops takes at a time (PRICE_CHUNK_BYTES of op rows)."""
        n = self._n_ops.get(mixed)
        if n is None:
            b = self._decode_builder(np.array([8.0]), np.array([4096.0]), mixed)
            n = self._n_ops[mixed] = max(1, len(b._blocks))
        return max(256, int(PRICE_CHUNK_BYTES // (PRICING_BYTES_PER_OP_ROW * n)))

    def price_decode(self, batch, context, launch: str, mixed: bool = False, ctx_max=None) -> np.ndarray:
        """decode(b, T): attention strategy + KV policy + drafter ops of b decoding rows at mean attended
        KV length T (pricing.decode_ops without body and head), exact. `mixed`: the rows share their step with a
        prefill chunk (StepShape.mixed); `ctx_max`: the longest row's context (StepShape.ctx_max; default: every
        row at T). Priced in pieces of _chunk_settings settings (each setting is priced on its own)."""
        batch = np.asarray(batch, dtype=np.float64)
        context = np.asarray(context, dtype=np.float64)
        n = len(batch)
        step = self._chunk_settings(mixed)
        if n > step:
            cm = None if ctx_max is None else np.asarray(ctx_max, dtype=np.float64)
            return np.concatenate([self.price_decode(batch[i:i + step], context[i:i + step], launch, mixed,
                                                     None if cm is None else cm[i:i + step])
                                   for i in range(0, n, step)])
        b = self._decode_builder(batch, context, mixed, ctx_max)
        if not b._blocks:
            return np.zeros(n)
        ops = b.build()
        return _sum_by_setting(ops, self._price_rows(ops, launch))

    def _price_rows(self, ops, launch: str) -> np.ndarray:
        """Each op row's price; a tuple with a drafter prices its distinct rows once (OpTable.distinct_rows: the
        drafter's forward repeats at every context of a decode grid; SpecAttn's A100 scenario prices 11.6 M decode op
        rows of which 1.0 M differ, set-up 14.4 -> ~9 s), the same floats either way."""
        if not self._has_draft:
            return price(ops, self.combo.hardware, launch)
        uniq, inv = ops.distinct_rows()
        return price(uniq, self.combo.hardware, launch)[inv]

    def price_decode_split(self, batch, context, launch: str, mixed: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """price_decode, and what each longest-row op (long_names: one row each) takes of it, from one pricing
        call."""
        batch = np.asarray(batch, dtype=np.float64)
        context = np.asarray(context, dtype=np.float64)
        n = len(batch)
        step = self._chunk_settings(mixed)
        if n > step:
            parts = [self.price_decode_split(batch[i:i + step], context[i:i + step], launch, mixed)
                     for i in range(0, n, step)]
            return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts], axis=1)
        names = self.long_names
        b = self._decode_builder(batch, context, mixed)
        if not b._blocks:
            return np.zeros(n), np.zeros((len(names), n))
        ops = b.build()
        t = self._price_rows(ops, launch)
        op_names = [str(nm) for nm in ops.names]
        parts = np.zeros((len(names), n))
        for i, nm in enumerate(names):
            if nm in op_names:
                parts[i] = _sum_by_setting(ops, t, ops.name_id == op_names.index(nm))
        return _sum_by_setting(ops, t), parts

    def price_decode_part(self, batch, context, prefixes: tuple) -> np.ndarray:
        """The time of the decode ops whose names start with one of `prefixes` at arrays of batch sizes and mean
        attended contexts (graph launches of a pure decode step): the trace-driven part a per-step trace replay
        scales (simulator/engine/trace_replay.py)."""
        b = self._decode_builder(np.asarray(batch, dtype=np.float64), np.asarray(context, dtype=np.float64))
        if not b._blocks:
            return np.zeros(len(np.atleast_1d(batch)))
        ops = b.build()
        hit = np.array([str(nm).startswith(tuple(prefixes)) for nm in ops.names], dtype=bool)
        return _sum_by_setting(ops, price(ops, self.combo.hardware, self.decode_launch), hit[ops.name_id])

    def exact_decode_rows_s(self, batch: int, contexts, mixed: bool = False, kind_rules: bool = True) -> float:
        """The decode term of a batch of `batch` rows whose attended contexts are `contexts` (one per row), priced
        exactly as ONE launch per op over rows of different contexts: each op's additive quantities (flops, bytes,
        CTAs, re-reads and working set, spills) are the sums over the rows, each row contributing what it does in
        a batch of `batch` rows all at its context (c_j / batch of that setting's values for the c_j rows at
        context N_j: per-row terms add up exactly, per-launch terms, the drafter's and indexer's weights, stay
        once); its per-CTA chain (serial_iters), synchronized phases, count and on-chip footprint are the longest
        row's (the launch lasts as long as its slowest CTA). A uniform batch gives price_decode itself. The
        reference the engine's per-row pricing (row_mean) is checked against (benchmarks/des_speed.py); slow.
        Two kinds combine otherwise (kind_rules; False: the rule above for every op): a one-CTA-per-row kind
        (ROW_CTA_KINDS: its CTA's work is its chain) takes every CTA's work at the longest participating row's, a
        persistent schedule (PERSISTENT_KINDS) adds its chain up over the rows and keeps the largest CTA count."""
        ctx = np.asarray(contexts, dtype=np.float64)
        if self.kv_cap is not None:
            ctx = np.minimum(ctx, self.kv_cap)
        vals, counts = np.unique(ctx, return_counts=True)
        G = len(vals)
        launch = self.mixed_launch if mixed else self.decode_launch
        cmax = np.full(G, float(ctx.max())) if self.spread else None
        bld = self._decode_builder(np.full(G, float(batch)), vals, mixed, cmax)
        if not bld._blocks:
            return 0.0
        w = counts / float(batch)
        agg = OpBuilder(1)
        names = {v: k for k, v in bld._names.items()}
        from hwmodels.opkinds import DTYPES, KINDS

        for nid, kind, dtype, req, opt, idx in bld._blocks:
            sel = np.arange(G) if idx is None else idx
            ww = w[sel]
            kname = KINDS[kind]
            # one CTA per row whose chain is its work (kind topk_cta, priced by its per-CTA rate): every CTA's work is
            # the longest participating row's (its setting's per-row values x the participating rows)
            per_cta = kind_rules and kname in ROW_CTA_KINDS
            top = int(np.argmax(vals[sel]))

            def col(v, how):
                a = np.broadcast_to(np.asarray(v, dtype=np.float64), (len(sel),))
                if how == "max":
                    return float(a.max())
                if per_cta and how == "work":
                    return float(a[top] * ww.sum())
                return float((a * ww).sum())

            # a persistent schedule (PERSISTENT_KINDS) deals the batch's total work over at most one CTA per SM:
            # its chain (serial_iters) adds up over the rows, its CTAs are the largest setting's
            shared = kind_rules and kname in PERSISTENT_KINDS
            fl, br, bw, pu, cnt, dev = req
            kw = dict(flops=col(fl, "work"), bytes_read=col(br, "work"), bytes_written=col(bw, "work"),
                      parallel_units=col(pu, "max" if shared else "sum"), count=col(cnt, "max"),
                      devices=col(dev, "max"))
            if opt is not None:
                ob, sb, rr, ws, ss, si, l1, rc, ce, cc, ag, lt, eb = opt
                kw.update(onchip_bytes=col(ob, "max"), spill_bytes=col(sb, "work"), reread_bytes=col(rr, "work"),
                          working_set=col(ws, "work"), sync_steps=col(ss, "max"),
                          serial_iters=col(si, "sum" if shared else "max"), l1_iters=col(l1, "sum" if shared else "max"),
                          resident_ctas=col(rc, "max"), cta_extra=col(ce, "max"), cluster_ctas=col(cc, "max"),
                          after_gemm=col(ag, "max"), lone_tile_bytes=col(lt, "max"), epilogue_bytes=col(eb, "max"))
            agg.add(names[nid], kname, dtype=DTYPES[dtype], **kw)
        ops = agg.build()
        return float(price(ops, self.combo.hardware, launch).sum())

    def _attn_prefill(self, prompt, prefix=None) -> np.ndarray:
        c = self.combo
        prompt = np.asarray(prompt, dtype=np.float64)
        n = len(prompt)
        if prefix is not None:
            prefix = np.asarray(prefix, dtype=np.float64)
            shape = StepShape(batch=np.ones(n), query_rows=prompt, context=prompt + prefix, phase="prefill",
                              layers=self._layers, kv_prefix=prefix)
        else:
            shape = StepShape(batch=np.ones(n), query_rows=prompt, context=prompt, phase="prefill", layers=self._layers)
        return self._price_ops(c.attention.prefill_ops, shape)

    def _price_ops(self, add_ops, shape: StepShape) -> np.ndarray:
        """Seconds per setting of the ops `add_ops(builder, combo, shape)` adds (0 where it adds none), priced in
        pieces of at most PRICE_CHUNK_BYTES of op rows (each setting is priced on its own)."""
        c = self.combo
        n = len(shape.context)
        key = ("ops", add_ops)
        n_ops = self._n_ops.get(key)
        if n_ops is None:
            one = _slice_shape(shape, 0, 1, n)
            b1 = OpBuilder(1)
            add_ops(b1, c, one)
            n_ops = self._n_ops[key] = max(1, len(b1._blocks))
        step = max(256, int(PRICE_CHUNK_BYTES // (PRICING_BYTES_PER_OP_ROW * n_ops)))
        out = []
        for lo in range(0, n, step):
            part = shape if (lo == 0 and n <= step) else _slice_shape(shape, lo, min(lo + step, n), n)
            m = len(part.context)
            b = OpBuilder(m)
            add_ops(b, c, part)
            if not b._blocks:
                out.append(np.zeros(m))
                continue
            ops = b.build()
            out.append(_sum_by_setting(ops, price(ops, c.hardware, self.mixed_launch)))
        return out[0] if len(out) == 1 else np.concatenate(out)

    @staticmethod
    def _exact_table(fn, hi: int, block: int = 200_000) -> np.ndarray:
        """[0, fn(1), fn(2), ..., fn(hi)] priced in blocks (one vectorized call per block)."""
        out = [np.zeros(1)]
        for lo in range(1, int(hi) + 1, block):
            out.append(fn(np.arange(lo, min(lo + block, int(hi) + 1), dtype=np.float64)))
        return np.concatenate(out)

    def price_chunk_attention(self, chunk, prefix) -> np.ndarray:
        """chunk(c, o) without the drafter: the attention strategy's prefill ops for c new tokens after o
        cached ones, exact (native kv_prefix support, else A(o + c) - A(o), at least 0)."""
        chunk = np.asarray(chunk, dtype=np.float64)
        prefix = np.asarray(prefix, dtype=np.float64)
        with emulation_memo.active(self._emulated):   # the prefill schedules' emulations, shared between columns
            if self.chunk_prefix_native:
                return self._attn_prefill(chunk, prefix)
            full = self._attn_prefill(prefix + chunk)
            pre = np.where(prefix > 0, self._attn_prefill(np.maximum(prefix, 1.0)), 0.0)
        return np.maximum(full - pre, 0.0)

    def price_complete(self, prompt) -> np.ndarray:
        """complete(P): the KV policy's prefill ops for a prompt of P tokens, exact."""
        c = self.combo
        prompt = np.asarray(prompt, dtype=np.float64)
        n = len(prompt)
        shape = StepShape(batch=np.ones(n), query_rows=prompt, context=prompt, phase="prefill", layers=self._layers)
        return self._price_ops(c.kv_policy.prefill_ops, shape)

    # ---- lookups (hot path) ------------------------------------------------------------------------------
    # memo grid of the per-step decode pricing (spread mode): contexts on a logarithmic grid of 1/256 (0.4 %)
    MEMO_STEPS = 256.0

    def _memo_key(self, b: int, mean_ctx: float, max_ctx: float, mixed: bool):
        q = self.MEMO_STEPS
        km = int(round(math.log(max(mean_ctx, 1.0)) * q))
        kx = max(int(round(math.log(max(max_ctx, 1.0)) * q)), km)
        return (int(b), km, kx, bool(mixed))

    def _memo_price(self, keys: list) -> list:
        """Prices of memo keys, pricing the missing ones in one vectorized call per launch mode."""
        memo = self._memo
        missing = [k for k in dict.fromkeys(keys) if k not in memo]
        for mixed in (False, True):
            ks = [k for k in missing if k[3] == mixed]
            if not ks:
                continue
            a = np.asarray([(k[0], k[1], k[2]) for k in ks], dtype=np.float64)
            v = self.price_decode(a[:, 0], np.exp(a[:, 1] / self.MEMO_STEPS),
                                  self.mixed_launch if mixed else self.decode_launch, mixed=mixed,
                                  ctx_max=np.exp(a[:, 2] / self.MEMO_STEPS))
            for k, x in zip(ks, v.tolist()):
                memo[k] = x
        return [memo[k] for k in keys]

    def spread_decode_s(self, batch: int, mean_ctx: float, max_ctx: float, mixed: bool = False) -> float:
        """Decode attention of `batch` rows whose mean / longest attended context is mean_ctx / max_ctx (spread
        mode: priced per step, memoized)."""
        k = self._memo_key(batch, mean_ctx, max_ctx, mixed)
        v = self._memo.get(k)
        if v is None:
            v = self._memo_price([k])[0]
        return v

    def graph_batch(self, batch: int) -> int:
        """Rows a pure decode step of `batch` requests runs as: the smallest captured CUDA-graph size >= batch
        (serving.step_cost.graph_sizes), or batch itself (no sizes, or beyond the largest)."""
        gs = self.graph_sizes
        if not gs or batch > gs[-1]:
            return batch
        return gs[bisect.bisect_left(gs, batch)]

    def decode_s(self, batch: int, mean_ctx: float, mixed: bool = False, max_ctx: float | None = None) -> float:
        """decode(batch, T) at the mean attended context T (the surfaces; spread mode: per step, memoized)."""
        if self.spread:
            return self.spread_decode_s(batch, mean_ctx, mean_ctx if max_ctx is None else max_ctx, mixed)
        return (self.mix if mixed else self.dec).at(batch, mean_ctx)

    def row_mean_s(self, batch: int, contexts, mixed: bool = False) -> float:
        """The decode term of `batch` rows whose attended contexts are `contexts` (one per row), priced per row: the
        mean over the rows of decode(batch, context_i) from the surface (each row as part of a batch of `batch` rows
        at its own context; exact_decode_rows_s is the reference). For tuples whose decode cost is not linear in a
        row's context (per_row); for every other tuple it equals decode_s at the mean context up to the roofline's
        rounding. Each op the strategies name in decode_longest_row_ops (its launch lasts as long as its longest row:
        one CTA per row, or only long rows run it) costs at least its longest row alone: max(mean over the rows of
        op(batch, context_i), max over the rows of op(1, context_i)), from its own surface (dec_L / mix_L)."""
        ctx = np.asarray(contexts, dtype=np.float64)
        if self.kv_cap is not None:
            ctx = np.minimum(ctx, self.kv_cap)
        v = float((self.mix if mixed else self.dec).along(batch, ctx).sum()) / batch
        if self.dec_L is not None:   # each longest-row op: at least its longest row alone
            for L in (self.mix_L if mixed else self.dec_L):
                mean_l = float(L.along(batch, ctx).sum()) / batch
                alone = float(L.along(1, ctx).max())
                if alone > mean_l:
                    v += alone - mean_l
        return v

    def plan_rows(self, plan) -> np.ndarray:
        """Attended contexts of a plan's decode rows (Composition.decode_ctx, else context_before + 1 of each decode
        row of a StepPlan), capped by the KV policy's budget."""
        rows = getattr(plan, "decode_ctx", None)
        if rows is not None and len(rows):
            ctx = np.asarray(rows, dtype=np.float64)
        else:
            ctx = np.fromiter((c + 1 for c, d in zip(plan.context_before, plan.is_decode) if d), dtype=np.float64)
        if self.kv_cap is not None:
            ctx = np.minimum(ctx, self.kv_cap)
        return ctx

    def chunk_s(self, c: int, o: int) -> float:
        if self.chunks is None:
            w = self._whole
            t = w[o + c] - w[o]
            t = t if t > 0.0 else 0.0
        else:
            t = self.chunks.at(c, o)
        if self._draft is not None:
            t += self._draft[c]
        return t

    def complete_s(self, prompt: int) -> float:
        if self._complete is None:
            return 0.0
        return self._complete[prompt]

    #: the KV length a decode batch is priced at: "mean" (the rows' mean attended length: split-KV kernels
    #: balance work over the batch) or "max" (the longest row's: a kernel without split-KV, e.g. FlashAttention-2
    #: varlen once batch x heads fills the SMs, lasts as long as its longest request)
    decode_context = "mean"
    #: the runtime's host time per step (HostTime; none by default)
    host = NO_HOST_TIME
    #: how the engine's runtime shapes a step's device price (StepRuntime; None: the op model's launch modes alone)
    rt = None

    def for_serving(self, decode_context: str = "mean", host: HostTime = NO_HOST_TIME,
                    rt: "StepRuntime | None" = None) -> "StepCostModel":
        """This model looked up at another decode context, with a runtime's host time and step rules: the same
        tables (a shallow copy when anything differs; the memoized model itself is never changed)."""
        if decode_context == self.decode_context and host == self.host and rt == self.rt and host.rng is None:
            return self
        m = copy.copy(self)
        m.decode_context = decode_context
        m.host = host
        m.rt = rt
        return m

    # ---- what a step costs (the engine's one entry point: a step plan in, seconds out) ---------------------------
    def engine_step_s(self, plan, device_s: float | None = None, t: float | None = None) -> float:
        """Seconds one step of `plan` takes in the engine: its device time (step_s, or `device_s` when another
        pricer priced the device side: per-request adaptation) plus the runtime's host time (HostTime.plan_s: the
        runtime profile's content terms, overlap and launch)."""
        return self.host.plan_s(self.step_s(plan) if device_s is None else device_s, plan, t)

    def engine_run_s(self, batch: int, rows: int, ctx_sums: np.ndarray, ctx_max: np.ndarray | None = None,
                     finished_last: int = 0, ctx_rows: np.ndarray | None = None, t0: float | None = None) -> np.ndarray:
        """engine_step_s of each step of a run of pure-decode steps (decode_run_s plus the host time;
        finished_last: requests finishing in the run's last step, for a host term per finished request; ctx_rows:
        each row's context per step, read by per-row pricing; t0: the run's start, read by a host-speed series)."""
        return self.host.run_s(self.decode_run_s(batch, rows, ctx_sums, ctx_max, ctx_rows), batch, rows, ctx_sums,
                               finished_last, t0)

    # ---- async launch (serving.step_cost.async_launch; simulator.engine.async_launch) --------------------------
    def _eager_step_parts(self, plan) -> tuple[float, float]:
        """(device time of the kernels back to back, host time to launch them one by one) of a step priced with
        eager_overlap = step: the kernel count of its body, decode rows, prefill chunks and completions x the runtime's
        eager launch cost."""
        k = self._kernels
        n = k["body"] + (k["decode"] if plan.n_decode else 0.0) + k["chunk"] * len(plan.chunks)
        if self.complete_tab is not None:
            n += k["complete"] * len(plan.completes)
        return self._dev.step_s(plan), n * self._launch_eager

    def step_parts(self, plan) -> tuple[float, float, float]:
        """(F, D, L) of a step's device side: its forward from an idle device (step_s), its device time with the
        kernels already queued, and the host's time to launch them. Only a step priced with eager_overlap = step
        separates them (D = the kernels back to back, L = kernels x launch_eager_s); any other step's price is its
        device time and its launch is in the host terms (graph replays), or not separable (eager_overlap = kernel:
        the kernel-wise max(device, launch) is kept as the device time, nothing of it moves under the previous
        step)."""
        if self.rt is not None:
            t = self._rt_step_s(plan)
            if t is not None:
                return t, t, 0.0
        if plan.chunks and self._dev is not None:
            dev, la = self._eager_step_parts(plan)
            return (dev if dev > la else la), dev, la
        t = self.step_s(plan)
        return t, t, 0.0

    def engine_step_async(self, plan, rho: float, device_s: float | None = None,
                          t: float | None = None) -> tuple[float, float, float]:
        """(seconds from the previous step's device end to this step's, carried state, lead) of one step in the async
        loop, given the state the previous step left (rho; 0 after an idle engine): simulator.engine.async_launch.step
        over HostTime.plan_parts. lead = H + L: the previous step's ids reach the host
        async_launch.emit_delay(rho, H, L) = max(0, rho + lead) after its device end."""
        if device_s is None:
            fwd, dev, la = self.step_parts(plan)
        else:
            fwd = dev = device_s
            la = 0.0
        h, f, d, la = self.host.plan_parts(fwd, plan, dev, la, t)
        i, r = async_launch.step(rho, h, f, d, la)
        return i, r, h + la

    def engine_run_async(self, batch: int, rows: int, ctx_sums: np.ndarray, rho: float,
                         ctx_max: np.ndarray | None = None, finished_last: int = 0,
                         ctx_rows: np.ndarray | None = None, t0: float | None = None):
        """(device end to device end, carried state after each step, lead H + L of each step) of a run of
        pure-decode steps in the async loop (engine_step_async's meaning, arrays)."""
        dev = self.decode_run_s(batch, rows, ctx_sums, ctx_max, ctx_rows)
        h, f, d, la = self.host.run_parts(dev, batch, rows, ctx_sums, finished_last, t0)
        i, r = async_launch.run(rho, h, f, d, la)
        return i, r, np.broadcast_to(np.asarray(h + la, dtype=np.float64), (len(dev),))

    # ---- the runtime's step rules (StepRuntime) ---------------------------------------------------------------
    def _rt_step_s(self, plan):
        """The device seconds of a step under the runtime's rules, or None where the op model's own path applies."""
        rt = self.rt
        R, L = plan.total_tokens, plan.logit_rows
        if rt.mask is not None:   # one attention over the batch: per_key x K + per_qk x Q x K
            keys = plan.decode_ctx_sum
            for c, o in plan.chunks:
                keys += c + o
            body = (self._body_mix[R] + self._head_mix[L]) if plan.chunks else (self._body_dec[R] + self._head_dec[L])
            return body + keys * (rt.mask[0] + rt.mask[1] * R)
        gs = self.graph_sizes
        if plan.chunks:
            if rt.piecewise and gs and R <= gs[-1]:
                # piecewise CUDA graphs: body and head replay the graph of the padded token count, the attention
                # (decode rows beside the chunk, the chunks) runs eagerly between the pieces
                Rp = gs[bisect.bisect_left(gs, R)]
                t = self._body_dec[Rp] + self._head_dec[L]
                if plan.n_decode:
                    t += self._plan_decode_s(plan, True)
                return self.add_prefill_s(t, plan)
            return None
        b = plan.n_decode
        if b and self._rt_eager_decode(b, R):
            t = self._body_mix[R] + self._head_mix[L]
            return t + self._plan_decode_s(plan, True)
        return None

    def _plan_decode_s(self, plan, mixed: bool) -> float:
        """The decode term of a plan's decode rows at their own batch size: per row (row_mean_s) for per-row
        tuples read at the mean context, else decode_s at the mean (or longest) context."""
        if self.per_row and self.decode_context == "mean":
            return self.row_mean_s(plan.n_decode, self.plan_rows(plan), mixed)
        return self.decode_s(plan.n_decode, self._dec_ctx(plan), mixed, self._dec_max(plan))

    def _rt_eager_decode(self, batch: int, rows: int) -> bool:
        """Whether a pure decode step of `batch` requests (`rows` tokens) runs without a CUDA graph: more tokens
        than the largest captured size (eager_above), or an uncaptured size without padding."""
        rt, gs = self.rt, self.graph_sizes
        if not gs:
            return False
        if rt.eager_above and batch > gs[-1]:
            return True
        return not rt.pad_decode and batch not in self._gs_set

    def _rt_run_s(self, batch: int, rows: int, ctx_sums: np.ndarray, ctx_max, ctx_rows=None):
        """decode_run_s under the runtime's rules, or None where the op model's own path applies."""
        rt = self.rt
        if rt.mask is not None:
            ctx = np.asarray(ctx_sums, dtype=np.float64)
            return self._body_dec[rows] + self._head_dec[rows] + ctx * (rt.mask[0] + rt.mask[1] * rows)
        if not self._rt_eager_decode(batch, rows):
            return None
        ctx = np.asarray(ctx_sums, dtype=np.float64)
        if self.spread:
            mx = ctx / batch if ctx_max is None else np.asarray(ctx_max, dtype=np.float64)
            means = (mx if self.decode_context == "max" else ctx / batch).tolist()
            keys = [self._memo_key(batch, m, x, True) for m, x in zip(means, mx.tolist())]
            dec = np.asarray(self._memo_price(keys))
        elif self.per_row and self.decode_context == "mean":
            dec = self._rows_run_s(self.mix, batch, ctx_rows, 0)
        else:
            T = np.asarray(ctx_max, dtype=np.float64) if self.decode_context == "max" else ctx / batch
            dec = self.mix.along(batch, T)
        return self._body_mix[rows] + self._head_mix[rows] + dec

    def base_s(self, rows: int, logit_rows: int, mixed: bool = False) -> float:
        """body(rows) + head(logit_rows): everything of a step but the attention, KV policy and drafter (launched
        as a step holding a prefill chunk when `mixed`)."""
        if mixed:
            return self._body_mix[rows] + self._head_mix[logit_rows]
        return self._body_dec[rows] + self._head_dec[logit_rows]

    def _dec_ctx(self, plan) -> float:
        if self.decode_context == "max":
            return plan.decode_ctx_max
        return plan.decode_ctx_sum / plan.n_decode

    def _dec_max(self, plan) -> float:
        mx = getattr(plan, "decode_ctx_max", 0) or 0
        return float(mx) if mx > 0 else plan.decode_ctx_sum / plan.n_decode

    def _eager_kernel_counts(self) -> dict:
        """Kernels one eager step launches, per group (constant in the rows: the op list does not change with
        them): body + head, the decode rows' attention (beside a chunk), one chunk's attention, a prompt's
        completion ops, a drafter's chunk."""
        c = self.combo
        one = np.ones(1)

        def n(build) -> float:
            b = OpBuilder(1)
            build(b)
            if not b._blocks:
                return 0.0
            return float(b.build().count.sum())

        shape_d = StepShape(batch=np.array([8.0]), query_rows=np.full(1, float(self.query_rows)),
                            context=np.array([1000.0]), phase="decode", layers=self._layers, mixed=True,
                            ctx_max=np.array([1000.0]))
        plan = c.speculation.round_plan(c, np.array([8.0]), np.array([1000.0]))

        def dec(b):
            if plan.add_draft_ops is not None:
                plan.add_draft_ops(b, c, shape_d)
            c.attention.decode_ops(b, c, shape_d)
            c.kv_policy.decode_ops(b, c, shape_d)

        shape_p = StepShape(batch=one, query_rows=np.array([512.0]), context=np.array([1024.0]), phase="prefill",
                            layers=self._layers, kv_prefix=np.array([512.0]))
        return {"body": n(lambda b: body_ops(b, c, np.array([64.0]), np.array([2.0]), "prefill",
                                             lambda bb, layers: None)),
                "decode": n(dec),
                "chunk": n(lambda b: c.attention.prefill_ops(b, c, shape_p))
                + n(lambda b: c.speculation.prefill_draft_ops(b, c, np.array([512.0]))) * (self._has_draft),
                "complete": n(lambda b: c.kv_policy.prefill_ops(b, c, StepShape(
                    batch=one, query_rows=np.array([1000.0]), context=np.array([1000.0]), phase="prefill",
                    layers=self._layers)))}

    def add_prefill_s(self, t: float, plan) -> float:
        """t plus the plan's prefill chunks and the KV policy's work on the prompts they complete (seconds; added
        in plan order, so every caller sums the same floats in the same order)."""
        for c, o in plan.chunks:
            t += self.chunk_s(c, o)
        if self.complete_tab is not None:
            for p in plan.completes:
                t += self.complete_s(p)
        return t

    def step_s(self, plan) -> float:
        """Seconds of one step (a StepPlan or Composition), from the tables and surfaces."""
        if self.rt is not None:
            t = self._rt_step_s(plan)
            if t is not None:
                return t
        R, L = plan.total_tokens, plan.logit_rows
        if plan.chunks and self._dev is not None:
            # eager_overlap = step: max(device time of the step's kernels, host time of their launches)
            dev, host = self._eager_step_parts(plan)
            return dev if dev > host else host
        rows_mode = self.per_row and self.decode_context == "mean"
        if plan.chunks:
            t = self._body_mix[R] + self._head_mix[L]
            if plan.n_decode:
                if rows_mode:
                    t += self.row_mean_s(plan.n_decode, self.plan_rows(plan), True)
                else:
                    t += self.decode_s(plan.n_decode, self._dec_ctx(plan), True, self._dec_max(plan))
            return self.add_prefill_s(t, plan)
        b = plan.n_decode
        bp = self.graph_batch(b) if self.graph_sizes else b
        if bp != b:   # padding rows of the captured graph: one query row each, attending one token
            pad = bp - b
            qr = R // b if b else 1
            R, L = R + pad * qr, L + pad * qr
            if rows_mode:
                ctx = np.concatenate([self.plan_rows(plan), np.ones(pad)])
                return self._body_dec[R] + self._head_dec[L] + self.row_mean_s(bp, ctx)
            if self.decode_context == "max":
                mean = plan.decode_ctx_max
            else:
                mean = (plan.decode_ctx_sum + pad) / bp
            return self._body_dec[R] + self._head_dec[L] + self.decode_s(bp, mean, False, self._dec_max(plan))
        if rows_mode:
            return self._body_dec[R] + self._head_dec[L] + self.row_mean_s(b, self.plan_rows(plan))
        return self._body_dec[R] + self._head_dec[L] + self.decode_s(b, self._dec_ctx(plan), False, self._dec_max(plan))

    def decode_run_s(self, batch: int, rows: int, ctx_sums: np.ndarray, ctx_max: np.ndarray | None = None,
                     ctx_rows: np.ndarray | None = None) -> np.ndarray:
        """Seconds of each step of a run of pure-decode steps (same batch, summed and largest contexts per
        step; ctx_rows[j, i]: row i's attended context in step j, read by per-row pricing)."""
        if self.rt is not None:
            t = self._rt_run_s(batch, rows, ctx_sums, ctx_max, ctx_rows)
            if t is not None:
                return t
        ctx_sums = np.asarray(ctx_sums, dtype=np.float64)
        bp = self.graph_batch(batch) if self.graph_sizes else batch
        pad = 0
        if bp != batch:
            pad = bp - batch
            rows = rows + pad * (rows // batch)
            ctx_sums = ctx_sums + pad
            batch = bp
        if self.spread:
            mx = ctx_sums / batch if ctx_max is None else np.asarray(ctx_max, dtype=np.float64)
            means = (mx if self.decode_context == "max" else ctx_sums / batch).tolist()
            keys = [self._memo_key(batch, m, x, False) for m, x in zip(means, mx.tolist())]
            return self._body_dec[rows] + self._head_dec[rows] + np.asarray(self._memo_price(keys))
        if self.per_row and self.decode_context == "mean":
            return self._body_dec[rows] + self._head_dec[rows] + self._rows_run_s(self.dec, batch, ctx_rows, pad)
        if self.decode_context == "max":
            T = np.asarray(ctx_max, dtype=np.float64)
        else:
            T = ctx_sums / batch
        return self._body_dec[rows] + self._head_dec[rows] + self.dec.along(batch, T)

    def _rows_run_s(self, surf, batch: int, ctx_rows, pad: int) -> np.ndarray:
        """Per-row decode term of each step of a run: the mean over its rows (and `pad` graph padding rows
        attending one token) of decode(batch, context_i) on surface `surf`."""
        if ctx_rows is None:
            raise ValueError("per-row pricing of a decode run needs each row's context (ctx_rows)")
        ctx = np.asarray(ctx_rows, dtype=np.float64)
        if self.kv_cap is not None:
            ctx = np.minimum(ctx, self.kv_cap)
        d = surf.along(batch, ctx).sum(axis=1)
        if pad:
            d = d + pad * surf.along(batch, np.ones(1))[0]
        d = d / batch
        if self.dec_L is not None:   # each longest-row op at least at its longest row alone (row_mean_s)
            for L in (self.dec_L if surf is self.dec else self.mix_L):
                mean_l = L.along(batch, ctx).sum(axis=1)
                if pad:
                    mean_l = mean_l + pad * L.along(batch, np.ones(1))[0]
                d = d + np.maximum(L.along(1, ctx).max(axis=1) - mean_l / batch, 0.0)
        return d

    # ---- direct pricing (validation) ---------------------------------------------------------------------
    def direct_decode_s(self, batch: int, plan, mixed: bool) -> float:
        """The decode term of `plan` priced directly (no interpolation), with the semantics of step_s: at the mean
        (or longest) context, or per row (the mean over the rows of decode(batch, context_i)) for per_row tuples."""
        launch = self.mixed_launch if mixed else self.decode_launch
        if self.per_row and self.decode_context == "mean":
            ctx = self.plan_rows(plan)
            if batch > len(ctx):   # graph padding rows
                ctx = np.concatenate([ctx, np.ones(batch - len(ctx))])
            vals, counts = np.unique(ctx, return_counts=True)
            if self.long_names:
                v, lo = self.price_decode_split(np.full(len(vals), float(batch)), vals, launch, mixed)
                alone = self.price_decode_split(np.ones(len(vals)), vals, launch, mixed)[1].max(axis=1)
                mean_l = (lo * counts).sum(axis=1) / batch
                return float((v * counts).sum()) / batch + float(np.maximum(alone - mean_l, 0.0).sum())
            v = self.price_decode(np.full(len(vals), float(batch)), vals, launch, mixed=mixed)
            return float((v * counts).sum()) / batch
        ctx_sum = plan.decode_ctx_sum + (batch - plan.n_decode)
        mean = plan.decode_ctx_max if self.decode_context == "max" else ctx_sum / batch
        return float(self.price_decode(np.array([batch]), np.array([mean]), launch, mixed=mixed,
                                       ctx_max=np.array([self._dec_max(plan)]) if self.spread else None)[0])

    def direct_step_s(self, plan) -> float:
        """The same step priced exactly (no interpolation): every group priced at the composition's own
        values. Slow (several pricing calls); for validation and tests."""
        R, L = plan.total_tokens, plan.logit_rows
        mixed = bool(plan.chunks)
        if mixed and self._dev is not None:   # eager_overlap = step (see step_s)
            k = self._kernels
            n = k["body"] + (k["decode"] if plan.n_decode else 0.0) + k["chunk"] * len(plan.chunks)
            if self.complete_tab is not None:
                n += k["complete"] * len(plan.completes)
            return max(self._dev.direct_step_s(plan), n * self._launch_eager)
        b = plan.n_decode
        if not mixed and b and self.graph_sizes:
            bp = self.graph_batch(b)
            qr = R // b
            R, L, b = R + (bp - b) * qr, L + (bp - b) * qr, bp
        t = (self.body_mix[R] + self.head_mix[L]) if mixed else (self.body_dec[R] + self.head_dec[L])
        if plan.n_decode:
            t += self.direct_decode_s(b, plan, mixed)
        if plan.chunks:
            cs = np.array([c for c, _ in plan.chunks], dtype=np.float64)
            os_ = np.array([o for _, o in plan.chunks], dtype=np.float64)
            t += float(self.price_chunk_attention(cs, os_).sum())
            if self.draft_chunk is not None:
                t += float(sum(self.draft_chunk[int(c)] for c in cs))
        if plan.completes and self.complete_tab is not None:
            t += float(self.price_complete(np.array(plan.completes, dtype=np.float64)).sum())
        return t
