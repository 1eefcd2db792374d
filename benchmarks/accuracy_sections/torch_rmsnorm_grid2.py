"""torch's own RMSNorm kernel (`F.rms_norm`, bf16 with a weight: the top table's `elementwise:rmsnorm` row) on its blind
grid 2: 32 shapes in no earlier campaign or grid (hidden 896-13312 incl. 896 / 1000 / 2880 / 5632 / 6400 / 10752 /
11264 / 13312, rows 1-30720; 14 mid rows of 2-16 blocks per SM) and 3 campaign controls, priced before the measurement
(commit torch_rmsnorm.PREDICTION2_COMMIT) by main f845e58's shipped form (CAND, grid 1's), grid 2's candidate (CAND2:
a lone round from the L2 or from HBM as the input's rotation footprint overflows the L2, co-resident blocks' bytes on
the stream, the second pass's re-read missing the L2 once a wave's rows overflow it), its variant CAND2B and the
builder's one elementwise op, timed on the H100 in one call."""
from __future__ import annotations

from simulator.calibration import torch_rmsnorm as TR
from simulator.calibration.scoreboard import BOARD

FAMILY = "torch RMSNorm (own kernel)"


def torch_rmsnorm_grid2() -> None:
    """Print grid 2's per-regime table (main / the candidate / its variant / the builder) and add its BOARD rows."""
    if not TR.grid2_measured_path().is_file():
        return
    m = TR.measured2()
    g = TR.accuracy(m)
    blind = m[m["kind"] == "blind"]
    ctl = m[m["kind"] == "control"]
    print(f"\n== torch RMSNorm grid 2 ({len(blind)} blind shapes + {len(ctl)} campaign controls; F.rms_norm bf16 with "
          f"a weight, torch 2.11 on the H100, 2026-11-28; predicted before measuring, commit {TR.PREDICTION2_COMMIT}: "
          f"{TR.GRID2_PREDICTION}; measured {TR.GRID2_MEASURED}). Regimes as grid 1's (lone <= 132 rows, mid = one "
          f"wave of 2-16 blocks per SM, stream = several waves). main = main f845e58's form ({TR.describe(TR.CAND)}), "
          f"cand2 = grid 2's form ({TR.describe2(TR.CAND2)}), cand2b = the same with STREAM <= 3.0 TB/s and a p-norm "
          f"({TR.describe2(TR.CAND2B)}), both fitted on the 44 looked-at rows (campaign 14 + grid 1's 30); builder = "
          f"the builder's one elementwise op (shipped: {TR.SHIPPED2}); blind rows only; |error| median / p90, signed "
          f"median, %")
    print(g.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    print("  controls (campaign shapes re-timed, not blind; the first is the run's first timed shape): " + "; ".join(
        f"{int(r.rows)} x {int(r.n)} {r.median_us:.2f} us (main {r.err_main:+.1f} %, cand2 {r.err_cand2:+.1f} %)"
        for r in ctl.itertuples()))
    print("  cand2 meets all three regimes (main: lone only). Still off under cand2: 1700 x 1000 -16 % and 2060 x 2048 "
          "-18 % (mid rows of 2 rounds at 13-16 blocks per SM: suspected a per-block launch / retire cost the form lacks), 6000 x "
          "896 -14 % and 14000 x 1000 -11 % (stream rows of 2 rounds: the same per-block cost), 700 x 9216 +12 % and "
          "4500 x 6144 +10 % (the warm / re-read ramps' edges)")
    for name, _ in TR.MODELS2:
        if name in ("cand2b", "builder"):
            continue
        met = int((g.set_index("regime").loc[list(TR.REGIMES), f"{name}_met"] == "yes").sum())
        shipped = " (shipped)" if name == TR.SHIPPED2 else ""
        what = "main f845e58's form (grid 1's)" if name == "main" else "grid 2's form"
        BOARD.add(FAMILY, "blind", f"grid2 ({len(blind)}), {what}{shipped}, committed", blind[f"err_{name}"], met,
                  len(TR.REGIMES))
    if TR.grid2_measured_path(TR.GRID2_REPLICATE).is_file():
        _replicate(m)


def _replicate(first) -> None:
    """Grid 2 timed again on a second H100 lease: the spread between the two runs and each form on the second."""
    import numpy as np

    r = TR.measured2(TR.GRID2_REPLICATE)
    g = TR.accuracy(r).set_index("regime")
    j = first.merge(r[["rows", "n", "median_us"]], on=["rows", "n"], suffixes=("", "_rep"))
    spread = (j["median_us_rep"] / j["median_us"] - 1).abs() * 100
    print(f"  second lease ({TR.GRID2_REPLICATE}; asked for an H200, served by an H100): run-to-run |difference| "
          f"median {np.median(spread):.1f} / p90 {np.percentile(spread, 90):.1f} %; on it, per model (median / p90 %, "
          "regimes met): " + "; ".join(
              f"{name} {g.loc['pooled', f'{name}_med']:.1f} / {g.loc['pooled', f'{name}_p90']:.1f}, "
              f"{int((g.loc[list(TR.REGIMES), f'{name}_met'] == 'yes').sum())} of {len(TR.REGIMES)}"
              for name, _ in TR.MODELS2))
