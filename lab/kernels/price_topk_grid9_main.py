"""Grid 9 (simulator/calibration/topk_engines.py GRID9) priced by the model at main ca60389 (the product's price before
the 1024-thread round cost and the narrow CTAs' sort share):

    git archive ca60389 | tar -x -C EXPORT
    python lab/kernels/price_topk_grid9_main.py EXPORT simulator/calibration/topk_engines.py OUT.csv

EXPORT's simulator and hwmodels are imported (checked); GRID9 and GRID9_SGL_CONTROLS are read from the file given.
Writes pred_main_us: SGLang's controls by main's SGLang model, TensorRT-LLM by main's product price
(topk_trtllm.add_priced_ops through its calibration's predict_trtllm: the decode dispatch).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from topk_main_pricing import price_controls_and_trtllm  # noqa: E402


def main(export: str, grid_file: str, out: str) -> None:
    price_controls_and_trtllm(export, grid_file, out, "GRID9_WIDE = (", "GRID9_PREDICTION", "GRID9", "GRID9_SGL_CONTROLS")


if __name__ == "__main__":
    main(*sys.argv[1:4])
