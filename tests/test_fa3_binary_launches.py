"""FA3's hopper/ launches per call (simulator/kernels/fa3.py): prepare_varlen_num_blocks on every varlen call, the
combine whenever the split bound is > 1 (idle CTAs where the dynamic split leaves requests whole)."""
import numpy as np

from simulator.kernels import fa3 as FA3


def _launches(B, T):
    return FA3.fa3(np.array([B], float), 1.0, np.array([T], float), 32.0, 8.0, 128.0, 2.0, 16.0, 132)


def test_prepare_launched_every_varlen_call():
    (k0, _, _), _ = _launches(512, 64)
    assert k0.name == "attention_prepare" and bool(np.all(k0.where))
    (k0, _, _), _ = FA3.fa3(1.0, 1.0, 4096.0, 32.0, 8.0, 128.0, 2.0, 16.0, 132, varlen=False)
    assert not bool(np.any(k0.where))


def test_combine_idle_when_bound_splits_but_requests_stay_whole():
    # batch 128 x 1024 tokens: the bound (evaluated as batch 1) is > 1, the dynamic split leaves every request whole
    (_, k1, k2), meta = _launches(128, 1024)
    assert meta["split_bound"][0] > 1 and meta["splits"][0] == 1
    assert bool(np.all(k2.where)) and float(np.asarray(k2.ctas)[0]) == 0.0
    assert float(np.asarray(k2.idle)[0]) == 128 * 4          # grid (ceil(32 / 8), 1, 128)
    # one long request: split, working combine CTAs, fp32 partials written by the main kernel
    (_, k1, k2), meta = _launches(1, 131072)
    assert meta["splits"][0] > 1 and float(np.asarray(k2.ctas)[0]) > 0 and float(np.asarray(k2.idle)[0]) == 0.0
