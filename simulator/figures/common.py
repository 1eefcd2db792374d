"""What every reproduction shares: ONE combo factory, ONE per-op timer, pricing over arrays, small math.

    combo(sc, **overrides)          a Combo on the scenario's first hardware / model / dtypes / parallelism /
                                    launch / kernels / trace, every axis at its default value unless given
                                    (a name, a {name: {param: value}} mapping, or a Strategy instance);
                                    overrides: hardware, model, kv_dtype, weight_dtype, tp, ep, attn_dp, launch,
                                    kernels, trace. `label=` names the configuration: a refused combination
                                    raises a one-line ScenarioError naming it (the reproduction does not fit)
    scenario_value(sc, axis, name)  the scenario's own instance of axis value `name` (keeps the parameters the
                                    scenario set), else the default-constructed value
    price(combo, batch, context, output_tokens)
                                    simulator.pricing.price_combo's columns over broadcast arrays
    op_times(combo, batch, kv_len, launch=True)
                                    seconds per op name of one decode round at KV length kv_len (arrays),
                                    launch cost included or not (a profiler's kernel time excludes it)
    mean_kv(context, output_tokens) the mean KV length over a generation, as pricing uses
    with_params(strategy, **kw)     the same strategy value with some parameters changed (sensitivity variants)
    gmean(x)                        geometric mean
No figure module imports another figure module's helpers; what two of them need lives here.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from hwmodels.errors import ScenarioError
from hwmodels.roofline import price as _price_ops
from simulator.combo import Combo, make_combo
from simulator.strategies.base import Strategy, parse_axis

_SETTINGS = ("hardware", "model", "kv_dtype", "weight_dtype", "tp", "ep", "attn_dp", "launch", "kernels", "trace")


def scenario_value(sc, axis: str, name: str) -> Strategy:
    """The scenario's instance of `name` on `axis` (first one listed), else `name` with its defaults."""
    for s in sc.axes.get(axis, []):
        if s.name == name:
            return s
    [s] = parse_axis(axis, [name])
    return s


def combo(sc, *, label: str | None = None, **kw: Any) -> Combo:
    """A Combo on the scenario's settings with the given overrides and axis values (module docstring)."""
    settings = {k: kw.pop(k) for k in list(kw) if k in _SETTINGS}
    m = settings.get("model", sc.models[0])
    wd = settings.get("weight_dtype", sc.weight_dtype[0])
    tp, ep, dp = sc.parallel[0]
    c = make_combo(settings.get("hardware", sc.hardware[0]), m, kv_dtype=settings.get("kv_dtype", sc.kv_dtype[0]),
                   weight_dtype=None if wd == "native" else wd, tp=settings.get("tp", tp), ep=settings.get("ep", ep),
                   attn_dp=settings.get("attn_dp", dp), launch=settings.get("launch", sc.launch),
                   kernels=settings.get("kernels", sc.kernels), trace=settings.get("trace", sc.trace), **kw)
    if label is not None:
        from simulator.planner import combo_refusal

        reason = combo_refusal(c)
        if reason:
            raise ScenarioError(f"configuration {label!r} ({c.strategy_label()}) is refused on scenario "
                                f"{sc.name!r}: {reason}", file=getattr(sc, "file", None), field="targets")
    return c


def _arr(x, n=None) -> np.ndarray:
    a = np.atleast_1d(np.asarray(x, dtype=np.float64))
    return a if n is None else np.broadcast_to(a, (n,)).copy()


def price(c: Combo, batch, context, output_tokens) -> dict:
    """simulator.pricing.price_combo columns for the broadcast (batch, context, output_tokens) arrays."""
    from simulator.pricing import price_combo

    n = max(len(_arr(batch)), len(_arr(context)), len(_arr(output_tokens)))
    cols, _ = price_combo(c, _arr(batch, n), _arr(context, n), _arr(output_tokens, n))
    return cols


def mean_kv(context, output_tokens) -> np.ndarray:
    """Mean KV length over a generation that ends at `context` (simulator.pricing's definition)."""
    return _arr(context) - (_arr(output_tokens) + 1.0) / 2.0


def op_times(c: Combo, batch, kv_len, launch: bool = True) -> dict[str, np.ndarray]:
    """Seconds per op name (summed over its count) of one decode round at KV length kv_len, per setting."""
    from simulator.pricing import decode_ops

    kv = _arr(kv_len)
    n = max(len(kv), len(_arr(batch)))
    ops, _ = decode_ops(c, _arr(batch, n), _arr(kv_len, n))
    p = _price_ops(ops, c.hardware, c.launch, detail=True)
    t = p.time_s if launch else p.time_s - p.launch_s
    names = np.asarray(ops.names, dtype=object)[ops.name_id]
    out = {}
    for nm in np.unique(names):
        sel = names == nm
        out[str(nm)] = np.bincount(ops.setting[sel], weights=t[sel], minlength=n)
    return out


def sum_ops(times: dict[str, np.ndarray], keep) -> np.ndarray:
    """Sum of the op times whose name satisfies `keep(name)` (zeros when none does)."""
    sel = [v for k, v in times.items() if keep(k)]
    n = len(next(iter(times.values()))) if times else 0
    return np.sum(sel, axis=0) if sel else np.zeros(n)


def with_params(strategy: Strategy, **kw) -> Strategy:
    """A new instance of the strategy's class with parameters `kw` changed (validated like a scenario's)."""
    return type(strategy)(**{**strategy.values, **kw})


def gmean(x) -> float:
    x = np.asarray(x, dtype=np.float64)
    return float(np.exp(np.log(x).mean()))
