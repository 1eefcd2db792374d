"""An engine all-reduce inside a decode step vs back to back (lab/kernels/measure_allreduce_in_step.py).

The engines' all-reduce terms (engine_allreduce*.py) are judged on graphs of back-to-back calls. The in-step harness
times, per rank count g and token count T, CUDA graphs of L layers of [GEMM, all-reduce, GEMM, all-reduce] (Llama-3.1-70B's
row-parallel o_proj and down_proj, vLLM's custom all-reduce) and the parts alone (GEMMs alone, all-reduces alone), so

    extra(L) = step(L) - gemm(L) - ar(L),   epsilon = (extra(L2) - extra(L1)) / (2 (L2 - L1))

is the cost per all-reduce that the sum of the parts misses (the per-replay intercept -- the ranks' start skew a
replay absorbs once -- cancels in the difference). Variants (script v2-v3): spin kernels of fixed length in place of the
GEMMs (epsilon_spin) and GEMMs next to spins without all-reduce (epsilon_gspin).

Looked-at runs (4 x H200, 2026-11-28, four runs: v1, its replicate, v2, v3): epsilon 0.2-2.7 us a call, +1.6 us pooled
median; epsilon_spin and epsilon_gspin within +-0.6 us (medians ~0). Reading: the extra is neither an all-reduce that
follows any kernel nor a GEMM slowed by another kind of neighbour; it is the all-reduce after a GEMM -- most likely the
GEMMs ending at different times on different ranks, which the one-shot's start barrier (vllm_custom_all_reduce.cuh
multi_gpu_barrier) waits out, the slowest rank's. The hypothesis written before the first run (|epsilon| < 0.3 us)
is rejected.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

#: the looked-at runs (production_kernels/), in the order they ran
RUNS = ("allreduce_in_step_v1_nvidia-h200_x4_2026-11-28.csv", "allreduce_in_step_v1rep2_nvidia-h200_x4_2026-11-28.csv",
        "allreduce_in_step_v2_nvidia-h200_x4_2026-11-28.csv", "allreduce_in_step_v3_nvidia-h200_x4_2026-11-28.csv")
#: (step, parts...) per estimate: epsilon (all-reduce after a GEMM), spin (after a spin), gspin (GEMM next to a spin)
ESTIMATES = {"eps": ("step", "gemm", "ar"), "eps_spin": ("sstep", "sleep", "ar"), "eps_gspin": ("gspin", "gemm", "sleep")}


def _dir(data_dir: Path | None) -> Path:
    from simulator.calibration.engine_allreduce import DATA_DIR

    return DATA_DIR if data_dir is None else Path(data_dir)


def epsilons(df: pd.DataFrame) -> pd.DataFrame:
    """Per (world, tokens, and hidden / ffn where the run has them): extra at each L for each estimate and the slope per
    slot (us). df: one run's CSV rows."""
    keys = ["world", "tokens"] + [c for c in ("hidden", "ffn") if c in df.columns]
    v = df.set_index(keys + ["layers", "variant"])["median_us"]
    rows = []
    for k, t in df.groupby(keys):
        k = k if isinstance(k, tuple) else (k,)
        layers = sorted(t["layers"].unique())
        lo, hi = layers[0], layers[-1]
        row = dict(zip(keys, k))
        row.update({"l_lo": lo, "l_hi": hi})
        for name, (whole, a, b) in ESTIMATES.items():
            try:
                ex = {L: v[k + (L, whole)] - v[k + (L, a)] - v[k + (L, b)] for L in (lo, hi)}
            except KeyError:
                continue
            row[f"extra_lo_{name}"], row[f"extra_hi_{name}"] = ex[lo], ex[hi]
            row[name] = (ex[hi] - ex[lo]) / (2 * (hi - lo))
        rows.append(row)
    return pd.DataFrame(rows)


def looked_at(data_dir: Path | None = None) -> pd.DataFrame:
    """epsilons() of every looked-at run, with the run's file name."""
    d = _dir(data_dir)
    return pd.concat([epsilons(pd.read_csv(d / f)).assign(run=f) for f in RUNS], ignore_index=True)


def sizes_probe(data_dir: Path | None = None) -> pd.DataFrame | None:
    """epsilons() of the small-GEMM probe (looked-at, after the blind judgement); None while it is not committed."""
    d = _dir(data_dir)
    if not (d / SIZES_RUN).is_file():
        return None
    raw = pd.read_csv(d / SIZES_RUN)
    return epsilons(raw[raw["note"].astype("string").fillna("") == ""])


def fitted_epsilon_us(data_dir: Path | None = None) -> float:
    """The pooled median epsilon (us a call) over the looked-at runs' cells: the value the blind in-step grid judges."""
    return float(np.median(looked_at(data_dir)["eps"]))


#: the blind in-step grid (script v4, written before its run): two other models' row-parallel shapes (Llama-3.1-8B:
#: hidden 4096 / ffn 14336; Qwen2.5-32B: 5120 / 27648), token counts and layer counts in no looked-at run, 4 and 2 ranks
BLIND_DIMS = ((4096, 14336), (5120, 27648))
BLIND_TOKENS = (4, 32, 128)
BLIND_LAYERS = (12, 48)
BLIND_RUN = "allreduce_in_step_blind_nvidia-h200_x4_2026-11-28.csv"
#: a second run of the blind grid (a replicate; the judged run is BLIND_RUN) and a looked-at probe of small GEMMs (hidden
#: 2048 / 3072, ffn 8192) run after the judgement
BLIND_REPLICATE = "allreduce_in_step_blindrep2_nvidia-h200_x4_2026-11-28.csv"
SIZES_RUN = "allreduce_in_step_sizes_nvidia-h200_x4_2026-11-28.csv"
#: fitted_epsilon_us() as committed before the blind run (us per all-reduce after a GEMM; 24 looked-at cells)
FITTED_EPS_US = 1.546
#: the rule, fixed before the blind run: the after-GEMM term is adopted for the H200's serving steps only if epsilon =
#: FITTED_EPS_US is nearer the measured epsilon than 0 in at least 8 of the 12 blind cells (world x shape x tokens) AND
#: the median |measured - FITTED_EPS_US| over them is below the median |measured|
ADOPT_MIN_CELLS = 8


def judge_blind(data_dir: Path | None = None, run: str = BLIND_RUN) -> dict | None:
    """The blind run's cells (`run`: BLIND_RUN, or BLIND_REPLICATE): measured epsilon against FITTED_EPS_US and against
    0, and the step at the larger L priced as parts + 2 L epsilon (fitted, 0) against the measured step (%); None while
    the run is not committed."""
    d = _dir(data_dir)
    if not (d / run).is_file():
        return None
    raw = pd.read_csv(d / run)
    raw = raw[raw["note"].astype("string").fillna("") == ""]
    e = epsilons(raw)
    v = raw.set_index(["world", "hidden", "tokens", "layers", "variant"])["median_us"]
    for c, eps in (("fit", FITTED_EPS_US), ("zero", 0.0)):
        e[f"abs_{c}"] = (e["eps"] - eps).abs()
        e[f"step_err_{c}_%"] = [
            100 * ((v[(w, h, t, hi, "gemm")] + v[(w, h, t, hi, "ar")] + 2 * hi * eps) / v[(w, h, t, hi, "step")] - 1)
            for w, h, t, hi in zip(e["world"], e["hidden"], e["tokens"], e["l_hi"])]
    nearer = int((e["abs_fit"] < e["abs_zero"]).sum())
    adopt = nearer >= ADOPT_MIN_CELLS and float(e["abs_fit"].median()) < float(e["abs_zero"].median())
    return {"cells": e, "nearer": nearer, "n": len(e), "adopt": adopt}


#: the blind run's outcome by the rule (judge_blind, 2026-11-28): FITTED_EPS_US nearer than 0 in 8 of 12 cells, median
#: |measured - fit| 0.73 us against |measured| 0.81 us: ADOPTED for the H200 (ship_after_gemm_h200). Beside the rule (not
#: its metric): the step at L = 48 priced as parts + 2 L epsilon is off by 3.6 % median against 3.4 % for the parts alone
#: -- a wash -- because epsilon grows with the GEMM (Llama-3.1-8B's shapes 0.0-0.9 us, Qwen2.5-32B's 0.7-1.4 us,
#: Llama-3.1-70B's 0.2-2.7 us looked-at): a constant over-charges small models' steps (+4 to +14 % at 4096 / 4 ranks) and
#: fits the large ones (-0.1 to +3.5 %). The form in proportion to the GEMM's time is the next candidate (looked-at).
#: Since: the blind grid's replicate (a second lease) 9 of 12 nearer, median 0.69 against 0.90 us; the small-GEMM probe
#: (SIZES_RUN, hidden 2048 / 3072, GEMMs of 2-6 us, looked-at) epsilon -0.08 .. +0.14 us: no wait where the GEMMs are
#: short, so the constant over-charges small models' tensor-parallel steps.
AFTER_GEMM_SOURCE = ("simulator/calibration/allreduce_in_step.py ship_after_gemm_h200: FITTED_EPS_US (the pooled median "
                     "epsilon of the four looked-at 4 x H200 in-step runs, Llama-3.1-70B's row-parallel shapes, vLLM's "
                     "custom all-reduce; committed f6a62e4), adopted by the rule fixed before the blind in-step grid "
                     "(Llama-3.1-8B / Qwen2.5-32B shapes, 2026-11-28): nearer than 0 in 8 of 12 cells, median |error| "
                     "0.73 against 0.81 us")


def ship_after_gemm_h200(out_dir: Path | None = None) -> Path:
    """Write FITTED_EPS_US into the fitted H200.yaml as engine_allreduce_us.after_gemm (the other engine terms kept)."""
    from simulator.calibration import checks as C

    d = Path(__file__).resolve().parents[2] / "hwmodels" / "calibration" / "fitted" if out_dir is None else Path(out_dir)
    p = d / "H200.yaml"
    doc = {"engine_allreduce_us": {"after_gemm": FITTED_EPS_US}, "engine_allreduce_after_gemm_source": AFTER_GEMM_SOURCE}
    merged = C.merge_into(p, doc, {"engine_allreduce_us": ("after_gemm",), "engine_allreduce_after_gemm_source": None})
    return C.write_checked(p, merged, "")
