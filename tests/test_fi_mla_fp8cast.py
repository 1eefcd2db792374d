"""SGLang's flashinfer_mla backend over an fp8 MLA cache (family fi_mla_fp8cast, simulator/kernels/families.py
POOL_CAST_FAMILIES): the layer's whole pool cast to bf16, then FlashInfer's MLA kernel over the copy; a prefix-free
prompt casts nothing, an extend over a cached prefix does; fi_mla at an fp8 cache stays FlashInfer's own fp8 kernel."""
from dataclasses import replace

import numpy as np
import pytest

from simulator.combo import make_combo
from simulator.kernels import families as FAM
from simulator.pricing import decode_ops
from simulator.strategies.base import StepShape, parse_axis


def _combo(kernel, kv="fp8", pool=0):
    c = make_combo("H200", "DeepSeek-V3", kv_dtype=kv, tp=8, launch="graph", attention="dense", weight_dtype="fp8")
    return replace(c, attention=parse_axis("attention", [{"dense": {"kernel": kernel, "page_size": 1,
                                                                    "pool_tokens": pool}}])[0])


def _named(ops, name):
    return np.asarray(ops.names, dtype=object)[ops.name_id] == name


def test_the_call_is_the_pool_cast_then_flashinfers_bf16_mla_kernel():
    pool = 262144.0
    ls = FAM.mla_launches("fi_mla_fp8cast", 8.0, 1.0, 16384.0, 16.0, 512.0, 64.0, 1.0, 1.0, 132, pool_tokens=pool)
    cast = [ln for ln in ls if ln.name == "kv_pool_cast"]
    assert len(cast) == 1 and float(cast[0].bytes_read) == pool * 576 and float(cast[0].bytes_written) == 2 * pool * 576
    bf16 = FAM.mla_launches("fi_mla", 8.0, 1.0, 16384.0, 16.0, 512.0, 64.0, 2.0, 1.0, 132)
    fp8 = FAM.mla_launches("fi_mla", 8.0, 1.0, 16384.0, 16.0, 512.0, 64.0, 1.0, 1.0, 132)
    mains = [ln for ln in ls if ln.name != "kv_pool_cast"]
    assert [ln.kind for ln in mains] == [ln.kind for ln in bf16]
    assert np.allclose([float(np.max(ln.bytes_read)) for ln in mains], [float(np.max(ln.bytes_read)) for ln in bf16])
    # FlashInfer's own fp8 kernel (fi_mla at an fp8 cache) reads half the cache bytes and casts nothing
    assert float(np.max(fp8[0].bytes_read)) < float(np.max(bf16[0].bytes_read))
    assert not [ln for ln in fp8 if ln.name == "kv_pool_cast"]


def test_the_step_grows_with_the_pool_and_the_default_pool_is_the_memory_models():
    from simulator.memory import kv_pool_tokens

    def cast_bytes(pool):
        c = _combo("fi_mla_fp8cast", pool=pool)
        ops, _ = decode_ops(c, np.array([8.0]), np.array([8192.0]))
        return float((ops.bytes_read * ops.count)[_named(ops, "kv_pool_cast")].sum())
    n = float(kv_pool_tokens(_combo("fi_mla_fp8cast")))
    assert cast_bytes(131072) > 0
    assert cast_bytes(0) / cast_bytes(131072) == pytest.approx(n / 131072, rel=1e-9)


def test_only_an_extend_over_a_cached_prefix_casts_the_pool():
    from simulator.ops import OpBuilder
    c = _combo("fi_mla_fp8cast", pool=524288)
    att = c.attention

    def prefill(prefix):
        b = OpBuilder(1)
        shape = StepShape(batch=np.ones(1), query_rows=np.array([4096.0]), context=np.array([4096.0 + prefix]),
                          phase="prefill", layers=c.model.layers, kv_prefix=np.array([float(prefix)]))
        att.prefill_ops(b, c, shape)
        return b.build()
    fresh, cached = prefill(0), prefill(8192)
    assert not _named(fresh, "kv_pool_cast").any()
    assert _named(cached, "kv_pool_cast").any()
    cast = _named(cached, "kv_pool_cast")
    assert float((cached.bytes_read * cached.count)[cast].sum()) == 524288 * 576 * c.model.layers


def test_the_pool_note_names_the_family():
    from simulator.kernels.families import casts_pool
    assert casts_pool("fi_mla_fp8cast") and casts_pool("fa3_mla_fp8cast") and not casts_pool("fi_mla")
    assert "fi_mla_fp8cast" in FAM.MLA_FAMILIES and FAM.MLA_PREFILL_FAMILY["fi_mla_fp8cast"] == "fi_sm90"


def test_the_grids_committed_prices_reproduce():
    import pandas as pd

    from hwmodels.spec import load_hardware
    from simulator.calibration import fi_mla_fp8cast_h200 as S
    hw = load_hardware("H200")
    g = pd.read_csv(S.DATA_DIR / S.PREDICTION)
    assert np.allclose(S.price_us(g, hw, "fi_mla_fp8cast"), g["pred_us"].to_numpy(float), rtol=1e-4)
    assert np.allclose(S.price_us(g, hw, "fi_mla"), g["pred_main_us"].to_numpy(float), rtol=1e-4)


def test_an_extend_over_a_prefix_prices_the_absorbed_pairs_work_for_flashinfers_mla_families():
    from simulator.ops import OpBuilder

    def attention_flops(kernel, absorbed):
        before, causal = FAM.MLA_ABSORBED_EXTEND, FAM.FI_MLA_CAUSAL_EXTEND
        try:   # the generic op's two forms (FlashInfer's causal plan off: the fallback it replaced)
            FAM.MLA_ABSORBED_EXTEND, FAM.FI_MLA_CAUSAL_EXTEND = ("fi_mla", "fi_mla_fp8cast") if absorbed else (), False
            c = _combo(kernel, kv="bf16")
            b = OpBuilder(1)
            shape = StepShape(batch=np.ones(1), query_rows=np.array([1024.0]), context=np.array([9216.0]),
                              phase="prefill", layers=1, kv_prefix=np.array([8192.0]))
            c.attention.prefill_ops(b, c, shape)
            ops = b.build()
            return float((ops.flops * ops.count)[_named(ops, "attention")].sum())
        finally:
            FAM.MLA_ABSORBED_EXTEND, FAM.FI_MLA_CAUSAL_EXTEND = before, causal
    # (512 + 64 + 512) against the expanded form's (192 + 128) a (query, key) pair a head
    assert attention_flops("fi_mla", True) / attention_flops("fi_mla", False) == pytest.approx(1088 / 320)
    assert attention_flops("fa3_mla", True) == attention_flops("fa3_mla", False)   # FA3's families: their own kernel


def test_the_extend_grids_committed_prices_reproduce():
    import pandas as pd

    from hwmodels.spec import load_hardware
    from simulator.calibration import fi_mla_fp8cast_h200 as S
    hw = load_hardware("H200")
    for pricer, name in ((S.predict_extend, S.PREDICTION_EXTEND), (S.predict_extend2, S.PREDICTION_EXTEND2),
                         (S.predict_extend3, S.PREDICTION_EXTEND3)):
        got, committed = pricer(hw), pd.read_csv(S.DATA_DIR / name)
        cols = [c for c in committed.columns if c.startswith("pred")]
        assert len(cols) >= 1
        for c in cols:
            assert np.allclose(got[c], committed[c].to_numpy(float), rtol=1e-4), (name, c)


def test_the_extend_models_switches_are_restored_and_an_unknown_model_is_refused():
    from hwmodels.spec import load_hardware
    from simulator.calibration import fi_mla_fp8cast_h200 as S
    from simulator.kernels import flashinfer as FI
    before = (FAM.MLA_ABSORBED_EXTEND, FAM.FI_MLA_CAUSAL_EXTEND, FI.FI_MLA_EXTEND_STAGE_SHARE)
    t = S._extend_frame(S.EXTEND_SHAPES3[:2])
    hw = load_hardware("H200")
    prices = {m: S.extend_model_us(t, hw, m) for m in S.EXTEND_MODELS}
    assert (FAM.MLA_ABSORBED_EXTEND, FAM.FI_MLA_CAUSAL_EXTEND, FI.FI_MLA_EXTEND_STAGE_SHARE) == before
    assert np.all(prices["causal"] < prices["structure"])      # the fitted stage share < 1
    assert np.all(prices["absorbed"] > prices["expanded"])     # 1088 against 320 flops a pair
    with pytest.raises(ValueError, match="unknown extend model"):
        S.extend_model_us(t, hw, "cudnn")


def test_the_boundary_grids_committed_prices_reproduce_and_price_the_plans_two_piece_clusters():
    import pandas as pd

    from hwmodels.spec import load_hardware
    from simulator.calibration import fi_mla_fp8cast_h200 as S
    hw = load_hardware("H200")
    got, committed = S.predict_boundary(hw), pd.read_csv(S.DATA_DIR / S.PREDICTION_BOUNDARY)
    assert np.allclose(got["pred_us"], committed["pred_us"].to_numpy(float), rtol=1e-4)
    at = got.set_index("batch")
    # 48 x 8K: 144 pieces over 132 clusters (twelve walk two) -> priced above 64 x 8K (128 pieces, one a cluster)
    assert at.loc[48].query("context == 8192")["busiest_items"].iloc[0] == 2
    assert at.loc[64]["busiest_items"] == 1
    assert at.loc[48].query("context == 8192")["pred_us"].iloc[0] > at.loc[64]["pred_us"]
