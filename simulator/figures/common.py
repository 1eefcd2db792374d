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
from simulator.combo import Combo, combo_refusal
from simulator.strategies.base import AXES, DEFAULT_VALUE, Strategy, parse_axis


def scenario_value(sc, axis: str, name: str) -> Strategy:
    """The scenario's instance of `name` on `axis` (first one listed), else `name` with its defaults."""
    for s in sc.axes.get(axis, []):
        if s.name == name:
            return s
    [s] = parse_axis(axis, [name])
    return s


def combo(sc, *, label: str | None = None, **kw: Any) -> Combo:
    """A Combo on the scenario's settings with the given overrides and axis values (module docstring): the
    scenario's own factory (Scenario.combo) with every axis not given at its default value."""
    c = sc.combo(**{**{a: DEFAULT_VALUE[a] for a in AXES}, **kw})
    if label is not None:
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


# ---- measured eager-engine host costs (lab/measure_eager_host.py) ----------------------------------------------
#: The kinds of eager engine code whose host time per launched kernel was measured (eager_host_*.csv):
#: 'bare' one PyTorch op in a loop (what the roofline's eager launch cost stands for), 'hf' HF transformers'
#: LlamaForCausalLM decode step, 'own' an engine's own decoder code (F.linear / torch ops, own KV cache).
HOST_STYLES = ("bare", "hf", "own")


#: The measurement the eager host times come from (lab/measure_eager_host.py v3: no blocking copy inside a timed
#: step, 8 layers so a step fits the launch queue). v1 (same day, another lent H100 host) is kept: its own-code step
#: was serialized by blocking copies, so it gives only the HF factor (2.03 against v3's 2.45).
EAGER_HOST_FILE = "eager_host_v3_nvidia-h100-80gb-hbm3_2026-11-26.csv"
#: Host launch cost of one bare PyTorch op measured on the lent hosts (us): the fitted H100-SXM and H200 files
#: (hwmodels/calibration/fitted/*.yaml launch_us.eager) and the eager_host_* runs of 2026-11-26 (v1, v2, v3: three
#: lent H100 hosts). The papers' hosts were not measured: the nominal is the median of these, the plausible range
#: (an ASSUMPTION, printed as a sensitivity) their spread.
LENT_HOST_BARE_US = {"H100-SXM fit host": 10.803, "H200 fit host": 5.548, "eager_host v1 host": 7.723,
                     "eager_host v2 host": 10.790, "eager_host v3 host": 9.787}


def eager_host_us() -> dict:
    """Host microseconds per launched kernel of each HOST_STYLES kind, batch 1, on a NOMINAL host (the median
    bare-op cost of LENT_HOST_BARE_US). Measured (EAGER_HOST_FILE): a kind's host time per kernel = the wall time
    of a synchronized, host-bound step (wall >> device time) / its kernels, as a factor of the same host's bare-op
    cost; that factor times the nominal bare-op cost. Returns {style: us, 'factor_<style>': x, 'file', 'cpu'}."""
    import pandas as pd

    from hwmodels.calibration import DATA_DIR

    path = DATA_DIR / EAGER_HOST_FILE
    if not path.exists():
        raise ScenarioError(f"eager host measurement {EAGER_HOST_FILE} not shipped (lab/measure_eager_host.py)")
    d = pd.read_csv(path)
    bare = float(d[d["style"] == "bare x.add_(1)"].iloc[0]["host_us_layer"])

    def per_kernel(style, attn="sdpa"):
        r = d[(d["style"] == style) & (d["attn"] == attn)].iloc[0]
        if not r["wall_us_step"] > 2.0 * r["device_us_step"]:
            raise ScenarioError(f"{EAGER_HOST_FILE}: the {style} step is not host-bound; its wall is no host time")
        return float(r["wall_us_step"] / r["kernels_step"])
    nominal = float(np.median(list(LENT_HOST_BARE_US.values())))
    f = {"hf": per_kernel("HF transformers", "eager") / bare, "own": per_kernel("plain own-code layer") / bare}
    return {"bare": nominal, "hf": f["hf"] * nominal, "own": f["own"] * nominal, "factor_hf": f["hf"],
            "factor_own": f["own"], "file": EAGER_HOST_FILE, "cpu": str(d.iloc[0]["cpu"])}


def host_ratio_range() -> dict[str, float]:
    """ASSUMPTION: a paper's host runs eager code like the nominal (median) lent host (ratio 1); the plausible
    range is the fastest and the slowest bare-op cost measured over the lent hosts."""
    v = LENT_HOST_BARE_US
    nominal = float(np.median(list(v.values())))
    lo, hi = min(v, key=v.get), max(v, key=v.get)
    return {f"x{v[lo] / nominal:.2f} ({lo})": v[lo] / nominal, f"x{v[hi] / nominal:.2f} ({hi})": v[hi] / nominal}


def with_eager_host(c: Combo, style: str, ratio: float = 1.0) -> Combo:
    """The combo with the eager launch cost per kernel set to the measured host time of engine code `style`
    (HOST_STYLES) times `ratio` (the host-transfer ASSUMPTION); a graph-launched combo is returned unchanged."""
    from dataclasses import replace

    if c.launch != "eager":
        return c
    us = eager_host_us()[style] * ratio
    return replace(c, hardware=c.hardware.scaled(launch_eager_s=us * 1e-6))


def quest_cold_start_s() -> dict[str, float]:
    """Per-run cold cost of a fresh benchmark process (quest_prefill_runs_*.csv, lab/measure_eager_host.py): the
    first timed prefill minus the median of the later ones, per run (the first process on a fresh machine and a
    later one); mit-han-lab/Quest scripts/bench_textgen.py averages its iterations with no warm-up pass."""
    import pandas as pd

    from hwmodels.calibration import DATA_DIR

    files = sorted(DATA_DIR.glob("quest_prefill_runs_*.csv"))
    if not files:
        raise ScenarioError("no quest_prefill_runs_*.csv measurement shipped (lab/measure_eager_host.py)")
    d = pd.read_csv(files[-1])
    d = d[d["phase"] == "script (empty_cache first)"]
    out = {}
    for i, (ctx, g) in enumerate(d.groupby("context", sort=False)):
        w = g.sort_values("iteration")["wall_s"].to_numpy()
        out["first process" if i == 0 else f"later process ({int(ctx) // 1024}K run)"] = float(w[0] - np.median(w[1:]))
    return out
