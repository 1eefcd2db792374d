"""Grid 11 (simulator/calibration/topk_engines.py GRID11) priced by the model at main 06e70f8 (the product's price
before the split path's fixed stretch and the later lone CTAs' share, topk_trtllm.SPLIT_FIXED_ROUNDS / LATER_CTA_SHARE):

    git archive 06e70f8 | tar -x -C EXPORT
    python lab/kernels/price_topk_grid11_main.py EXPORT simulator/calibration/topk_engines.py OUT.csv

EXPORT's simulator and hwmodels are imported (checked); GRID11_* are read from the file given. Writes pred_main_us:
SGLang's controls by main's SGLang model, TensorRT-LLM by main's product price (topk_trtllm.add_priced_ops through its
calibration's predict_trtllm: the decode dispatch, the prefill entry's launch for trt_topk_pf rows).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from topk_main_pricing import price_controls_and_trtllm  # noqa: E402


def main(export: str, grid_file: str, out: str) -> None:
    price_controls_and_trtllm(export, grid_file, out, "GRID11_WIDE = (",
                              "GRID11_PREDICTION", "GRID11", "GRID11_SGL_CONTROLS", prefill="GRID11_PREFILL_MID")


if __name__ == "__main__":
    main(*sys.argv[1:4])
