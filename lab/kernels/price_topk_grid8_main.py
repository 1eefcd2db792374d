"""Grid 8 (simulator/calibration/topk_engines.py GRID8) priced by the model at main a6875d8 (the product's price before
the prefill entry, the closed-loop knee and the split handshake):

    git archive a6875d8 | tar -x -C EXPORT
    python lab/kernels/price_topk_grid8_main.py EXPORT simulator/calibration/topk_engines.py OUT.csv

EXPORT's simulator and hwmodels are imported (checked); GRID8 and GRID8_SGL_CONTROLS are read from the file given.
Writes pred_main_us: SGLang's controls by main's SGLang model, TensorRT-LLM by main's product price
(topk_trtllm.add_priced_ops through its calibration's predict_trtllm: the decode dispatch, which main's product used
for prefill launches too).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from topk_main_pricing import price_controls_and_trtllm  # noqa: E402


def main(export: str, grid_file: str, out: str) -> None:
    price_controls_and_trtllm(export, grid_file, out, "GRID8_PREFILL = (", "GRID8_PREDICTION", "GRID8", "GRID8_SGL_CONTROLS")


if __name__ == "__main__":
    main(*sys.argv[1:4])
