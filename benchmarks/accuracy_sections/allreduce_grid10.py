"""Engines' all-reduce, BLIND grid 10 (4 ranks with 2-rank controls): main's model (the model at de97b41, grid 9's) against
the candidate (TensorRT-LLM's two-shot's serialized local copies + the fused RMSNorm by the fusion kernel's cluster size:
simulator/calibration/engine_allreduce_grid10.py GRID10_CANDIDATE, predict_grid10), both priced and committed before the
measurement. The candidate met FEWER regimes (17 of 26 against main's 18) and is not shipped: main stays the model.
"""
from __future__ import annotations

from .allreduce import _engine_allreduce_blind_table

#: the commit that holds blind grid 10's prediction (engine_allreduce_grid10.BLIND10_PRED_CSV), made before the measurement
ENGINE_AR_BLIND10_COMMIT = "dc5b3f0"
#: the model whose row is the family's STANDING after grid 10 (main / new): the candidate met 17 of 26 regimes against
#: main's 18 (its 2-rank two-shot controls went +14 % too slow; 4-rank TensorRT-LLM two-shot 2-8 MiB met, -11.5 -> -1.5 %
#: signed) although its pooled |error| median and p90 were lower (4.46 / 14.26 % against 5.80 / 14.97 %): NOT shipped
SHIPPED = "main"
#: the family's STANDING moved to blind grid 12 (4 x H100, the same main model: allreduce_grid12)
STANDING = None


def engine_allreduce_blind10(data_dir=None) -> None:
    """The engines' all-reduce BLIND grid 10 (simulator/calibration/engine_allreduce_grid10.py BLIND10_*: 4 ranks, TensorRT-LLM's
    two-shot, plain and + RMSNorm, at the fusion kernel's launch configs (cluster size 4 / 2 / 1, one or two
    tokens a cluster), 1-8 MiB above all, the fused one-shot at <= 64 KiB, vLLM's kernels on every shape; 2-rank
    controls; lab/kernels/run_engine_allreduce_blind10.sh on 4 x H100, one call, the flashinfer modules prebuilt off the
    device), priced before the measurement by main's model (BLIND10_MAIN_COMMIT) and the candidate (fitted on grids 4,
    6, 7, 8 and 9's 4-rank rows only), both committed in BLIND10_PRED_CSV: per implementation x ranks x size regime n,
    |error| median / p90 and signed median of each, regimes met (median <= 10 %, p90 <= 25 %); the shipped model's row
    is the family's STANDING."""
    from simulator.calibration import engine_allreduce_grid10 as G10

    _engine_allreduce_blind_table(10, data_dir, G10.BLIND10_PRED_CSV, G10.BLIND10_MEAS_GLOB, lambda pred: (
            f"\n== engines' all-reduce kernels, BLIND grid 10 (4 ranks, (tokens, hidden) {list(G10.BLIND10_SHAPES)}; "
            f"2-rank controls {list(G10.BLIND10_CONTROL)}; prediction {pred}, commit {ENGINE_AR_BLIND10_COMMIT}, before "
            f"measuring: main = the model at {G10.BLIND10_MAIN_COMMIT}, new = TensorRT-LLM's two-shot's serialized local "
            f"copies + RMSNorm by cluster size {G10.GRID10_CANDIDATE}: fewer regimes met, NOT shipped)"), shipped=STANDING)
