"""cuBLASLt's observed small-M GEMM selection (simulator/kernels/cublaslt.py + kernels/data/cublaslt_small_m.yaml)."""
import re

import numpy as np
import pytest

from hwmodels import datafiles as DF
from hwmodels.errors import SparsesimError
from simulator.calibration import fit_production_topk_gemm as FP
from simulator.kernels import cublaslt as CL
from simulator.ops import OpBuilder

NOTES = FP.DATA_DIR / "production_kernels_nvidia-h100-80gb-hbm3_2026-11-26_fresh_notes.txt"
LINE = re.compile(r"kernels (bf16|fp8_tensorwise) \(M (\d+), K (\d+), N (\d+)\): \S+ grid \[(\d+), (\d+), (\d+)\]")


def test_table_reproduces_the_observations_it_was_read_from():
    seen = 0
    for line in DF.read_text(NOTES).splitlines():
        m = LINE.match(line)
        if not m:
            continue
        kern, M, K, N, gx, gy, gz = m.groups()
        s = CL.select("fp8" if kern == "fp8_tensorwise" else "bf16", int(M), int(K), int(N))
        assert s is not None, line[:80]
        assert s.ctas == int(gx) * int(gy) * int(gz), line[:120]
        assert (s.split_k > 0) == ("splitKreduce" in line), line[:120]
        seen += 1
    assert seen == 42


def test_outside_the_observed_ranges_falls_back():
    assert CL.select("fp8", 128, 7168, 256) is None          # M beyond 64
    assert CL.select("fp8", 1, 5120, 384) is None            # K between the observed buckets
    assert CL.select("bf16", 1, 7168, 3072) is None          # N beyond 2304
    assert CL.select("fp8", 1, 7168, 256).ctas == 8


def test_reduce_only_where_split_and_few_ctas_cost_more():
    b = OpBuilder(3)
    cov = CL.add_gemm(b, "g", "gemm_fp8", "fp8", np.array([1.0, 64.0, 256.0]), 7168.0, 2304.0, 1.0, 1.0, 1.0)
    assert cov.tolist() == [True, True, False]
    ops = b.build()
    assert ops.names == ["g", "g_splitk_reduce"]
    red = ops.name_id == 1                                      # the reduce runs for M 1 only (M 64 does not split)
    assert ops.setting[red].tolist() == [0]
    assert ops.setting[~red].tolist() == [0, 1]                 # M 256: not covered, the caller prices it
    from hwmodels.spec import load_hardware
    hw = load_hardware("H100-SXM")
    g = FP.gemm_frame(FP.pd.DataFrame([{"family": "gemm", "kernel": "fp8_tensorwise", "dist": "", "rows": 1,
                                        "n": 256, "k": 7168}]))
    few = FP.predict_gemm_us(g, hw, hw.efficiency)[0]
    g["m"] = 128.0                                              # same bytes, fallback: the whole device streams them
    assert few > FP.predict_gemm_us(g, hw, hw.efficiency)[0]


def test_bad_entry_is_a_user_error(tmp_path):
    p = tmp_path / "t.yaml"
    p.write_text("entries:\n  - {dtype: fp16, m: [1, 4], k: [1, 2], n: [1, 2], split_k: 0, grid_x: 1, "
                 "y_per_128n: 1.0, kernel: x}\n")
    with pytest.raises(SparsesimError, match="dtype"):
        CL._entries(str(p))


def test_small_m_off_prices_decode_rows_as_the_serving_op_model():
    # predict_gemm_us(small_m=False): a decode-sized bf16 / per-tensor row is one kernel filling the device, as
    # simulator/layers.py prices it while cuBLASLt's small-M switch is off (cublaslt.priced_on); the default keeps the
    # kernel families' small-M model (the row's CTAs walking serial K steps); rows above M 64 do not change
    import pandas as pd

    from hwmodels.roofline import price
    from hwmodels.spec import load_hardware

    hw = load_hardware("H100-SXM")
    assert not CL.priced_on(hw)
    g = FP.gemm_frame(pd.DataFrame({"family": "gemm", "kernel": ["bf16", "fp8_tensorwise", "bf16"], "dist": "",
                                    "rows": [1, 24, 512], "n": [7168, 5120, 7168], "k": [5120, 5120, 5120]}))
    kern = FP.predict_gemm_us(g, hw, hw.efficiency)
    serv = FP.predict_gemm_us(g, hw, hw.efficiency, small_m=False)
    b = OpBuilder(1)
    b.add("g", "gemm", flops=2.0 * 1 * 5120 * 7168, bytes_read=5120 * 7168 * 2.0 + 5120 * 2.0,
          bytes_written=7168 * 2.0, dtype="bf16")
    assert serv[0] == pytest.approx(price(b.build(), hw, "graph").sum() * 1e6)
    assert abs(kern[0] / serv[0] - 1.0) > 0.02 and abs(kern[1] / serv[1] - 1.0) > 0.02
    assert kern[2] == pytest.approx(serv[2])
