"""Grid 13 (simulator/calibration/topk_engines.py GRID13) priced by the model at main 08cf44f (the product's price
before the fitted co-resident share of 512-thread CTAs, topk_trtllm.PAIR_SHARES):

    git archive 08cf44f | tar -x -C EXPORT
    python lab/kernels/price_topk_grid13_main.py EXPORT simulator/calibration/topk_engines.py OUT.csv

EXPORT's simulator and hwmodels are imported (checked); GRID13_* are read from the file given. Writes pred_main_us:
SGLang's controls by main's SGLang model, TensorRT-LLM by main's product price (topk_trtllm.add_priced_ops through its
calibration's predict_trtllm: the decode dispatch, the prefill entry's launch for trt_topk_pf rows).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from topk_main_pricing import price_controls_and_trtllm  # noqa: E402


def main(export: str, grid_file: str, out: str) -> None:
    price_controls_and_trtllm(export, grid_file, out, "GRID13_SINGLE512 = (",
                              "GRID13_PREDICTION", "GRID13", "GRID13_SGL_CONTROLS", prefill="GRID13_PREFILL")


if __name__ == "__main__":
    main(*sys.argv[1:4])
