"""Price the H200 FlashInfer top-k grid before it is measured.

FlashInfer 0.6.4's ragged and page-table top-k transforms (k 2048) at 32 new (dist, rows, n) shapes over grid 12's
launch regimes (decode 1-16, one wave, full one wave, two waves 133-264, 3-5 waves around the L2's size, other 3+
waves), 4-6 shapes each: the H200 transfer grid held 1-3 rows in most of them, and its one miss (the page-table
transform's two-wave rows, +12.7 %) was three rows. One model: the product as committed (the H100-SXM's fitted top-k
terms on the H200, unmeasured_kinds_from), no candidate. Declared before the call: this grid becomes the two
transforms' H200 STANDING whatever its result (the transfer grid's rows stay in the report as they were judged).
Every shape is checked against the committed top-k grids first (no (dist, rows, n) measured before). Writes
hwmodels/calibration/data/production_kernels/topk_flashinfer_h200_prediction_2026-11-28.csv (the H100-SXM's prices
too, for reference); lab/kernels/measure_topk_engines.py --shapes reads it.

    python lab/kernels/predict_topk_fi_h200.py [--causal]

--causal: FlashInfer's ragged transform over 9 whole causal prompts (simulator/calibration/topk_flashinfer_causal_h200.py),
priced as the product prices DSA prefill top-k; no candidate; declared before its call as FlashInfer's causal-prompt
H200 STANDING. Writes production_kernels/topk_flashinfer_h200_causal_prediction_2026-11-28.csv.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from _committed import head_or_exit  # noqa: E402

from hwmodels.spec import load_hardware  # noqa: E402
from simulator.calibration import fit_production_topk_gemm as F  # noqa: E402
from simulator.calibration import topk_flashinfer_grid7 as G7  # noqa: E402
from simulator.calibration import topk_flashinfer_grid10 as G10  # noqa: E402
from simulator.calibration import topk_flashinfer_grid12 as G12  # noqa: E402

OUT = F.DATA_DIR / "topk_flashinfer_h200_prediction_2026-11-28.csv"
#: (dist, rows, n), every n > 2048 (torch.topk's check needs n >= k), by intended launch regime
SHAPES = [
    # decode 1-16
    ("recorded", 3, 36012), ("recorded", 8, 20012), ("recorded", 14, 61012), ("recorded", 12, 9012),
    ("recorded", 6, 120004), ("recorded", 2, 90004), ("recorded", 4, 200004), ("recorded", 9, 170004),
    # one wave 24-115
    ("recorded", 40, 24012), ("recorded", 72, 38012), ("recorded", 100, 15012), ("recorded", 56, 60012),
    # full one wave 116-132
    ("recorded", 118, 21012), ("recorded", 127, 36012), ("recorded", 132, 12012), ("recorded", 122, 50012),
    # two waves 133-264
    ("recorded", 140, 30012), ("recorded", 180, 22012), ("recorded", 220, 40012), ("recorded", 240, 17012),
    ("recorded", 150, 52012), ("recorded", 264, 12012), ("gaussian", 190, 28012),
    # 3-5 waves at 0.4-1.6 of the L2
    ("recorded", 300, 20012), ("recorded", 420, 15012), ("recorded", 560, 9012), ("recorded", 360, 27012),
    ("gaussian", 480, 12012),
    # other 3+ waves
    ("recorded", 700, 20012), ("recorded", 1100, 6012), ("recorded", 1500, 4012), ("recorded", 860, 30012),
]


def committed_topk() -> set[tuple]:
    """(dist, rows, n) of every committed top-k measurement."""
    seen = set()
    for p in sorted(F.DATA_DIR.glob("*.csv*")):
        if "prediction" in p.name:
            continue
        try:
            d = pd.read_csv(p, keep_default_na=False)
        except Exception:  # noqa: BLE001
            continue
        if not {"family", "dist", "rows", "n"} <= set(d.columns):
            continue
        d = d[d["family"] == "topk"]
        seen.update((str(a), int(b), int(c)) for a, b, c in zip(d["dist"], d["rows"], d["n"]))
    return seen


def main() -> None:
    commit = head_or_exit(ROOT)
    if "--causal" in sys.argv[1:]:
        from simulator.calibration import topk_flashinfer_causal_h200 as C

        again = [s for s in C.CAUSAL if s in committed_topk()]
        if again:
            raise SystemExit(f"prompts already measured: {again}")
        res = C.predict(load_hardware("H200"))
        res["model_commit"] = commit
        res.to_csv(F.DATA_DIR / C.PREDICTION, index=False, float_format="%.4f")
        print(f"{len(res)} prompts priced at {commit[:10]} -> {F.DATA_DIR / C.PREDICTION}")
        print(res[["dist", "n", "regime", "priced_rows", "priced_n", "fi_path", "pred_us"]].round(1).to_string(index=False))
        return
    again = [s for s in SHAPES if s in committed_topk()]
    if again:
        raise SystemExit(f"shapes already measured: {again}")
    assert len(set(SHAPES)) == len(SHAPES) and all(n > 2048 for _, _, n in SHAPES)
    h200, h100 = load_hardware("H200"), load_hardware("H100-SXM")
    t = G7.frame(SHAPES, False, h200.units)
    t["pred_us"] = G12.predict(t, h200)
    t["pred_main_us"] = t["pred_us"]          # the launch_columns writer's two price columns: one model here
    t["pred_h100_us"] = G12.predict(t, h100)
    t["fi_path"] = G10.path_of(t)
    t["regime"] = G12.regime(t["kernel"], t["rows"], t["n"], t["fi_path"], h200.units)
    res = G10.launch_columns(t, h200, None, extra=("pred_h100_us",))
    res = res.drop(columns=["pred_main_us"])
    res["model_commit"] = commit
    res.to_csv(OUT, index=False, float_format="%.4f")
    print(f"{len(res)} rows ({len(SHAPES)} shapes x 2 transforms) priced at {commit[:10]} -> {OUT}")
    print(res.groupby("regime")[["pred_us", "pred_h100_us"]].agg(["size", "median"]).round(2).to_string())


if __name__ == "__main__":
    main()
