"""torch's own RMSNorm kernel (`F.rms_norm` on CUDA, bf16 with a weight; the report's `elementwise:rmsnorm` row).

Structure, from aten/src/ATen/native/cuda/layer_norm_kernel.cu (read at pytorch/pytorch @ 0005c538, the layer-norm
kernels torch's fused RMSNorm reuses through a `rms_norm` template flag in torch 2.11; that flag's version was not
readable here, the launch and the loops below are the same code):
  launch_vectorized_layer_norm_kernel   grid = M blocks (one block per row), block = (warp 32, num_threads() / 32)
                                        = 128 threads on CUDA (thread_constants.h), vec_size = 4 elements per load
  compute_stats                         pass 1: each thread walks the row in 4-element vectors, stride 128 x 4 = 512
                                        elements per round (ROW_ROUND), then a warp-shuffle + shared-memory reduction
  vectorized_layer_norm_kernel_impl     pass 2: the same walk re-reads the row (and the weight), writes the output
So one row is a serial chain of ceil(n / 512) rounds per pass; 128-thread blocks fit BLOCKS_PER_SM = 16 to an SM
(2048 threads per SM on sm_90), so rows run in waves of SMs x 16; each round's loads of all resident blocks queue at
memory: a round costs its lone latency plus the in-flight bytes over the stream rate, i.e. over a wave
  T = T0 + waves x ceil(n / 512) x ROUND + HBM bytes / STREAM,   waves = ceil(ceil(rows / SMs) / 16)
with HBM bytes = the rows read + the weight + the output written, less the output the L2 keeps: the timed call's
output comes from torch's caching allocator, the same block each call, so an output of up to L2_OUT_SHARE x L2 is
overwritten in L2 and never written back (the candidate `cand`); `nol2` writes every output byte.

T0, ROUND, STREAM (and L2_OUT_SHARE) are fitted on the 14 rows of measure.py's campaign (H100, 2026-11-22: rows
1..16384 x hidden 4096 / 14336), the rows the report's row is judged on: looked-at. The blind check is grid 1
(GRID: hidden 1536..16384 at 1..16384 rows, no shape of the campaign), priced before its measurement
(torch_rmsnorm_grid1_prediction_2026-11-27.csv, commit 2f43740) and timed on the H100 2026-11-27: CAND met 2 of 3
regimes (lone 9.2 / 12.8 %, stream 9.0 / 22.1 %; mid 14.5 / 20.0 % too fast), main's builder 0 of 3 (28.7-50.9 %
median), so fit.errors prices the campaign's rows with CAND (SHIPPED). The profiler confirmed the launch:
vectorized_layer_norm_kernel<BFloat16, float, true>, grid = rows, block 32 x 4, 27 registers. Other devices: T0 and ROUND as measured on the H100 (the H200's lone rows
match them), STREAM scaled by the datasheet HBM ratio (a transfer, never fitted there).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

#: source constants (layer_norm_kernel.cu @ 0005c538 launch_vectorized_layer_norm_kernel, thread_constants.h)
THREADS = 128
VEC = 4
ROW_ROUND = THREADS * VEC          # elements one block walks per round of a pass
BLOCKS_PER_SM = 16                 # 2048 resident threads per SM (sm_90) / 128
H100_HBM_BPS = 3.35e12             # the H100 SXM datasheet (hwmodels/specs), the fit's device
H100_SMS = 132
H100_L2 = 50 * 2**20

#: fitted on the 14 looked-at campaign rows (log least squares, /tmp fit; see module docstring)
CAND = {"t0_us": 1.816, "round_us": 0.4180, "stream_bps": 2.214e12, "l2_out_share": 0.1999}
#: the same without the L2 keeping the output (every output byte written to HBM)
NOL2 = {"t0_us": 1.482, "round_us": 0.4123, "stream_bps": 2.511e12, "l2_out_share": 0.0}


def describe(consts: dict) -> str:
    """The constants in words (the report's section prints them)."""
    return (f"T0 {consts['t0_us']:.3f} us, ROUND {consts['round_us']:.4f} us, STREAM {consts['stream_bps'] / 1e12:.3f} "
            f"TB/s, L2 output share {consts['l2_out_share']:.2f}")


def rmsnorm_us(rows, n, consts=CAND, sms: int = H100_SMS, l2_bytes: float = H100_L2,
               hbm_bps: float = H100_HBM_BPS) -> np.ndarray:
    """Predicted time (us) of one F.rms_norm call over `rows` x `n` bf16 with a bf16 weight."""
    rows = np.asarray(rows, dtype=float)
    n = np.asarray(n, dtype=float)
    rounds = np.ceil(n / ROW_ROUND)
    waves = np.ceil(np.ceil(rows / sms) / BLOCKS_PER_SM)
    out = 2.0 * rows * n
    written = np.maximum(0.0, out - consts["l2_out_share"] * l2_bytes)
    stream = consts["stream_bps"] * hbm_bps / H100_HBM_BPS
    return consts["t0_us"] + waves * rounds * consts["round_us"] + (2.0 * rows * n + 2.0 * n + written) / stream * 1e6


#: grid 1: (rows, hidden) in no earlier campaign (the campaign: rows 1..16384 x hidden 4096 / 14336)
GRID = [
    # lone rows: at most one block per SM
    (1, 2048), (1, 5120), (1, 7168), (1, 16384), (4, 12288), (8, 3584), (16, 16384), (32, 1536), (64, 2048),
    (96, 8192), (128, 5120),
    # mid: one wave, 2..16 blocks per SM
    (192, 7168), (384, 3584), (512, 16384), (640, 12288), (768, 2048), (1200, 1536), (1536, 5120), (2048, 8192),
    # stream: several waves
    (2560, 16384), (3072, 7168), (5000, 12288), (6144, 2048), (8192, 5120), (10240, 1536), (12288, 3584),
    (16384, 8192),
]
#: controls: campaign shapes, re-timed to tie the day's device to the campaign (not blind)
CONTROLS = [(1, 4096), (1024, 4096), (16384, 14336)]


#: the device the constants were fitted on (its campaign rows are looked-at; another device's rows are a transfer)
FIT_DEVICE = "H100-SXM"


def report_part(hw_name: str) -> str:
    """The report's part label of a device's campaign rows under this form."""
    return "looked-at" if hw_name == FIT_DEVICE else "transfer"


def regime(rows, sms: int = H100_SMS) -> str:
    m = int(np.ceil(rows / sms))
    return "lone" if m <= 1 else ("mid" if m <= BLOCKS_PER_SM else "stream")


# ---------------------------------------------------------------------------------------------------------------
# grid 1: prices committed at PREDICTION_COMMIT, timed on the H100 2026-11-27 (lab/kernels/measure_torch_rmsnorm.py)
# ---------------------------------------------------------------------------------------------------------------
PREDICTION_COMMIT = "2f43740"
GRID1_PREDICTION = "production_kernels/torch_rmsnorm_grid1_prediction_2026-11-27.csv"
GRID1_MEASURED = "production_kernels/torch_rmsnorm_grid1_nvidia-h100-80gb-hbm3_2026-11-27.csv"
GRID1_COLUMNS = ("rows", "n", "kind", "regime", "median_us", "pred_main_us", "pred_cand_us", "pred_nol2_us")
#: the model the report's row ships after grid 1: "cand" (CAND, the primary candidate named before measuring)
#: or "main" (the builder's one elementwise op); NOL2 is kept as a named, not-shipped variant
SHIPPED = "cand"
MODELS = (("main", "pred_main_us"), ("cand", "pred_cand_us"), ("nol2", "pred_nol2_us"))
REGIMES = ("lone", "mid", "stream")
GOAL_MEDIAN, GOAL_P90 = 10.0, 25.0


def measured1() -> pd.DataFrame:
    """Grid 1's measured rows with the committed prices (30: 27 blind + 3 campaign controls) and signed errors."""
    from hwmodels import datafiles as DF
    from hwmodels.calibration import DATA_DIR

    with DF.open_text(DATA_DIR / GRID1_MEASURED) as f:
        m = pd.read_csv(f)
    missing = [c for c in GRID1_COLUMNS if c not in m.columns]
    if missing:
        raise ValueError(f"{GRID1_MEASURED}: missing columns {missing}")
    for name, col in MODELS:
        m[f"err_{name}"] = (m[col] / m["median_us"] - 1) * 100
    return m


def grid1_accuracy(m: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per regime (blind rows) and model: n, |error| median / p90, signed median, met (median <= 10, p90 <= 25)."""
    m = measured1() if m is None else m
    b = m[m["kind"] == "blind"]
    out = []
    for reg in REGIMES + ("pooled",):
        r = b if reg == "pooled" else b[b["regime"] == reg]
        row = {"regime": reg, "n": len(r)}
        for name, _ in MODELS:
            e = r[f"err_{name}"].to_numpy()
            med, p90 = float(np.median(np.abs(e))), float(np.percentile(np.abs(e), 90))
            row.update({f"{name}_med": med, f"{name}_p90": p90, f"{name}_signed": float(np.median(e)),
                        f"{name}_met": "" if reg == "pooled" else ("yes" if med <= GOAL_MEDIAN and p90 <= GOAL_P90
                                                                 else "no")})
        out.append(row)
    return pd.DataFrame(out)


def grid1_measured_path():
    """The grid-1 measurement file's path (the report's section prints nothing where it is absent)."""
    from hwmodels import datafiles as DF
    from hwmodels.calibration import DATA_DIR

    return DF.resolve(DATA_DIR / GRID1_MEASURED)
