import numpy as np
import pytest

from hwmodels.spec import load_hardware
from simulator.combo import Combo
from simulator.model import load_model
from simulator.strategies.base import AXES, DEFAULT_VALUE, registry


def make_combo(hw="H100-SXM", model="Llama-3.1-8B", kv_dtype="bf16", weight_dtype=None, tp=1, launch="graph",
               attention="dense", ep=1, attn_dp=1):
    reg = registry()
    m = load_model(model) if isinstance(model, str) else model
    h = load_hardware(hw) if isinstance(hw, str) else hw
    axes = {a: reg[a][DEFAULT_VALUE[a]]() for a in AXES}
    axes["attention"] = reg["attention"][attention]()
    return Combo(hardware=h, model=m, kv_dtype=kv_dtype, weight_dtype=weight_dtype or m.dtype, tp=tp,
                 launch=launch, ep=ep, attn_dp=attn_dp, **axes)


@pytest.fixture
def combo():
    return make_combo


def arr(*v):
    return np.array(v, dtype=np.float64)
