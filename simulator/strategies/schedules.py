"""schedule: refresh_reuse — SSV's refresh/reuse layer schedule for NSA (SSV document, "Core Mechanism 2").

A refresh layer recomputes the selected-block indices (routing scores + top-n) and runs a partially fused
NSA kernel; a reuse layer inherits the indices of the nearest preceding refresh layer and runs one fully
fused kernel (compression + selection + window + gated merge) with no intermediate branch writes.
The schedule is either `refresh_every: r` (layers 0, r, 2r, ... refresh) or an explicit per-layer vector
`layers: [R, U, U, U, R, ...]` (R / 1 = refresh, U / 0 = reuse; the first layer must refresh).
The kernels themselves are priced by the attention strategy (simulator/strategies/nsa.py), which asks the
schedule how many layers refresh. `schedule: none` runs NSA's unfused branch kernels in every layer.

T_total = R_layers T_R + (L - R_layers) T_U (document); reuse skips routing, so it is an approximation of
per-layer NSA routing: strict precision refuses any reuse layer.
"""
from __future__ import annotations

import math

import numpy as np

from simulator.combo import Combo
from simulator.strategies.base import Param, ScheduleStrategy, register

_REFRESH = {"R", "r", 1, True, "refresh"}
_REUSE = {"U", "u", 0, False, "reuse"}


def _is_vector(v) -> bool:
    return v is None or (isinstance(v, list) and bool(v) and all(x in _REFRESH or x in _REUSE for x in v))


@register
class RefreshReuse(ScheduleStrategy):
    name = "refresh_reuse"
    array_combo = True                  # array-safe (docs/VECTOR_COMBOS.md)
    array_params = ("refresh_every",)
    description = "SSV refresh/reuse: refresh layers route + partial fusion, reuse layers one fused kernel"
    params = {
        "refresh_every": Param(4, "ASSUMPTION: SSV document Insight 2 says selected-block layouts stay stable for "
                                  "'several consecutive layers' and gives no interval; 4 is one refresh per "
                                  "4 layers (8 of Llama-3.1-8B's 32). Sweep it.",
                               lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 1,
                               "an integer >= 1"),
        "layers": Param(None, "not given: use refresh_every", _is_vector,
                        "null or a per-layer list of R/U (or 1/0), first layer R", list_valued=True),
    }

    def is_refresh(self, n_layers: int) -> list[bool]:
        """Per layer: True where the layer refreshes its indices."""
        if self.layers is not None:
            return [x in _REFRESH for x in self.layers]
        return [i % self.refresh_every == 0 for i in range(n_layers)]

    def refresh_layers(self, n_layers: int) -> int:
        if self.layers is not None:
            return sum(self.is_refresh(n_layers))
        r = self.refresh_every
        return np.ceil(n_layers / r) if isinstance(r, np.ndarray) else math.ceil(n_layers / r)

    def label(self) -> str:
        if self.layers is not None:
            return "refresh_reuse(" + "".join("R" if x else "U" for x in self.is_refresh(len(self.layers))) + ")"
        return f"refresh_reuse(r={self.refresh_every})"

    def param_problem(self):
        if self.layers is not None and self.layers[0] not in _REFRESH:
            return "layers", "the first layer must refresh (a reuse layer needs indices from an earlier refresh layer)"
        return None

    def param_model_problem(self, model):
        if self.layers is not None and len(self.layers) != model.layers:
            return "layers", f"lists {len(self.layers)} layers for {model.name}'s {model.layers}"
        return None

    def refuse(self, combo: Combo) -> str | None:
        if not combo.attention.routes_blocks:
            return (f"schedule 'refresh_reuse' reuses NSA routing across layers; attention "
                    f"'{combo.attention.name}' has no routing to reuse")
        L = combo.model.layers
        if combo.attention.precision_class() == "strict" and self.refresh_layers(L) < L:
            return ("strict precision: reuse layers attend to another layer's selected blocks, not their own "
                    "(use refresh_every: 1)")
        return None
