"""The FlashMLA sparse decode grid's shapes and the product's price it is judged against
(simulator/calibration/flashmla_sparse_h200.py)."""
import collections

import numpy as np

from hwmodels.spec import load_hardware
from simulator.calibration import flashmla_sparse_h200 as S


def test_the_kernel_runs_64_or_128_heads_padding_fewer():
    assert [S.kernel_heads(tp) for tp in (1, 2, 4, 8)] == [128, 64, 64, 64]


def test_the_grid_holds_every_regime_at_least_eight_times():
    t = S.frame()
    counts = collections.Counter(t["regime"])
    assert len(counts) == 6 and min(counts.values()) >= 8
    assert set(t["s_q"]) == {1, 2} and set(t["topk"]) == {2048}


def test_the_products_price_grows_with_batch_and_heads_and_ignores_context_past_k():
    hw = load_hardware("H200")
    a, b = S.product_us(hw, 8, 1, 1, 65536), S.product_us(hw, 8, 32, 1, 65536)
    c = S.product_us(hw, 1, 32, 1, 65536)
    assert 0 < a < b < c
    assert np.isclose(S.product_us(hw, 8, 4, 1, 8192), S.product_us(hw, 8, 4, 1, 65536))
