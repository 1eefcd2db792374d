"""FA3's hopper/ launches per call (simulator/kernels/fa3.py): prepare_varlen_num_blocks on every varlen call, the
combine whenever the split bound is > 1 (idle CTAs where the dynamic split leaves requests whole)."""
import numpy as np

from simulator.kernels import fa3 as FA3


def _launches(B, T):
    return FA3.fa3(np.array([B], float), 1.0, np.array([T], float), 32.0, 8.0, 128.0, 2.0, 16.0, 132)


def test_prepare_launched_every_varlen_call():
    (k0, _, _, _), _ = _launches(512, 64)
    assert k0.name == "attention_prepare" and bool(np.all(k0.where))
    (k0, _, _, _), _ = FA3.fa3(1.0, 1.0, 4096.0, 32.0, 8.0, 128.0, 2.0, 16.0, 132, varlen=False)
    assert not bool(np.any(k0.where))


def test_combine_idle_when_bound_splits_but_requests_stay_whole():
    # batch 128 x 1024 tokens: the bound (evaluated as batch 1) is > 1, the dynamic split leaves every request whole
    (_, k1, _, k2), meta = _launches(128, 1024)
    assert meta["split_bound"][0] > 1 and meta["splits"][0] == 1
    assert bool(np.all(k2.where)) and float(np.asarray(k2.ctas)[0]) == 0.0
    assert float(np.asarray(k2.idle)[0]) == 128 * 4          # grid (ceil(32 / 8), 1, 128)
    # one long request: split, working combine CTAs, fp32 partials written by the main kernel
    (_, k1, _, k2), meta = _launches(1, 131072)
    assert meta["splits"][0] > 1 and float(np.asarray(k2.ctas)[0]) > 0 and float(np.asarray(k2.idle)[0]) == 0.0


def test_binary_kinds_scheduler_loads_and_prepare_steps():
    (k0, k1, _, _), _ = _launches(8, 64)
    assert k0.kind == "attn_prepare_fa3" and k1.kind == "attn_fa3_persist"
    # 64 tiles on 132 SMs: one tile per CTA, its page walk (3 loads) + the scheduler's atomicAdd and group read (2)
    assert float(np.asarray(k1.prologue_loads)[0]) == FA3.FA3_PROLOGUE_LOADS + FA3.FA3_SCHED_LOADS
    # more than 31 requests: the scheduler also walks past groups of 31 requests
    assert FA3.scheduler_loads(512.0, 8.0, 132)[()] > FA3.FA3_SCHED_LOADS
    # prepare: 1 load + log2(NumWarps) merge passes, NumWarps = ceil(B / 31) to a power of 2, at most 32
    assert list(FA3.prepare_steps(np.array([1.0, 31.0, 32.0, 512.0, 5000.0]))) == [1.0, 1.0, 2.0, 6.0, 6.0]
    # FA4 keeps the stand-in's kinds
    ks = [ln.kind for ln in FA3.fa3(8.0, 1.0, 64.0, 32.0, 8.0, 128.0, 2.0, 16.0, 132, kind="attn_fa4")[0]]
    assert ks[0] == "attn_combine_fa3" and ks[1] == "attn_fa4"


def test_last_partial_round_is_its_own_row_with_its_share_of_the_bytes():
    # batch 6 x 8 KV heads x 3 splits = 144 tiles on 132 SMs: 132 in the full round, 12 in the last
    (_, k1, k1t, _), meta = _launches(6, 8192)
    assert meta["splits"][0] == 3 and meta["last_round"][0] == 12
    assert bool(np.all(k1t.where))
    total = float(np.asarray(k1.bytes_read)[0]) + float(np.asarray(k1t.bytes_read)[0])
    assert abs(float(np.asarray(k1t.bytes_read)[0]) / total - 12 / 144) < 1e-12
    # num_splits = 1 forced: no split, no last round at 48 tiles, no combine
    (_, _, k1t, k2), meta = FA3.fa3(6.0, 1.0, 8192.0, 32.0, 8.0, 128.0, 2.0, 16.0, 132, num_splits=1.0)
    assert meta["splits"] == 1 and not bool(np.any(k1t.where)) and not bool(np.any(k2.where))


def test_blind_grid_2_is_new_and_both_prices_cover_it():
    import importlib.util
    from pathlib import Path

    import pandas as pd

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("m3", root / "lab/kernels/measure_fa3_binary.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    keys = ["model", "dtype", "batch", "q_rows", "context", "page_size"]
    b2 = pd.DataFrame(m.blind2_shapes())
    seen = pd.concat([pd.DataFrame(m.shapes()), pd.DataFrame(m.blind_shapes())])[keys]
    assert len(b2) == 49 and not len(b2[keys].merge(seen, on=keys))
    from simulator.calibration import fit_production_attention as FP  # the installed package's data folder

    pred = pd.read_csv(FP.DATA_DIR / "fa3_binary_blind2_predictions.csv")
    assert len(pred.merge(b2[keys], on=keys)) == len(b2)
    assert pred["pred_new_us"].notna().all() and pred["pred_base_us"].notna().all()
    assert (pred["model_commit"] != pred["base_commit"]).all()
