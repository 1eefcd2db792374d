"""Calibration never corrupts: generated bad calibration CSVs through `sparsesim calibrate fit*`.

Every case must exit 2 through simulator.cli.main with ONE line on stderr naming the file, no traceback,
nothing written into the fitted folder, and the committed fitted files untouched (checked by hash). Then
the refusal bounds (a fit whose held-out error is beyond its bound, or whose parameters leave their
physical ranges, is refused) and D16 (a fit never depends on a previously loaded fitted file)."""
from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from hwmodels import datafiles as DF
from hwmodels.calibration import DATA_DIR
from hwmodels.spec import FITTED_DIR, FITTED_ENV
from simulator.cli import main

H100 = DF.resolve(DATA_DIR / "nvidia-h100-80gb-hbm3_2026-11-22.csv")
LAT = DF.resolve(DATA_DIR / "latency_nvidia-h100-80gb-hbm3_2026-11-22.csv")
PRE = DATA_DIR / "prefill_attn_nvidia-h100-80gb-hbm3_2026-11-22.csv"
TOPK = DF.resolve(DATA_DIR / "topk_cta_nvidia-h100-80gb-hbm3_2026-11-22.csv")
REG = DF.resolve(DATA_DIR / "regimes_nvidia-h100-80gb-hbm3_2026-11-22.csv")
LINKS = [DATA_DIR / "nvidia-h200_x2_collectives_2026-11-22.csv", DATA_DIR / "nvidia-h200_x4_collectives_2026-11-22.csv"]


def _hashes() -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(FITTED_DIR.glob("*.yaml"))}


COMMITTED = _hashes()


def _base() -> pd.DataFrame:
    """A small valid measure.py table: copy, reduce, launch, bf16 GEMMs (incl. the held-out llama2 shapes),
    SiLU-mul rows (fits in ~0.1 s)."""
    df = pd.read_csv(H100, dtype=str, keep_default_na=False)
    keep = df.family.isin(["copy", "reduce", "launch"]) | ((df.family == "gemm") & (df.dtype == "bf16")) \
        | ((df.family == "elementwise") & (df.op_kind == "silu_mul"))
    return df[keep].reset_index(drop=True)


def _complete() -> pd.DataFrame:
    """_base plus a third of the cuDNN one-row decode attention and the gather rows (fit and held-out shapes): every
    family `calibrate fit` requires, still small (~250 rows)."""
    df = pd.read_csv(H100, dtype=str, keep_default_na=False)
    att = (df.family == "decode_attn") & (df.backend == "cudnn+gqa_native") & (df.q_rows == "1")
    gat = (df.family == "paged_attn") & (df.op_kind == "gather")
    sub = np.zeros(len(df), bool)
    for m in (att & (df.heads != "64"), att & (df.heads == "64"), gat & (df.page_size != "64"),
              gat & (df.page_size == "64")):
        sub[np.flatnonzero(m)[::3]] = True
    base = df.family.isin(["copy", "reduce", "launch"]) | ((df.family == "gemm") & (df.dtype == "bf16")) \
        | ((df.family == "elementwise") & (df.op_kind == "silu_mul"))
    return df[base | sub].reset_index(drop=True)


def _mutate(df: pd.DataFrame, rows, col: str, value) -> pd.DataFrame:
    out = df.copy()
    out.loc[rows, col] = value
    return out


def _scaled(df: pd.DataFrame, factor: float) -> pd.DataFrame:
    t = pd.to_numeric(df.median_us, errors="coerce") * factor
    return df.assign(median_us=[("" if np.isnan(x) else repr(float(x))) for x in t])


def _measure_cases() -> list[tuple[str, object]]:
    """(case id, file content as DataFrame or raw str/bytes) for `calibrate fit`."""
    b = _base()
    gemm = b.index[b.family == "gemm"]
    timed = b.index[b.median_us != ""]
    first = [int(timed[3])]
    cases: list[tuple[str, object]] = [
        ("empty_file", ""), ("header_only", ",".join(b.columns) + "\n"), ("binary", b"\x00\xff\xfe garbage \x00\n"),
        ("not_csv_prose", "this is not a CSV file at all\njust words\n"),
        ("ragged", ",".join(b.columns) + "\n" + "a,b,c\n" + ",".join(["1"] * (len(b.columns) + 5)) + "\n"),
        ("only_launch", b[b.family == "launch"]), ("one_row", b.loc[[int(gemm[0])]]),
        ("one_family_two_rows", b.loc[[int(gemm[0]), int(gemm[1])]]),
        ("unknown_family", _mutate(b, first, "family", "warp_drive")),
        ("all_unknown_family", b.assign(family="mystery")),
        ("gemm_bad_dtype", _mutate(b, [int(gemm[0])], "dtype", "int3")),
        ("half_negative", _mutate(b, timed[::2], "median_us", "-3.5")),
        ("all_times_x1000", b.assign(median_us=[str(float(x) * 1000) if x else x for x in b.median_us])),
        ("all_times_1e30", b.assign(median_us=[("1e30" if x else x) for x in b.median_us])),
        ("all_times_tiny", b.assign(median_us=[("1e-9" if x else x) for x in b.median_us])),
        ("launch_1e30", _mutate(b, b.index[b.op_kind == "launch_graph"], "median_us", "1e30")),
        ("launch_tiny", _mutate(b, b.index[b.op_kind == "launch_graph"], "median_us", "0.001")),
        ("gemm_shuffled_times", b.assign(median_us=np.where(b.family == "gemm", np.random.default_rng(0).permutation(
            b.median_us.where(b.family == "gemm", "1").to_numpy()), b.median_us))),
    ]
    for v in ("NaN", "nan", "inf", "-inf", "-5", "0", "abc", "1e400", "0x10", "--"):
        cases.append((f"time_{v}", _mutate(b, first, "median_us", v)))
    for col in ("m", "n", "k"):
        for v in ("-1", "0", "NaN", "x", ""):
            cases.append((f"gemm_{col}_{v or 'empty'}", _mutate(b, [int(gemm[2])], col, v)))
    for col in ("device", "family", "op_kind", "dtype", "backend", "median_us"):
        cases.append((f"missing_{col}", b.drop(columns=[col])))
    cases.append(("copy_bytes_negative", _mutate(b, b.index[b.family == "copy"][:1], "bytes", "-100")))
    return cases


def _other_cases(tmp: Path) -> list[tuple[str, list[str], object]]:
    """(case id, argv prefix, content) for fit-links / fit-latency / fit-topk / fit-prefill."""
    links = pd.concat([pd.read_csv(p, dtype=str, keep_default_na=False) for p in LINKS], ignore_index=True)
    lat = pd.read_csv(LAT, dtype=str, keep_default_na=False)
    pre = pd.read_csv(PRE, dtype=str, keep_default_na=False)
    topk = pd.read_csv(TOPK, dtype=str, keep_default_na=False)
    reg = pd.read_csv(REG, dtype=str, keep_default_na=False)
    reg = reg[reg.family.isin(["decode_attn", "launch"])].head(80)
    out = []
    rg = ["fit-regimes", "--device", "H100-SXM"]
    out += [("regimes_header_only", rg, ",".join(reg.columns) + "\n"),
            ("regimes_nan_time", rg, _mutate(reg, [3], "median_us", "NaN")),
            ("regimes_negative_time", rg, _mutate(reg, [5], "median_us", "-1")),
            ("regimes_missing_kernel", rg, reg.drop(columns=["kernel"])),
            ("regimes_no_base_fit", rg, reg)]   # a valid CSV, but no `calibrate fit` file in --fitted-dir
    lk = ["fit-links", "--device", "H200"]
    out += [("links_header_only", lk, ",".join(links.columns) + "\n"),
            ("links_one_gpu_count", lk, links[links.gpus == "2"]),
            ("links_gpus_1", lk, links.assign(gpus="1")),
            ("links_bad_op", lk, _mutate(links, [0], "op", "broadcast")),
            ("links_nan_time", lk, _mutate(links, [3], "median_us", "nan")),
            ("links_negative_bytes", lk, _mutate(links, [2], "bytes", "-8")),
            ("links_missing_op", lk, links.drop(columns=["op"])),
            ("links_times_1e6", lk, _scaled(links, 1e6))]
    lt = ["fit-latency", "--device", "H100-SXM"]
    ps = lat.index[lat.family == "page_scan"]
    out += [("latency_no_chase", lt, lat[lat.family != "chase"]),
            ("latency_no_page_scan", lt, lat[lat.family != "page_scan"]),
            ("latency_inf", lt, _mutate(lat, [int(ps[0])], "median_us", "inf")),
            ("latency_iters_zero", lt, _mutate(lat, ps, "iterations", "0")),
            ("latency_times_1e5", lt, _scaled(lat, 1e5)),
            ("latency_missing_cache", lt, lat.drop(columns=["cache"]))]
    pf = ["fit-prefill", "--device", "H100-SXM"]
    out += [("prefill_no_cudnn", pf, pre[pre.backend != "cudnn"]),
            ("prefill_seq_negative", pf, _mutate(pre, [0], "seq", "-4096")),
            ("prefill_string_time", pf, _mutate(pre, [1], "median_us", "fast")),
            ("prefill_times_1e-4", pf, _scaled(pre, 1e-4)),
            ("prefill_missing_heads", pf, pre.drop(columns=["heads"])),
            ("prefill_header_only", pf, ",".join(pre.columns) + "\n")]
    tk = ["fit-topk", "--device", "H100-SXM"]
    ours = topk.index[topk.kernel.isin(["radix", "gvr"])]
    out += [("topk_no_ours", tk, topk[~topk.kernel.isin(["radix", "gvr"])]),
            ("topk_none_correct", tk, topk.assign(correct="0")),
            ("topk_row_len_zero", tk, _mutate(topk, [int(ours[0])], "row_len", "0")),
            ("topk_zero_time", tk, _mutate(topk, [int(ours[5])], "median_us", "0")),
            ("topk_missing_sweeps", tk, topk.drop(columns=["sweeps_mean"])),
            ("topk_only_fit_rows", tk, topk[(topk.rows.isin(["1", "64"]) & (topk.topk_k == "2048") & (topk.threads == "512")
                                           & ~topk.note.str.contains("unroll=1")) | ~topk.kernel.isin(["radix", "gvr"])])]
    return out


def _write(path: Path, content) -> Path:
    if isinstance(content, pd.DataFrame):
        content.to_csv(path, index=False)
    elif isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


def _run_refused(capsys, argv: list[str], fitted: Path) -> str:
    rc = main(["calibrate"] + argv + ["--fitted-dir", str(fitted), "--out", str(fitted.parent / "plots")])
    cap = capsys.readouterr()
    assert rc == 2, f"{argv}: rc {rc}\n{cap.out[-500:]}\n{cap.err}"
    lines = [x for x in cap.err.splitlines() if x.strip()]
    assert len(lines) == 1 and "Traceback" not in cap.err, cap.err
    assert lines[0].startswith("sparsesim: error:")
    assert not fitted.exists() or not any(fitted.iterdir()), "a refused fit wrote a file"
    return lines[0]


MEASURE_CASES = _measure_cases()


@pytest.mark.parametrize("case", [c[0] for c in MEASURE_CASES])
def test_bad_measure_csv_is_refused(case, tmp_path, capsys):
    content = dict(MEASURE_CASES)[case]
    p = _write(tmp_path / f"{case}.csv", content)
    line = _run_refused(capsys, ["fit", str(p), "--device", "H100-SXM"], tmp_path / "fitted")
    assert p.name in line  # the message names the file
    assert _hashes() == COMMITTED


def test_other_fits_refuse_bad_csvs(tmp_path, capsys):
    cases = _other_cases(tmp_path)
    assert len(cases) >= 29
    for case, argv, content in cases:
        p = _write(tmp_path / f"{case}.csv", content)
        files = [str(p)]
        line = _run_refused(capsys, [argv[0]] + files + argv[1:], tmp_path / "fitted")
        # the message names the file at fault: the CSV, or the fitted folder that lacks the base fit
        assert p.name in line or (case == "regimes_no_base_fit" and "--fitted-dir" in line), (case, line)
    assert _hashes() == COMMITTED
    assert len(MEASURE_CASES) + len(cases) >= 60


def test_paths_that_are_not_csv_files(tmp_path, capsys):
    d = tmp_path / "a_folder.csv"
    d.mkdir()
    for target in (tmp_path / "missing.csv", d):
        _run_refused(capsys, ["fit", str(target), "--device", "H100-SXM"], tmp_path / "fitted")
    # --fitted-dir inside an installed package is refused before any work
    site = tmp_path / "lib" / "site-packages" / "hwmodels" / "calibration" / "fitted"
    rc = main(["calibrate", "fit", str(H100), "--device", "H100-SXM", "--fitted-dir", str(site),
               "--out", str(tmp_path / "plots")])
    assert rc == 2 and "installed Python package" in capsys.readouterr().err and not site.exists()


def test_good_fit_writes_beside_the_data_and_is_picked_up(tmp_path, capsys, monkeypatch):
    """The default destination is fitted/ beside the CSV; SPARSESIM_FITTED_DIR makes the spec load it."""
    from hwmodels.spec import load_hardware

    p = _write(tmp_path / "mine.csv", _complete())
    rc = main(["calibrate", "fit", str(p), "--device", "H100-SXM", "--out", str(tmp_path / "plots")])
    out = capsys.readouterr().out
    assert rc == 0, out
    written = tmp_path / "fitted" / "H100-SXM.yaml"
    assert written.is_file() and f"export {FITTED_ENV}={written.parent.resolve()}" in out
    assert (tmp_path / "plots" / "H100-SXM_predicted_vs_measured.png").is_file()
    monkeypatch.setenv(FITTED_ENV, str(written.parent))
    assert "mine.csv" in load_hardware("H100-SXM").efficiency.source
    assert _hashes() == COMMITTED


def test_refusal_bounds(tmp_path):
    """check_bounds refuses a fitted kind whose check rows miss the bound, and one that has no check rows."""
    from simulator.calibration import checks as C
    from simulator.calibration.fit import REFUSAL_BOUNDS

    err = pd.DataFrame({"group": ["gemm bf16"] * 10, "part": ["held-out"] * 10,
                        "ape_pct": [1, 2, 3, 4, 5, 6, 7, 8, 9, 50.0]})
    # median 5.5 <= 12, p90 = 9 + 0.1 * (50 - 9) = 13.1 <= 30: passes
    assert "gemm" in C.check_bounds(err, REFUSAL_BOUNDS, "x.csv", ["gemm"])[0]
    with pytest.raises(C.CalibrationError, match="misses its bound"):
        C.check_bounds(err.assign(ape_pct=err.ape_pct + 10), REFUSAL_BOUNDS, "x.csv", ["gemm"])  # median 15.5
    with pytest.raises(C.CalibrationError, match="cannot be checked"):
        C.check_bounds(err, REFUSAL_BOUNDS, "x.csv", ["gemm", "gather"])
    with pytest.raises(C.CalibrationError, match="physical range"):
        C.check_physical({"memory.gemm": 1.3}, "x.csv")
    with pytest.raises(C.CalibrationError, match="physical range"):
        C.check_physical({"launch_us.graph": 0.2}, "x.csv")
    with pytest.raises(C.CalibrationError, match="physical range"):
        C.check_physical({"fixed_us.attention": 1500.0}, "x.csv")
    C.check_physical({"memory.gemm": 1.2, "launch_us.eager": 50.0, "fixed_us.gemm": 999.0, "overlap_p": 3}, "x.csv")


def test_fit_does_not_depend_on_an_earlier_fit(tmp_path, monkeypatch):
    """D16: the same CSV (without launch rows) fits to the same parameters whatever fitted file is loaded."""
    from simulator.calibration import fit as F

    base = _base()
    p = _write(tmp_path / "nolaunch.csv", base[base.family != "launch"])
    df = F.load_measurements(p)
    eff1, meta1 = F.fit(df, F.spec_for(df, "H100-SXM"), complete=False)
    bogus = tmp_path / "bogus"
    bogus.mkdir()
    (bogus / "H100-SXM.yaml").write_text(yaml.safe_dump({"source": "bogus", "launch_us": {"graph": 40.0, "eager": 45.0},
                                                         "memory": {"gemm": 0.3}, "fixed_us": {"gemm": 90.0}}))
    monkeypatch.setenv(FITTED_ENV, str(bogus))
    eff2, meta2 = F.fit(df, F.spec_for(df, "H100-SXM"), complete=False)
    assert F.spec_for(df, "H100-SXM").launch_graph_s == pytest.approx(1.5e-6)  # the spec file's datasheet value
    for fam in ("gemm", "copy", "elementwise"):
        for k, v in meta1[fam]["params"].items():
            assert meta2[fam]["params"][k] == pytest.approx(v, rel=1e-9), k
    assert eff2.launch_graph_s is None  # no launch rows: no launch cost is written
