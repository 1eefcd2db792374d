"""FA3's hopper/ launches per call (simulator/kernels/fa3.py): prepare_varlen_num_blocks on every varlen call, the
combine whenever the split bound is > 1 (idle CTAs where the dynamic split leaves requests whole)."""
import numpy as np

from simulator.kernels import fa3 as FA3


def _launches(B, T, kvb=2.0, **kw):
    """(prepare, the bf16 or fp8 main launch, its last-round launch, combine), meta of one Llama-3.1-8B call."""
    ls, meta = FA3.fa3(np.array([B], float), 1.0, np.array([T], float), 32.0, 8.0, 128.0, kvb, 16.0, 132, **kw)
    k0, k2 = ls[0], ls[-1]
    k1 = next(ln for ln in ls[1:-1] if ln.name == "attention" and (ln.where is None or bool(np.all(ln.where))))
    k1t = next(ln for ln in ls[1:-1] if ln.name == "attention_last_round" and ln.kind == k1.kind)
    return (k0, k1, k1t, k2), meta


def test_prepare_launched_every_varlen_call():
    (k0, _, _, _), _ = _launches(512, 64)
    assert k0.name == "attention_prepare" and bool(np.all(k0.where))
    (k0, _, _, _), _ = _launches(1, 4096, varlen=False)
    assert not bool(np.any(k0.where))


def test_combine_idle_when_bound_splits_but_requests_stay_whole():
    # batch 128 x 1024 tokens: the bound (evaluated as batch 1) is > 1, the dynamic split leaves every request whole
    (_, k1, _, k2), meta = _launches(128, 1024)
    assert meta["split_bound"][0] > 1 and meta["splits"][0] == 1
    assert bool(np.all(k2.where)) and float(np.asarray(k2.ctas)[0]) == 0.0
    # the varlen combine's LINEARIZE_M_AND_BATCH grid (2 x ceil(128 / 8) < 128): ceil(128 x 32 / 8) + 128 CTAs, each
    # scanning the batches 32 at a time (two loads a pass) before reading num_splits (fa3.combine_scan)
    assert float(np.asarray(k2.idle)[0]) == 128 * 32 / 8 + 128
    assert float(np.asarray(k2.idle_share)[0]) > 1.0
    # one long request: split, working combine CTAs, fp32 partials written by the main kernel
    (_, k1, _, k2), meta = _launches(1, 131072)
    assert meta["splits"][0] > 1 and float(np.asarray(k2.ctas)[0]) > 0 and float(np.asarray(k2.idle)[0]) == 0.0


def test_binary_kinds_scheduler_loads_and_prepare_steps():
    (k0, k1, _, _), _ = _launches(8, 64)
    assert k0.kind == "attn_prepare_fa3" and k1.kind == "attn_fa3_persist"
    # 64 tiles on 132 SMs: one tile per CTA, its page walk (3 loads) + the scheduler's atomicAdd and group read (2)
    assert float(np.asarray(k1.prologue_loads)[0]) == FA3.FA3_PROLOGUE_LOADS + FA3.FA3_SCHED_LOADS
    # fp8: its own kind and hopper/'s 128 x 160 tile
    (_, k8, _, _), meta8 = _launches(8, 64, kvb=1.0)
    assert k8.kind == "attn_fa3_persist_fp8kv" and meta8["kBlockN"][0] == FA3.FA3_FP8_PAGED_TILE_N
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
    (_, _, k1t, k2), meta = _launches(6, 8192, num_splits=1.0)
    assert meta["splits"] == 1 and not bool(np.any(k1t.where)) and not bool(np.any(k2.where))


def test_later_tiles_of_a_cta_are_waves_of_one_tile():
    # batch 512 x 64 tokens: 4096 one-block tiles, 31 full rounds of 132: 31 waves of one tile each, the first tile's
    # prologue loads once (emit multiplies by the waves)
    (_, k1, _, _), _ = _launches(512, 64)
    assert float(np.asarray(k1.ctas)[0]) == 31 * 132 and float(np.asarray(k1.serial_iters)[0]) == 1.0
    assert abs(float(np.asarray(k1.prologue_loads)[0]) * 31 - float(FA3.FA3_PROLOGUE_LOADS
                                                                     + FA3.scheduler_loads(512.0, 8.0, 132))) < 1e-9


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


def test_blind_grid_3_is_new_and_both_prices_cover_it():
    import importlib.util
    from pathlib import Path

    import pandas as pd

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("m4", root / "lab/kernels/measure_fa3_binary.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    keys = ["model", "dtype", "batch", "q_rows", "context", "page_size"]
    b3 = pd.DataFrame(m.blind3_shapes())
    seen = pd.concat([pd.DataFrame(f()) for f in (m.shapes, m.blind_shapes, m.blind2_shapes)])[keys]
    assert len(b3) == 56 and not len(b3[keys].merge(seen, on=keys))
    from simulator.calibration import fit_production_attention as FP  # the installed package's data folder

    pred = pd.read_csv(FP.DATA_DIR / "fa3_binary_blind3_predictions.csv")
    assert len(pred.merge(b3[keys], on=keys)) == len(b3)
    assert pred["pred_new_us"].notna().all() and pred["pred_base_us"].notna().all()
    assert (pred["model_commit"] != pred["base_commit"]).all()
    # the fit rows are the three earlier grids, never blind grid 3
    assert FP.FA3_BINARY_GRIDS == ("first", "blind1", "blind2")
