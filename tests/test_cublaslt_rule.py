"""The structural small-M rule (simulator/kernels/cublaslt.py derive / plan / serial_steps) and its fit."""
import numpy as np

from simulator.calibration import fit_cublaslt_rule as R
from simulator.calibration import small_m_gemm_holdout as H
from simulator.kernels import cublaslt as CL


def test_rule_block_is_what_the_fit_derives_from_the_table_source():
    fitted = R.fit()
    rule = CL._rule()
    for key in ("max_m", "m_small_max", "max_ctas", "split_row_bytes"):
        assert rule[key] == fitted[key], key
    for key in ("split_count", "bytes_per_cta", "large_m_no_split_n"):
        assert rule[key] == fitted[key], key


def test_rule_splits_by_k_row_bytes_and_shares_weight_bytes():
    # K row 14336 B (bf16 K 7168) splits into 4 at M <= 32; 2048 B (fp8 K 2048) does not
    assert CL.derive("bf16", 1, 7168, 3072).split_k == 4
    assert CL.derive("fp8", 1, 2048, 4096).split_k == 0
    # the same weight bytes per CTA whatever N, until the 72-CTA cap
    a, b = CL.derive("fp8", 1, 7168, 512).ctas, CL.derive("fp8", 1, 7168, 1024).ctas
    assert b == 2 * a
    assert CL.derive("bf16", 1, 8192, 57344).ctas == 72
    assert CL.derive("bf16", 65, 4096, 4096) is None          # beyond M 64: full-device pricing


def test_plan_prefers_the_table_and_covers_the_rest():
    ctas, split, tab, der = CL.plan("fp8", np.array([1.0, 1.0, 128.0]), np.array([7168.0, 5120.0, 5120.0]),
                                    np.array([256.0, 384.0, 384.0]))
    assert tab.tolist() == [True, False, False] and der.tolist() == [False, True, False]
    assert ctas[0] == CL.select("fp8", 1, 7168, 256).ctas
    _, _, tab2, der2 = CL.plan("fp8", np.array([1.0]), 5120.0, 384.0, rule=False)
    assert not tab2[0] and not der2[0]


def test_serial_steps_without_split_walk_all_of_k():
    s = CL.serial_steps(np.array([0, 4]), np.array([12, 32]), 7168.0, 1024.0, 1.0)
    assert s[0] == 56                                          # 7168 / 128 fp8 K steps
    assert s[1] == 16 * 56 / 32                                # 16 tiles x 56 steps over 32 CTAs


def test_holdout_shapes_match_the_measurement_script_and_are_new():
    import ast
    src = (R.DATA_DIR.parents[3] / "lab" / "kernels" / "measure_production_kernels.py").read_text()
    tree = ast.parse(src)
    vals = {t.id: ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
            for t in n.targets if isinstance(t, ast.Name) and t.id in ("FRESH3_GEMM_KN", "FRESH3_GEMM_M")}
    assert [tuple(x) for x in vals["FRESH3_GEMM_KN"]] == H.FRESH3_KN and vals["FRESH3_GEMM_M"] == H.FRESH3_M
    import csv
    seen = set()
    for f in R.DATA_DIR.glob("production_kernels_nvidia*.csv"):
        if "_fresh3" in f.name:
            continue
        seen |= {(int(r["k"]), int(r["n"])) for r in csv.DictReader(f.open()) if r["family"] == "gemm"}
    assert not seen & set(H.FRESH3_KN)
