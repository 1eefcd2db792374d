"""`sparsesim compare --fit-host OUT.yaml`: fit the engine runtime profile's host time to a measured run, judged on
the half of the run it was not fitted on, and written as a profile file a scenario can name.

One number is fitted, the host time the profile leaves to the machine:
  * a profile with a measured launch distribution (host_time.launch: an eager engine whose host issues every kernel,
    e.g. hf-cb): the host's time to issue a forward, replacing that distribution by one value (p50);
  * any other profile: a per-step host time added to its host terms (host_time.fitted_per_step: scheduling, input
    preparation and output processing the profile does not know, e.g. vllm-v1's unknown host terms).
Nothing else moves (no device efficiency, no kernel time, no scheduler knob).

Split: the finished requests in the order they were sent; the first half (rounded up) is the FIT half, the rest the
HELD-OUT half. The whole run is replayed every time (so every request sees the load it saw when measured: a closed
loop split in two would run each half at a lower load), but only the FIT half's measured latencies enter the fit:
the fitted value makes the FIT half's simulated median TPOT equal its measured one (bisection; the simulated TPOT
grows with the host time). The HELD-OUT half's errors are then what the fit predicts for latencies it never saw.
"""
from __future__ import annotations

import copy
import datetime as dt
import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import yaml

from hwmodels.errors import SparsesimError
from simulator.benchmark_results import BenchmarkRun
from simulator.benchmark_results.replay import replay, subset_rows

ITERATIONS = 14


@dataclass
class HostFitResult:
    kind: str                 # launch | per_step
    value_s: float
    fit_idx: np.ndarray
    held_idx: np.ndarray
    fit_rows: list
    held_rows: list
    base_rows: list           # the held-out half under the profile as it was
    path: str
    note: str


def _with_value(cfg, kind: str, x: float):
    from simulator.engine.runtime import HostTerms, LaunchModel

    prof = cfg.runtime
    if kind == "launch":
        lm = LaunchModel(constant_s=x, quantiles=((50, x),), norm_p=prof.launch.norm_p)
        return replace(cfg, runtime=replace(prof, launch=lm), host_launch_s=None, host_launch_mode="median")
    return replace(cfg, runtime=replace(prof, host=prof.host.plus(HostTerms(per_step_s=x))))


def _tpot_p50(run: BenchmarkRun, cfg, seed: int, think_s: float, pos: np.ndarray, bar=None) -> float:
    """The simulated median TPOT (ms) of the requests at positions `pos` in a replay of the whole run."""
    res, _ = replay(run, cfg, seed, think_s)
    if bar is not None:
        bar.update(1)
    t = res.requests["tpot_s"].to_numpy(float)[pos]
    t = t[np.isfinite(t)]
    return float(np.median(t) * 1e3) if len(t) else math.nan


def fit_host(run: BenchmarkRun, cfg, out_path: str, seed: int = 0, think_s: float = 0.0) -> HostFitResult:
    """Fit, judge on the held-out half, write the profile file (see the module docstring)."""
    from simulator.engine.runtime import load_profile, profile_path

    if cfg.runtime is None or cfg.engine in ("none", None):
        raise SparsesimError("--fit-host fits an engine runtime profile's host terms, and this configuration has none "
                             "(serving.engine: none): give --engine (vllm-v1, sglang, trtllm, hf-cb, own) or a scenario "
                             "that names one")
    if cfg.step_cost_given & {"host_per_step_us", "host_launch_ms", "host_per_row_us", "host_floor_ms"}:
        raise SparsesimError(f"--fit-host: the scenario's serving.step_cost sets host terms "
                             f"({', '.join(sorted(cfg.step_cost_given))}) that would override the fitted ones; remove "
                             "them (or --set them away) to fit")
    idx = np.flatnonzero(run.ok)
    if len(idx) < 4:
        raise SparsesimError(f"--fit-host: the run has {len(idx)} finished requests; at least 4 are needed (half to "
                             "fit, half to judge the fit)", file=run.file)
    k = (len(idx) + 1) // 2
    fit_idx, held_idx = idx[:k], idx[k:]
    fit_pos, held_pos = np.arange(k), np.arange(k, len(idx))     # positions among the finished requests
    kind = "launch" if cfg.runtime.launch is not None else "per_step"
    ok = run.ok
    out_tok = run.output_tokens[ok][fit_pos]
    m_tpot = (run.e2e_s[ok][fit_pos] - run.ttft_s[ok][fit_pos])[out_tok > 1] / (out_tok[out_tok > 1] - 1)
    target = float(np.median(m_tpot) * 1e3) if len(m_tpot) else math.nan
    if not math.isfinite(target):
        raise SparsesimError("--fit-host: the fit half has no request with more than one output token (no TPOT to fit)",
                             file=run.file)
    from simulator.progress import progress_bar

    bar = progress_bar(ITERATIONS + 5, "fitting the host time", "simulation")
    lo, hi = 0.0, 2.0 * target * 1e-3
    f_lo = _tpot_p50(run, _with_value(cfg, kind, lo), seed, think_s, fit_pos, bar)
    if f_lo >= target:
        x = 0.0
    else:
        f_hi = _tpot_p50(run, _with_value(cfg, kind, hi), seed, think_s, fit_pos, bar)
        if f_hi < target:
            x = hi
        else:
            for _ in range(ITERATIONS):
                mid = 0.5 * (lo + hi)
                if _tpot_p50(run, _with_value(cfg, kind, mid), seed, think_s, fit_pos, bar) < target:
                    lo = mid
                else:
                    hi = mid
            x = 0.5 * (lo + hi)
    fitted = _with_value(cfg, kind, x)

    res_fit, _ = replay(run, fitted, seed, think_s)
    res_base, _ = replay(run, cfg, seed, think_s)
    fit_rows, held_rows = subset_rows(run, res_fit, fit_pos), subset_rows(run, res_fit, held_pos)
    base_rows = subset_rows(run, res_base, held_pos)
    if bar is not None:
        bar.close()
    held = {(r["metric"], r["stat"]): r["error"] for r in held_rows}
    what = ("host time to issue a forward" if kind == "launch" else "per-step host time added to the profile's terms")
    note = (f"sparsesim compare --fit-host on {run.file}: {what} = {x * 1e3:.3f} ms, fitted on requests "
            f"{fit_idx[0]}..{fit_idx[-1]} (the first {len(fit_idx)} finished, in the order sent) to their median TPOT; "
            f"held out {len(held_idx)} requests ({held_idx[0]}..{held_idx[-1]}): TPOT p50 error "
            f"{held[('tpot', 'p50')]:+.1%}, TTFT p50 {held[('ttft', 'p50')]:+.1%}, E2E p50 {held[('e2e', 'p50')]:+.1%}")
    base = profile_path(cfg.engine)
    doc = yaml.safe_load(Path(base).read_text()) if base is not None else {}
    load_profile(cfg.engine)   # the base parses
    doc = copy.deepcopy(doc)
    hw = sorted({g.combo.hardware.name for g in cfg.groups})
    measured = {"file": str(run.file), "script": "sparsesim compare --fit-host", "date": dt.date.today().isoformat(),
                "gpu": f"{', '.join(hw)} (the replica's hardware in the comparison; the result file does not name its "
                       "GPU)", "note": note}
    ht = doc.setdefault("host_time", {}) or {}
    doc["host_time"] = ht
    if kind == "launch":
        ht["launch"] = {"value": {"p50_ms": round(x * 1e3, 4)}, "measured": measured}
    else:
        ht["fitted_per_step"] = {"value": {"per_step_ms": round(x * 1e3, 4)}, "measured": measured}
    doc["version"] = f"{doc.get('version', '')} + host time fitted to {Path(run.file).name}".strip()
    text = (f"# Engine runtime profile {Path(str(base)).name} with its host time fitted by `sparsesim compare "
            f"--fit-host`\n# {note}\n# Use it as serving.engine: {out_path}\n"
            + yaml.safe_dump(doc, sort_keys=False, width=120))
    try:
        Path(out_path).parent.mkdir(parents=True, exist_ok=True)
        Path(out_path).write_text(text)
    except OSError as e:
        raise SparsesimError(f"cannot be written ({e.strerror or e})", file=str(out_path)) from None
    from simulator.engine.runtime import parse_profile

    parse_profile(yaml.safe_load(text), str(out_path))   # what was written reads back as a profile
    return HostFitResult(kind=kind, value_s=x, fit_idx=fit_idx, held_idx=held_idx, fit_rows=fit_rows,
                         held_rows=held_rows, base_rows=base_rows, path=str(out_path), note=note)
