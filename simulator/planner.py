"""The strategy-tuple space of a scenario: enumerate, refuse with reasons, price, rank.

Categorical axes (hardware, model, every strategy axis, KV and weight dtype, TP degree) form the
Cartesian product of Combos; numeric axes (batch, context, output length) are priced together as arrays
under each Combo. A combination that makes no sense is skipped with a stated reason, and every skip is
counted in `SweepResult.skipped` — nothing is dropped silently.
"""
from __future__ import annotations

import itertools
import sys
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from simulator.combo import Combo
from simulator.pricing import price_combo
from simulator.scenario import RANK_BY, Scenario, numeric_grid
from simulator.strategies.base import AXES


@dataclass
class SweepResult:
    """Priced settings (one row per combo x batch x context x output length) and what was skipped."""

    results: pd.DataFrame
    skipped: Counter = field(default_factory=Counter)  # reason -> number of settings skipped
    breakdown: pd.DataFrame | None = None

    @property
    def n_skipped(self) -> int:
        return sum(self.skipped.values())


def combo_refusal(combo: Combo) -> str | None:
    """Why a strategy tuple cannot run, or None."""
    hw, m = combo.hardware, combo.model
    if combo.tp > hw.max_devices_per_node:
        return f"TP{combo.tp} needs {combo.tp} devices; a {hw.name} node has at most {hw.max_devices_per_node}"
    if combo.tp > 1 and (hw.link_bw_bytes_s is None or hw.link_latency_s is None):
        return (f"TP{combo.tp} needs {hw.name}'s interconnect bandwidth and latency, which its spec leaves "
                "unsourced (null)")
    if m.heads % combo.tp:
        return f"{m.name}: {m.heads} attention heads do not split evenly over TP{combo.tp}"
    if combo.ep > 1 and not m.moe:
        return f"EP{combo.ep}: {m.name} has no experts"
    if combo.ep > 1 and m.moe.experts % combo.ep:
        return f"EP{combo.ep}: {m.moe.experts} experts do not split evenly"
    for axis in AXES:
        reason = getattr(combo, axis).refuse(combo)
        if reason:
            return reason
    return None


def onchip_overflow(combo: Combo, batch: np.ndarray, context: np.ndarray) -> tuple[np.ndarray, str]:
    """Settings whose strategies' extra on-chip buffers (Strategy.onchip_bytes) exceed the on-chip memory of
    one device, and the reason. Only static-graph dataflow devices (kind 'dataflow', e.g. SN40L) are
    checked: their compiler allocates every buffer of a fused kernel on chip (SnapStream sec. 3.2.1 and
    appendix A.1); on a GPU such buffers live in HBM and cost bandwidth instead."""
    hw = combo.hardware
    none = np.zeros(len(batch), dtype=bool)
    if hw.kind != "dataflow" or hw.sram_total_bytes is None:
        return none, ""
    need = sum(np.broadcast_to(np.asarray(s.onchip_bytes(combo, batch, context), dtype=np.float64), batch.shape)
               for s in combo.strategies())
    over = need > hw.sram_total_bytes
    if not over.any():
        return none, ""
    names = "+".join(s.label() for s in combo.strategies() if np.any(np.asarray(s.onchip_bytes(combo, batch, context)) > 0))
    return over, (f"{names}: extra on-chip buffers exceed {hw.name}'s {hw.sram_total_bytes / 2**20:.0f} MiB of "
                  "on-chip memory per device (static-graph mapping infeasible)")


def combos(sc: Scenario):
    """Every strategy tuple of the scenario, as Combo objects."""
    for hw, m, kv, wd, (tp, ep, dp), *values in itertools.product(
            sc.hardware, sc.models, sc.kv_dtype, sc.weight_dtype, sc.parallel, *(sc.axes[a] for a in AXES)):
        yield Combo(hardware=hw, model=m, kv_dtype=kv, weight_dtype=m.dtype if wd == "native" else wd, tp=tp,
                    ep=ep, attn_dp=dp, launch=sc.launch, kernels=sc.kernels, trace=sc.trace,
                    **dict(zip(AXES, values)))


def evaluate(sc: Scenario, breakdown: bool = False, progress: bool = False) -> SweepResult:
    """Price every setting of the scenario."""
    B, C, L = numeric_grid(sc)
    frames, bds = [], []
    skipped: Counter = Counter()
    all_combos = list(combos(sc))
    it = all_combos
    if progress and len(all_combos) > 20 and sys.stderr.isatty():
        from tqdm import tqdm

        it = tqdm(all_combos, desc="pricing strategy tuples", unit="tuple", leave=False)
    offset = 0
    for combo in it:
        reason = combo_refusal(combo)
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
        over, why = onchip_overflow(combo, B, C)
        if (over & ok).any():
            skipped[why] += int((over & ok).sum())
            ok = ok & ~over
            if not ok.any():
                continue
        b, c, o = B[ok], C[ok], L[ok]
        cols, bd = price_combo(combo, b, c, o, breakdown=breakdown)
        df = pd.DataFrame(cols)
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
        if bd is not None:
            bd["setting"] += offset
            bds.append(bd)
        offset += len(df)
    results = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if not results.empty:
        time_cols = [c for c in results.columns if c.endswith("_ms")]
        results[time_cols] = results[time_cols].astype(float)
        results["slo_ok"] = slo_mask(results, sc.slo)
    return SweepResult(results=results, skipped=skipped,
                       breakdown=pd.concat(bds, ignore_index=True) if bds else None)


def slo_mask(df: pd.DataFrame, slo: dict[str, float]) -> np.ndarray:
    ok = np.ones(len(df), dtype=bool)
    for k, limit in slo.items():
        ok &= df[k].to_numpy() <= limit
    return ok


def rank(result: SweepResult, sc: Scenario) -> pd.DataFrame:
    """Settings that fit in memory and meet the SLO, best first by the scenario's objective."""
    df = result.results
    if df.empty:
        return df
    keep = df[df["fits"] & df["slo_ok"]]
    return keep.sort_values(sc.rank_by, ascending=RANK_BY[sc.rank_by], kind="stable")


def best_per_context(result: SweepResult, sc: Scenario) -> pd.DataFrame:
    """For each (hardware, model, context): the best feasible strategy tuple and batch."""
    ranked = rank(result, sc)
    if ranked.empty:
        return ranked
    return (ranked.groupby(["hardware", "model", "context"], sort=True, as_index=False).head(1)
            .sort_values(["hardware", "model", "context"]))
