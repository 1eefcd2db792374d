"""TensorRT-LLM's top-k with the job's on-chip rounds off the load chain: the H200's on-chip grid
(simulator/calibration/topk_trtllm_onchip.py; 52 new shapes on one H200, main and the candidate priced before the call).
The grid holds the H200 STANDING of the prefill entry, the engine's two-launch split, the padded buffer and the kernel
dispatch (declared before the call)."""
from __future__ import annotations

import numpy as np

from simulator.calibration import topk_trtllm_onchip as OC
from simulator.calibration.scoreboard import BOARD, models_table


def _errors(m):
    m["main_err_pct"] = (m["pred_main_us"] / m["median_us"] - 1.0) * 100.0
    m["cand_err_pct"] = (m["pred_us"] / m["median_us"] - 1.0) * 100.0
    return m


def _pooled(e) -> str:
    e = np.asarray(e, float)
    return f"{np.median(np.abs(e)):.1f} / {np.percentile(np.abs(e), 90):.1f} %, signed {np.median(e):+.1f} %"


def topk_trt_onchip(fmt: dict | None = None) -> None:
    fmt = fmt or {"index": False, "float_format": lambda v: f"{v:.1f}"}
    m = OC.measured()
    if m is None:
        print(f"\nthe on-chip top-k grid: not measured yet ({OC.PREDICTION} holds the prices)")
        return
    m = _errors(m)
    r = OC.measured(replicate=True)
    rr = ""
    if r is not None:
        j = m.merge(r[["kernel", "dist", "rows", "n", "median_us"]], on=["kernel", "dist", "rows", "n"], suffixes=("", "_r"))
        rr = f"; replicate run to run {np.median(np.abs(j['median_us_r'] / j['median_us'] - 1.0)) * 100:.2f} %"
    print(f"\n== THE ON-CHIP TOP-K GRID ({len(m)} new shapes on 1 x H200: TensorRT-LLM's prefill entry, causal prompts as "
          f"DSA prefill prices them, the engine's two-launch split, a padded buffer, the kernel dispatch; {OC.PREDICTION}, "
          f"commit {str(m['model_commit'].iloc[0])[:7]}, before the call{rr}): main = the model as shipped then (every "
          "job round on the load chain, the sharper shared-SM knee, grids 14-15's pair shares and L2 term, grid 22's "
          "narrow terms), cand = topk_trtllm_onchip.ONCHIP_CANDIDATE (the job's rounds at the L2 round, "
          "topk_trtllm.ONCHIP_JOB; the pair shares, the L2 term, the knee and the narrow terms refitted under it on "
          "their own H100 fit rows); declared before the call: the candidate ships if it meets more of the grid's "
          "regimes, a tie by the lower pooled median; the grid is these families' H200 STANDING; "
          "|model/measured - 1| median / p90, signed median, %")
    t = models_table(m, ("regime",), ("main", "cand"), ("main", "cand"))
    print(t.to_string(**fmt))
    mm, mc = int((t["main_goal"] == "met").sum()), int((t["cand_goal"] == "met").sum())
    ships = mc > mm or (mc == mm and np.median(np.abs(m["cand_err_pct"])) < np.median(np.abs(m["main_err_pct"])))
    print(f"  main: {_pooled(m['main_err_pct'])}, {mm} of {len(t)}; cand: {_pooled(m['cand_err_pct'])}, {mc} of "
          f"{len(t)}: {'SHIPPED (topk_trtllm.ONCHIP_JOB, hwmodels/roofline.py L1_AT_L2_ROUND)' if ships else 'not shipped'}")
    if r is not None:
        r = _errors(r)
        tr = models_table(r, ("regime",), ("cand",), ("cand",))
        print(f"  replicate: cand {_pooled(r['cand_err_pct'])}, {int((tr['cand_goal'] == 'met').sum())} of {len(tr)}")
    from simulator.calibration import topk_trtllm_h200 as H

    lab = "cand" if ships else "main"
    kernel_later = H.measured4() is not None   # the fourth dispatch grid holds the kernel dispatch's STANDING
    for fam, x in m.groupby(m["regime"].map(OC.FAMILY_OF), sort=False):
        tf = t[t["regime"].isin(set(x["regime"]))]
        BOARD.add(fam, "blind", f"the on-chip grid, {'the on-chip candidate (shipped)' if ships else 'main'}",
                  x[f"{lab}_err_pct"], int((tf[f"{lab}_goal"] == "met").sum()), len(tf),
                  standing=not (kernel_later and fam.endswith("(kernel dispatch), H200")))
        other = "main" if ships else "cand"
        BOARD.add(fam, "blind", f"the on-chip grid, {'main (the rule before)' if ships else 'the on-chip candidate'}",
                  x[f"{other}_err_pct"], int((tf[f"{other}_goal"] == "met").sum()), len(tf))
    older_grids_repriced()
    big = m.loc[m["cand_err_pct"].abs().nlargest(3).index]
    print("  largest under the candidate: " + "; ".join(
        f"{k} {d} {int(rw)} x {int(n)} {e:+.0f} %" for k, d, rw, n, e in
        zip(big["kernel"], big["dist"], big["rows"], big["n"], big["cand_err_pct"])))
    print("  the regime 'two-launch split over live rows < 200K (a 262,144-wide buffer)' holds one row of 240K live "
          "scores (9 x 240K: the padded grid's control kind), as declared before the call")


def _repriced(m, hw, price) -> tuple[str, int, int]:
    """`m` (a measured grid with `regime`) re-priced by the shipped model: pooled figures and regimes met."""
    x = m[m["kernel"].astype(str).str.startswith("trt")].reset_index(drop=True)
    x["now_err_pct"] = (price(x, hw) / x["median_us"].astype(float) - 1.0) * 100.0
    t = models_table(x, ("regime",), ("now",), ("now",))
    return _pooled(x["now_err_pct"]), int((t["now_goal"] == "met").sum()), len(t)


def older_grids_repriced() -> None:
    """LOOKED-AT: the grids these families stood on before, and the H100's TensorRT-LLM STANDING grid (22, judged under
    the rule before), re-priced by the shipped model."""
    from hwmodels.spec import load_hardware
    from simulator.calibration import topk_engines as TE
    from simulator.calibration import topk_trtllm_h200 as H
    from simulator.calibration import topk_trtllm_op as O
    from simulator.calibration import topk_trtllm_prefill as PF

    h200, h100 = load_hardware("H200"), load_hardware("H100-SXM")
    rows = [("the third H200 dispatch grid (was the kernel dispatch's STANDING)", H.measured3(), h200, TE.predict_trtllm),
            ("the prefill stagger grid (was the prefill entry's)", PF.measured3(), h200, PF._price_grid),
            ("the third op grid (was the two-launch split's)", O.measured(grid="lead"), h200, TE.predict_trtllm),
            ("the padded-buffer grid (was the padded buffer's)", O.measured(grid="width"), h200, TE.predict_trtllm),
            ("H100 grid 22 (the H100's STANDING, judged under the rule before)", TE.measured22(), h100,
             TE.predict_trtllm)]
    print("  LOOKED-AT, the shipped model on the older grids:")
    for name, m, hw, price in rows:
        if m is None:
            continue
        if "regime" not in m.columns:
            m = m.assign(regime=TE.regime22(m["kernel"], m["rows"], m["n"]))
        if "set" in m.columns:
            m = m[m["set"] != "scan"]
        pooled, met, n = _repriced(m, hw, price)
        print(f"    {name}: {pooled}, {met} of {n}")
