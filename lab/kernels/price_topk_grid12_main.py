"""Grid 12 (simulator/calibration/topk_engines.py GRID12) priced by the model at main ea0997d (the product's price
before the register-limited residency of 512-thread CTAs, topk_trtllm.REG_RESIDENT):

    git archive ea0997d | tar -x -C EXPORT
    python lab/kernels/price_topk_grid12_main.py EXPORT simulator/calibration/topk_engines.py OUT.csv

EXPORT's simulator and hwmodels are imported (checked); GRID12_* are read from the file given. Writes pred_main_us:
SGLang's controls by main's SGLang model, TensorRT-LLM by main's product price (topk_trtllm.add_priced_ops through its
calibration's predict_trtllm: the decode dispatch, the prefill entry's launch for trt_topk_pf rows).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from topk_main_pricing import price_controls_and_trtllm  # noqa: E402


def main(export: str, grid_file: str, out: str) -> None:
    price_controls_and_trtllm(export, grid_file, out, "GRID12_SPLIT512 = (",
                              "GRID12_PREDICTION", "GRID12", "GRID12_SGL_CONTROLS", prefill="GRID12_PREFILL")


if __name__ == "__main__":
    main(*sys.argv[1:4])
