"""DeepGEMM DSA-indexer kernel rules (simulator/kernels/indexer.py) and their fitted kinds
(simulator/calibration/fit_deepgemm_indexer.py)."""
from __future__ import annotations

import numpy as np
import pytest

from simulator.kernels import indexer as X


def test_next_n_two_is_one_atom_on_sm90():
    # sm_90 takes next_n 1 or 2 in one atom: the same items, twice the rows per item
    assert float(X.paged_items(16, 32768, 1)) == float(X.paged_items(16, 32768, 2)) == 16 * 128
    ctas, chain = X.paged_chain(1, 131072, 132, 1)
    assert (float(ctas), float(chain)) == (132.0, 4.0)          # 512 splits over 132 SMs


@pytest.mark.parametrize("rows,keys", [(1024, 8192), (4096, 4096), (4096, 65536), (8192, 16384), (32768, 32768)])
def test_prefill_busiest_tracks_the_exact_schedule(rows, keys):
    nq, total, busiest, pairs = X.prefill_schedule(rows, keys, 64, 132)
    b, t = X.prefill_busiest(rows, keys, 64, 132)
    assert nq == rows // 2 and pairs == rows * (keys - rows) + rows * (rows + 1) / 2
    assert abs(float(b) / busiest - 1) < 0.05 and abs(float(t) / total - 1) < 0.01   # ceilings: mean 1/2


def test_prefill_schedule_small_cases():
    # one row over 5000 keys: one query block of ceil(5000 / 256) key blocks
    assert X.prefill_schedule(1, 5000, 64, 132)[1:3] == (20.0, 20.0)
    # a causal 512-token prompt: block j (rows 2j, 2j+1) walks ceil((2j + 2) / 256) key blocks (1 for j < 128, else
    # 2); CTA s <= 123 takes blocks s and s + 132: 1 + 2
    nq, total, busiest, _ = X.prefill_schedule(512, 512, 64, 132)
    assert nq == 256 and total == 128 * 1 + 128 * 2 and busiest == 3.0


def test_fit_reproduces_from_committed_csv():
    from hwmodels.spec import load_hardware
    from simulator.calibration import fit_deepgemm_indexer as F

    f = F.latest_csv()
    if f is None:
        pytest.skip("no DeepGEMM indexer measurement committed")
    hw = load_hardware("H100-SXM")
    df = F.load(f)
    fp = F.fit_kind(df, hw, F.PAGED)
    for k in F.TERMS:
        got = {"compute": hw.efficiency.compute, "memory": hw.efficiency.memory}.get(k)
        want = fp[k]
        if got is not None:
            assert got[F.PAGED] == pytest.approx(want, rel=2e-3, abs=2e-4)
    assert hw.efficiency.iter_s[F.PAGED] * 1e6 == pytest.approx(fp["iter_us"], rel=2e-3)
    assert hw.efficiency.cta_slots[F.PAGED] == 1.0
    # the held-out rows are never among the fit rows
    assert F.fit_mask(df).sum() == ((df.part == "decode") & (df.batch == 16)).sum() + \
        ((df.part == "prefill") & (df.rows == 4096)).sum()


def test_shipped_kinds_carry_the_borrowed_terms_until_measured():
    """Until a measurement is committed the H100 file's indexer kinds hold gemm_fp8_block's terms (borrowed_eff), so
    the strategy prices what the committed first look (b) priced."""
    from hwmodels.spec import load_hardware
    from simulator.calibration import fit_deepgemm_indexer as F

    if F.latest_csv() is not None:
        pytest.skip("measured: the fitted terms replace the borrowed ones")
    hw = load_hardware("H100-SXM")
    e, b = hw.efficiency, F.borrowed_eff(hw)
    for k in (F.PAGED, F.PREFILL):
        assert e.compute[k] == b.compute[k] and e.memory[k] == b.memory[k] and e.cta_slots[k] == 1.0
        assert e.iter_s[k] == pytest.approx(b.iter_s[k], rel=1e-3)
        assert e.fixed_s[k] == pytest.approx(b.fixed_s[k], rel=1e-3)


def test_dsa_prefill_chain_is_the_busiest_cta():
    from simulator.ops import OpBuilder
    from simulator.strategies import dsa

    b = OpBuilder(2)
    dsa.add_deepgemm_prefill_logits(b, np.array([1.0, 3.0]), np.array([4096.0, 4096.0]), 64, 128, 61.0, 132)
    df = b.build().to_frame()
    busiest, total = X.prefill_busiest(4096.0, 4096.0, 64, 132)
    assert df.serial_iters.iloc[0] == pytest.approx(float(busiest))
    # three prompts in one launch: their blocks spread over the 132 CTAs, plus one prompt's imbalance
    assert df.serial_iters.iloc[1] == pytest.approx(3 * float(total) / 132 + float(busiest) - float(total) / 132)
    assert (df.kind == "indexer_dg_prefill").all()


def test_paged_one_item_is_max_of_arrival_and_item_not_their_sum():
    # CHAIN_PREFETCHED (hwmodels.roofline): the paged kernel's loads are in flight ahead of its compute, so a one-item
    # CTA costs fixed + max(its bytes' arrival, one item's latency), no pipeline fill on top; CHAIN_TENSOR: no compute
    # term; the item latency is the measured dependent-load chain (paged_item_latency_us), not a fitted term
    import pandas as pd

    from hwmodels.spec import load_hardware
    from simulator.calibration import fit_deepgemm_indexer as F

    hw = load_hardware("H100-SXM")
    e = hw.efficiency
    assert e.iter_s[F.PAGED] * 1e6 == pytest.approx(F.paged_item_latency_us(hw), abs=1e-4)
    few = pd.DataFrame({"part": ["decode"], "batch": [1], "context": [1024], "next_n": [1], "rows": [1], "keys": [1024]})
    t = float(F.predict_us(few, hw, e)[0])
    assert t == pytest.approx((e.fixed_s[F.PAGED] + e.iter_s[F.PAGED]) * 1e6, rel=1e-6)
    # 128 items (one per CTA): the bytes' arrival is the longer, still no sum
    many = few.assign(batch=16, context=2048, rows=16, keys=2048)
    t2 = float(F.predict_us(many, hw, e)[0])
    arrival = 16 * 2048 * F.KEY_BYTES / (hw.hbm_bw_bytes_s * e.memory[F.PAGED]) * 1e6
    assert arrival > e.iter_s[F.PAGED] * 1e6
    assert t2 < (e.fixed_s[F.PAGED] + e.iter_s[F.PAGED]) * 1e6 + arrival * 1.1


def test_verify_second_row_adds_one_derived_tail():
    # next_n 2 on sm_90: the same items as next_n 1 (one atom), each page's WGMMA N 64 -> 128 and a second head
    # reduction; only the last item's extra work is exposed: one tail (sync_steps = next_n - 1), derived from the
    # datasheet fp8 peak and clock, shipped as sync_us.indexer_dg
    import pandas as pd

    from hwmodels.spec import load_hardware
    from simulator.calibration import fit_deepgemm_indexer as F

    hw = load_hardware("H100-SXM")
    tail = F.verify_row_tail_us(hw)
    mma = 4 * 2 * 64 * 64 * 128 / (1978.9e12 / 132) * 1e6
    assert tail == pytest.approx(mma + 110 * 4 / 1.98e9 * 1e6, abs=1e-3)
    assert hw.efficiency.sync_s[F.PAGED] * 1e6 == pytest.approx(tail, abs=1e-4)
    one = pd.DataFrame({"part": ["decode"] * 2, "batch": [3, 3], "context": [2048] * 2, "next_n": [1, 2],
                        "rows": [3, 6], "keys": [2048] * 2})
    t1, t2 = F.predict_us(one, hw, hw.efficiency)
    assert t2 - t1 == pytest.approx(tail, abs=0.01)


def test_prefill_terms_held_by_the_structure():
    # the prefill kind's tensor work is on its chain (CHAIN_TENSOR) with prefetched loads (CHAIN_PREFETCHED): compute
    # and cta_fixed are not fitted, memory is the paged kind's; only fixed_us and iter_us come from the fit
    from hwmodels.roofline import CHAIN_PREFETCHED, CHAIN_TENSOR, KIND_CODE
    from hwmodels.spec import load_hardware
    from simulator.calibration import fit_deepgemm_indexer as F

    assert KIND_CODE[F.PREFILL] in CHAIN_TENSOR and KIND_CODE[F.PREFILL] in CHAIN_PREFETCHED
    e = load_hardware("H100-SXM").efficiency
    assert e.compute[F.PREFILL] == 1.0 and e.cta_fixed_s[F.PREFILL] == 0.0
    assert e.memory[F.PREFILL] == e.memory[F.PAGED]


def test_cold_keys_stream_after_the_first_items_loads():
    # indexer_dg_cold (CHAIN_COLD_HEAD): the pages' bytes arrive after the first item's dependent loads (body + iter),
    # the chain side unchanged; its iter_us is held at the measured latency chain, only memory / fixed_us fitted;
    # the block-table miss of the derived model is (dram_us - l2_us) per launch
    import pandas as pd

    from hwmodels.roofline import CHAIN_COLD_HEAD, KIND_CODE
    from hwmodels.spec import load_hardware
    from simulator.calibration import fit_deepgemm_indexer as F

    hw = load_hardware("H100-SXM")
    e = hw.efficiency
    assert KIND_CODE[F.PAGED_COLD] in CHAIN_COLD_HEAD and KIND_CODE[F.PAGED] not in CHAIN_COLD_HEAD
    assert e.iter_s[F.PAGED_COLD] == e.iter_s[F.PAGED]
    assert F.cold_extra_us(hw) == pytest.approx((e.dram_latency_s - e.l2_latency_s) * 1e6, abs=1e-4)
    row = pd.DataFrame({"part": ["decode"] * 2, "batch": [16] * 2, "context": [2048] * 2, "next_n": [1] * 2,
                        "rows": [16] * 2, "keys": [2048] * 2, "rotation": ["cold", "warm8"]})
    cold, warm = F.predict_us(row, hw, e)
    arrival = 16 * 2048 * F.KEY_BYTES / (hw.hbm_bw_bytes_s * e.memory[F.PAGED_COLD]) * 1e6
    assert cold == pytest.approx((e.fixed_s[F.PAGED_COLD] + e.iter_s[F.PAGED_COLD]) * 1e6 + arrival, rel=0.02)
    assert cold > warm
    # a long chain is the chain's either way: cold adds only its fixed and the memory share
    long = row.assign(context=131072, keys=131072)
    c2, w2 = F.predict_us(long, hw, e)
    assert c2 / w2 < 1.1


def test_dsa_indexer_keys_selects_the_kind():
    from simulator.strategies.dsa import DSAAttention

    assert DSAAttention.params["indexer_keys"].default == "cold"
    assert DSAAttention.params["indexer_keys"].check("warm") and not DSAAttention.params["indexer_keys"].check("hot")
