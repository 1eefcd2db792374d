"""Grid 10 (simulator/calibration/topk_engines.py GRID10) priced by the model at main 46789a6 (the product's price before
a 1024-thread CTA was alone on its SM, topk_trtllm.WIDE_ALONE):

    git archive 46789a6 | tar -x -C EXPORT
    python lab/kernels/price_topk_grid10_main.py EXPORT simulator/calibration/topk_engines.py OUT.csv

EXPORT's simulator and hwmodels are imported (checked); GRID10 and GRID10_SGL_CONTROLS are read from the file given.
Writes pred_main_us: SGLang's controls by main's SGLang model, TensorRT-LLM by main's product price
(topk_trtllm.add_priced_ops through its calibration's predict_trtllm: the decode dispatch).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from topk_main_pricing import price_controls_and_trtllm  # noqa: E402


def main(export: str, grid_file: str, out: str) -> None:
    price_controls_and_trtllm(export, grid_file, out, "GRID10_WIDE_MULTI = (",
                              "GRID10_PREDICTION", "GRID10", "GRID10_SGL_CONTROLS")


if __name__ == "__main__":
    main(*sys.argv[1:4])
