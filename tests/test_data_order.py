"""lab/kernels/data_order.txt: the commit order of the CSVs new grids are checked against (gemm_grid_pricing)."""
from __future__ import annotations

import sys
from pathlib import Path

LAB = Path(__file__).resolve().parents[1] / "lab" / "kernels"
sys.path.insert(0, str(LAB))


def test_every_csv_is_listed_in_commit_order():
    import data_order as O

    missing = sorted(O.listed_csvs() - set(O.positions()))
    assert not missing, f"commit these CSVs, then run `python lab/kernels/data_order.py --write`: {missing[:5]}"
    pos = O.positions()
    # the DeepGEMM decode-2 grid was committed before cuBLASLt's grid 5, which reuses one of its shapes
    assert pos["deepgemm_gemm_decode2_nvidia-h100-80gb-hbm3_2026-11-27.csv"] < pos[
        "cublaslt_block_grid5_prediction_cc8d66a_2026-11-27.csv"]


def test_an_older_grid_is_checked_only_against_files_committed_before_it():
    from gemm_grid_pricing import committed_grids

    shape = (8, 7168, 1024)   # decode-2's shape that cuBLASLt's grid 5 measured again, later
    before = set()
    for d in committed_grids("deepgemm_gemm_decode2"):
        before |= set(zip(d["rows"].astype(int), d["k"].astype(int), d["n"].astype(int)))
    later = set()
    for d in committed_grids("a_grid_not_committed_yet"):
        later |= set(zip(d["rows"].astype(int), d["k"].astype(int), d["n"].astype(int)))
    assert shape not in before and shape in later and before < later
