"""The engines' all-reduce blind grid 12 on 4 x H200 (simulator/calibration/engine_allreduce_grid12.py BLIND12_*) and its
candidate: the H200's own engines' terms (GRID12_CANDIDATE, h200_candidate, fit_h200_terms, write_h200_engine_terms)."""
import ast
import csv
import shutil
import sys
from pathlib import Path
from unittest import mock

import numpy as np
import pandas as pd
import pytest
import yaml

from hwmodels import datafiles as DF
from hwmodels.spec import load_hardware
from simulator.calibration import engine_allreduce as E
from simulator.calibration import engine_allreduce_grid11 as G11
from simulator.calibration import engine_allreduce_grid12 as G12

ROOT = Path(__file__).resolve().parents[1]
KEY = ["impl", "world", "tokens", "hidden"]


@pytest.fixture(scope="module")
def pred():
    return pd.read_csv(DF.resolve(E.DATA_DIR / G12.BLIND12_PRED_CSV))


def _keys(df):
    return sorted(map(tuple, df[KEY].to_numpy().tolist()))


def test_blind12_shapes_match_the_measurement_script_and_token_counts_are_new():
    src = (ROOT / "lab" / "kernels" / "measure_engine_allreduce.py").read_text()
    vals = {t.id: ast.literal_eval(n.value) for n in ast.parse(src).body if isinstance(n, ast.Assign)
            for t in n.targets if isinstance(t, ast.Name) and t.id in ("BLIND12_SHAPES", "BLIND12_CONTROL")}
    assert vals == {"BLIND12_SHAPES": G12.BLIND12_SHAPES, "BLIND12_CONTROL": G12.BLIND12_CONTROL}
    seen = set()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lab" / "kernels"))
    from data_order import committed_before  # the CSVs committed before this grid (data_order.txt)
    for f in committed_before("engine_allreduce_blind12_", DF.glob(E.DATA_DIR, "engine_allreduce_*.csv")):
        seen |= {int(r["tokens"]) for r in csv.DictReader(DF.open_text(f))}
    assert len(seen) > 80
    assert not seen & {t for t, _ in G12.BLIND12_SHAPES + G12.BLIND12_CONTROL}


def test_every_cell_holds_at_least_four_rows():
    g = G12.blind12_grid()
    assert len(g) == 215 and (g["world"] == 4).sum() == 140 and set(g["impl"]) == set(E.IMPL_KIND)
    n = g.assign(regime=E.size_regime(g["bytes"])).groupby(["impl", "world", "regime"]).size()
    assert len(n) == 31 and n.min() >= 4


def test_committed_blind12_prediction(pred):
    assert len(pred) == 215 and _keys(pred) == _keys(G12.blind12_grid())
    assert {"pred_main_us", "pred_new_us", "pred_h100_us", "trt_ctas", "trt_cluster_size", "regime"} <= set(pred.columns)
    few = pred.iloc[::20].reset_index(drop=True)
    h200, h100 = load_hardware("H200"), load_hardware("H100-SXM")
    assert np.allclose(E.predict_with(few, G12.h200_candidate(h200, h100), {}), few["pred_new_us"], rtol=1e-3)
    # main's H200 (no engines' terms, the datasheet link rate) priced every row faster than the candidate
    assert (pred["pred_main_us"] < pred["pred_new_us"]).mean() > 0.9


def test_candidate_structure():
    h200, h100 = load_hardware("H200"), load_hardware("H100-SXM")
    c = G12.h200_candidate(h200, h100)
    assert set(G12.GRID12_CANDIDATE) == set(E.TERMS)
    assert c.efficiency.engine_ar == pytest.approx({f"{k}_s": v * 1e-6 for k, v in G12.GRID12_CANDIDATE.items()})
    for k in G12.H200_LINK_KINDS:
        assert c.efficiency.memory[k] == h100.efficiency.memory[k]
        assert c.efficiency.link_ceiling[k] == h100.efficiency.link_ceiling[k]
    # the H200's own HBM rate prices the fused epilogue; the links' terms are the H100's
    assert c.hbm_bw_bytes_s == h200.hbm_bw_bytes_s and not G12.h200_links(c, h100).efficiency.engine_ar
    assert G11.BLIND11_REPLICATE_CSV not in G12.H200_FIT_CSVS and E.HELD_OUT_CSV in G12.H200_FIT_CSVS


def test_writer_merges_only_its_keys(tmp_path):
    src = Path(load_hardware("H200").calibration.split("fitted file ", 1)[1])
    shutil.copy(src, tmp_path / "H200.yaml")
    before = yaml.safe_load((tmp_path / "H200.yaml").read_text())
    fit = {**G12.GRID12_CANDIDATE, "fit_rows": 358, "rms_log_error": 0.1}
    with mock.patch.object(G12, "fit_h200_terms", return_value=fit):
        p, f = G12.write_h200_engine_terms(tmp_path)
    after = yaml.safe_load(p.read_text())
    assert after["engine_allreduce_us"] == G12.GRID12_CANDIDATE and f == fit
    h100 = load_hardware("H100-SXM").efficiency
    for k in G12.H200_LINK_KINDS:
        assert after["memory"][k] == h100.memory[k] and after["link_ceiling"][k] == h100.link_ceiling[k]
    assert {k: v for k, v in after["memory"].items() if k not in G12.H200_LINK_KINDS} == \
        {k: v for k, v in before["memory"].items() if k not in G12.H200_LINK_KINDS}
    own = ("memory", "link_ceiling", "engine_allreduce_us", "engine_allreduce")   # the writer's keys (already in H200.yaml)
    assert {k: after[k] for k in before if k not in own} == {k: before[k] for k in before if k not in own}


def test_the_measurement_is_whole_and_ran_on_h100(pred):
    """The one call asked for 4 x H200 and was served by 4 x H100: the H100 model (pred_h100_us) is judged, the H200
    candidate is not (another device)."""
    meas = pd.read_csv(DF.glob(E.DATA_DIR, G12.BLIND12_MEAS_GLOB)[-1])
    assert len(meas) == 215 and _keys(meas) == _keys(pred) and (meas["script_version"] == 9).all()
    assert set(meas["device"]) == {"NVIDIA H100 80GB HBM3"}
    assert not meas["note"].astype("string").fillna("").str.contains("WRONG").any()
    r = E.blind6_rows(pred.rename(columns={"pred_main_us": "x", "pred_h100_us": "pred_main_us"}), meas)
    t = r.groupby(["impl", "world", "regime"])["err_main"].agg(
        med=lambda e: (100 * e).abs().median(), p90=lambda e: (100 * e).abs().quantile(0.9))
    assert int(((t["med"] <= 10) & (t["p90"] <= 25)).sum()) == 23
