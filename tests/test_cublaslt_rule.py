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
    for key in ("split_count", "bytes_per_cta", "no_split_tiles", "unsplit_max_ctas"):
        assert rule[key] == fitted[key], key


def test_tile_cut_is_the_fewest_misclassified_observations(tmp_path):
    # a synthetic notes file: at M 1, splits at N 256-4096 (4-64 tiles), none at N 8192+; one contrary row at N 10240
    lines = []
    for kern in ("bf16", "fp8_tensorwise"):
        for m in (1, 48):
            for n, split in ((256, True), (1024, True), (4096, True), (8192, False), (10240, True), (14336, False),
                             (28672, False)):
                red = " | void cublasLt::splitKreduce_kernel<32>(x) grid [1, 1, 1]" if split else ""
                lines.append(f"kernels {kern} (M {m}, K 8192, N {n}): nvjet_sm90_tst_64x8_64x16_4x1_v_bz"
                             f"{'_splitK' if split else ''}_TNT grid [4, 8, 1] block [384, 1, 1]{red}")
    lines.append("kernels bf16 (M 1, K 8192, N 57344): nvjet_sm90_tst_64x8_64x16_2x1_v_bz_TNT grid [2, 66, 1] x")
    f = tmp_path / "notes.txt"
    f.write_text("\n".join(lines) + "\n")
    r = R.tile_rule([f], split_row_bytes=5418.5)
    assert r["no_split_tiles"]["fp8"]["large"] == 128      # split iff tiles < 128: 1 miss (N 10240)
    assert r["unsplit_max_ctas"] == 132


def test_rule_stops_splitting_at_many_tiles_and_fills_the_sms_unsplit():
    # cuBLASLt runs large-N decode GEMMs unsplit on ~132 CTAs (fresh3: bf16 K 4096 x N 28672 at M 1, grid 2 x 66)
    big = CL.derive("bf16", 1, 4096, 28672)
    assert big.split_k == 0 and big.ctas == CL._rule()["unsplit_max_ctas"]
    # few tiles, long K row: split, weight bytes shared over the CTAs
    assert CL.derive("bf16", 1, 7168, 1024).split_k == 4
    # unsplit, fewer tiles than SMs: one CTA per 64-wide tile (fresh3: bf16 K 512 x N 4096 at M 1, 64 CTAs)
    assert CL.derive("bf16", 1, 512, 4096).ctas == 64


def test_rule_splits_by_k_row_bytes_and_shares_weight_bytes():
    # K row 14336 B (bf16 K 7168) splits into 4 at M <= 32; 2048 B (fp8 K 2048) does not
    assert CL.derive("bf16", 1, 7168, 3072).split_k == 4
    assert CL.derive("fp8", 1, 2048, 4096).split_k == 0
    # the same weight bytes per CTA whatever N, until the 72-CTA cap
    a, b = CL.derive("fp8", 1, 7168, 512).ctas, CL.derive("fp8", 1, 7168, 1024).ctas
    assert b == 2 * a
    assert CL.derive("bf16", 1, 8192, 4096).ctas == 72
    assert CL.derive("bf16", 65, 4096, 4096) is None          # beyond M 64: full-device pricing


def test_plan_prefers_the_table_and_covers_the_rest():
    ctas, split, tab, der = CL.plan("fp8", np.array([1.0, 1.0, 128.0]), np.array([7168.0, 5120.0, 5120.0]),
                                    np.array([256.0, 384.0, 384.0]))
    assert tab.tolist() == [True, False, False] and der.tolist() == [False, True, False]
    assert ctas[0] == CL.select("fp8", 1, 7168, 256).ctas
    _, _, tab2, der2 = CL.plan("fp8", np.array([1.0]), 5120.0, 384.0, rule=False)
    assert not tab2[0] and not der2[0]


def test_serial_steps_without_split_walk_all_of_k():
    s = CL.serial_steps(np.array([0, 4]), np.array([16, 32]), 7168.0, 1024.0, 1.0)
    assert s[0] == 56                                          # 7168 / 128 fp8 K steps, one tile per CTA
    assert s[1] == 16 * 56 / 32                                # 16 tiles x 56 steps over 32 CTAs
    # unsplit with more tiles than CTAs (persistent 132 CTAs over 448 tiles): 4 tiles' K walks each
    assert CL.serial_steps(np.array([0]), np.array([132]), 4096.0, 28672.0, 2.0)[0] == 4 * 64


def test_holdout_shapes_match_the_measurement_script_and_are_new():
    import ast
    from pathlib import Path
    # lab/ beside tests/ (the checkout; CI copies both next to the installed package)
    src = (Path(__file__).resolve().parents[1] / "lab" / "kernels" / "measure_production_kernels.py").read_text()
    tree = ast.parse(src)
    vals = {t.id: ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
            for t in n.targets if isinstance(t, ast.Name) and t.id in ("FRESH3_GEMM_KN", "FRESH3_GEMM_M")}
    assert [tuple(x) for x in vals["FRESH3_GEMM_KN"]] == H.FRESH3_KN and vals["FRESH3_GEMM_M"] == H.FRESH3_M
    import csv
    seen = set()
    for f in R.DATA_DIR.glob("production_kernels_nvidia*.csv"):
        # the fifth fp8 set, measured after this one, reuses real layers' (K, N) at M no earlier set measured (its
        # shapes are new as (kernel, M, K, N): test_production_kernels.py checks that)
        if "_fresh3" in f.name or "_blind5" in f.name or "_h200gemm" in f.name:   # the H200 GEMM transfer grid
            continue   # re-measured these sets' shapes on another device afterwards (by design)
        seen |= {(int(r["k"]), int(r["n"])) for r in csv.DictReader(f.open()) if r["family"] == "gemm"}
    assert not seen & set(H.FRESH3_KN)


def _step(device: str, batch: float):
    from hwmodels.roofline import price
    from hwmodels.spec import load_hardware
    from simulator.combo import make_combo
    from simulator.pricing import decode_ops
    hw = load_hardware(device)
    combo = make_combo(hw, "Llama-3.1-8B", kv_dtype="bf16", weight_dtype="bf16", launch="graph", kernels="unfused")
    ops, _ = decode_ops(combo, np.array([batch]), np.array([4097.0]))
    t = price(ops, hw, "graph")
    names = np.array(ops.names)[ops.name_id]
    return combo, names, t


def test_serving_op_model_switch_is_off_and_keeps_full_device_pricing():
    # the data file's serving_op_model switch is off (its comment says why): no device prices small-M GEMMs by the
    # table in the serving op model, and no split-K reduce kernel appears in a decode step
    from simulator.kernels import cublaslt as CL
    assert CL.serving_op_model() is False
    for dev in ("H100-SXM", "H200"):
        combo, names, _ = _step(dev, 1.0)
        assert not combo.small_m_gemm
        assert not np.char.endswith(names.astype(str), "_splitk_reduce").any()


def test_serving_op_model_uses_small_m_pricing_on_the_h100_only(monkeypatch):
    # with the switch on, the H100 (the table's device, its own fitted chain terms) and nothing else
    from simulator.kernels import cublaslt as CL
    monkeypatch.setattr(CL, "serving_op_model", lambda path=None: True)
    combo, names, t = _step("H100-SXM", 1.0)
    assert combo.small_m_gemm
    red = np.char.endswith(names.astype(str), "_splitk_reduce")
    assert red.any() and t[red].sum() > 0                        # o_proj etc. split at M 1
    for dev in ("H200", "H100-PCIe"):                             # measured elsewhere / borrowed terms: unchanged
        combo2, names2, t2 = _step(dev, 1.0)
        assert not combo2.small_m_gemm
        assert not np.char.endswith(names2.astype(str), "_splitk_reduce").any()
    _, names3, t3 = _step("H100-SXM", 128.0)                     # M > 64: one full-device kernel
    red3 = np.char.endswith(names3.astype(str), "_splitk_reduce")
    assert t3[red3].sum() == 0


def test_wave_fixed_time_replaces_the_kinds_fixed_time_for_wave_priced_ops_only():
    from dataclasses import replace

    from hwmodels.roofline import price
    from hwmodels.spec import load_hardware
    from simulator.ops import OpBuilder
    hw = load_hardware("H100-SXM")
    b = OpBuilder(1)
    b.add("small", "gemm", flops=2.0 * 4096 * 4096, bytes_read=4096 * 4096 * 2.0, bytes_written=8192.0,
          parallel_units=64.0, serial_iters=64.0)
    b.add("full", "gemm", flops=2.0 * 4096 * 4096, bytes_read=4096 * 4096 * 2.0, bytes_written=8192.0)
    ops = b.build()
    e = hw.efficiency
    assert e.wave_fixed_s.get("gemm", 0) > 0 and e.cta_slots.get("gemm", 0) > 0   # the fitted small-M terms
    t1 = price(ops, hw, "graph")
    t0 = price(ops, hw.with_efficiency(replace(e, wave_fixed_s={})), "graph")
    assert np.isclose(t0[0] - t1[0], e.fixed_s["gemm"] - e.wave_fixed_s["gemm"])   # the wave-priced op's own
    assert t0[1] == t1[1]                                                         # the full-device op unchanged


def test_blind4_shapes_match_the_measurement_script_and_are_new():
    import ast
    import csv
    from pathlib import Path
    src = (Path(__file__).resolve().parents[1] / "lab" / "kernels" / "measure_gemm_graph_launch.py").read_text()
    vals = {t.id: ast.literal_eval(n.value) for n in ast.parse(src).body if isinstance(n, ast.Assign)
            for t in n.targets if isinstance(t, ast.Name) and t.id in ("BLIND4_KN", "BLIND4_M")}
    assert [tuple(x) for x in vals["BLIND4_KN"]] == H.BLIND4_KN and vals["BLIND4_M"] == H.BLIND4_M
    seen = set()
    for f in R.DATA_DIR.glob("production_kernels_nvidia*.csv"):
        if "_blind4" not in f.name and "_h200gemm" not in f.name:   # (the H200 re-run of this set, afterwards)
            seen |= {(int(r["k"]), int(r["n"])) for r in csv.DictReader(f.open()) if r["family"] == "gemm"}
    assert not seen & set(H.BLIND4_KN)
