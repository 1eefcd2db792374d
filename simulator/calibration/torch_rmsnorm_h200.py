"""torch's own RMSNorm on the H200: grid 2's shapes timed on the device whose row the report calls a `transfer`.

The RMSNorm forms (simulator.calibration.torch_rmsnorm) were fitted on H100 rows only; on another device the report
prices them with that device's SMs, L2 and datasheet HBM bandwidth (the stream rate scaled by the HBM ratio, T0 and the
round latencies as on the H100). Until now the H200 row was judged only on measure.py's 14 campaign shapes timed on the
H200 (2026-11-22). This grid times GRID2 + CONTROLS2 (the H100's grid 2) on an H200, priced before the run
(PREDICTION, committed first) by both transferred forms:
  main   grid 1's form (torch_rmsnorm.CAND), the transfer before grid 2
  cand2  grid 2's form (torch_rmsnorm.CAND2), the transfer the report shipped until grid 3
  cand3  grid 3's form (torch_rmsnorm.CAND3), the transfer the report ships now (its column added at the commit after
         grid 3's merge, still before any H200 run)
Nothing here is fitted on H200 rows: every row is blind for the H200 (the shapes' H100 times were looked at when CAND2
was fitted; the H200's were never seen). Timed with lab/kernels/measure_torch_rmsnorm.py --grid blind2 PREDICTION.
Status: MEASURED 2026-11-28 03:39 UTC on GPU 0 of a 4 x H200 lease (lab/kernels/run_engine_allreduce_blind23_24.sh's H200
branch; MEASURED, notes beside it), and on a second lease (grid2rep2). The earlier call (run tool kind nvidia-h200) had
been served by an H100; its rows became grid 2's H100 replicate (torch_rmsnorm.GRID2_REPLICATE). Blind rows, |error|
median / p90 % (regimes met of 3): main 10.3 / 25.2 (1), cand2 4.5 / 17.2 (2; stream 11.1 / 17.4 missed), cand3 (shipped)
4.8 / 15.3 (3; stream 8.4 / 18.6, signed +8.4: the H200's stream rows a little slower than the HBM ratio carries over);
second lease cand3 5.0 / 15.1, 3 of 3 (benchmarks/accuracy_sections/torch_rmsnorm_h200.py).
"""
from __future__ import annotations

import pandas as pd

DEVICE = "H200"
PREDICTION = "production_kernels/torch_rmsnorm_grid2_prediction_H200_2026-11-28.csv"
MEASURED = "production_kernels/torch_rmsnorm_grid2_nvidia-h200_2026-11-28.csv"
MODELS = (("main", "pred_main_us"), ("cand2", "pred_cand2_us"), ("cand3", "pred_cand3_us"))


def prediction_table() -> pd.DataFrame:
    """Every grid-2 row (controls first, as the H100 run) priced on the H200 by the transferred forms."""
    from hwmodels.spec import load_hardware
    from simulator.calibration import torch_rmsnorm as TR

    hw = load_hardware(DEVICE)
    dev = {"sms": int(hw.units), "l2_bytes": float(hw.l2_bytes or TR.H100_L2), "hbm_bps": float(hw.hbm_bw_bytes_s)}
    shapes = [(r, n, "control") for r, n in TR.CONTROLS2] + [(r, n, "blind") for r, n in TR.GRID2]
    t = pd.DataFrame(shapes, columns=["rows", "n", "kind"])
    t["regime"] = [TR.regime(r, dev["sms"]) for r in t["rows"]]
    t["sets"] = TR.harness_sets(t["rows"], t["n"]).astype(int)
    t["pred_main_us"] = TR.rmsnorm_us(t["rows"], t["n"], TR.CAND, **dev).round(3)
    t["pred_cand2_us"] = TR.rmsnorm2_us(t["rows"], t["n"], TR.CAND2, **dev).round(3)
    t["pred_cand3_us"] = TR.rmsnorm3_us(t["rows"], t["n"], TR.CAND3, **dev).round(3)
    return t


def measured() -> pd.DataFrame:
    """The H200 grid-2 rows with the committed prices and signed errors (err_main, err_cand2, err_cand3)."""
    from simulator.calibration.torch_rmsnorm import read_measured

    need = ("rows", "n", "kind", "regime", "median_us", "rotation_sets") + tuple(c for _, c in MODELS)
    return read_measured(MEASURED, need, MODELS)


def accuracy(m: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per regime (blind rows): both transferred forms' |error| median / p90, signed median, met."""
    from simulator.calibration import torch_rmsnorm as TR

    return TR.accuracy(measured() if m is None else m, MODELS)


if __name__ == "__main__":
    import sys

    t = prediction_table()
    if len(sys.argv) > 1:
        t.to_csv(sys.argv[1], index=False)
    print(t.to_string(index=False))
