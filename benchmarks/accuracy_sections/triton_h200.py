"""The H200's vLLM Triton grid (lab/kernels/triton_decode_h200.py, 1 x H200, 2026-11-28): 36 new shapes of vLLM's Triton
unified attention over Triton decode blind grid 8's regimes, 16 of them lone 2D programs (the regime part E missed
warm), each timed warm (the family's harness) and in the engine's state (cold), priced before the call by the product
as committed (no model change: the H100-SXM's terms). Declared before the call as vLLM Triton's two H200 STANDING rows
(part E's give them up: h200_transfer_e.MOVED_ON); the second run on the same warm machine is its replicate.
"""
from __future__ import annotations

import numpy as np

from simulator.calibration import h200_transfer as HT
from simulator.calibration.scoreboard import BOARD, models_table

#: row role -> the board's family label
FAMILY = {"blind": "triton_vllm, H200", "cold": "triton_vllm, cold (engine state), H200"}


def triton_h200(fmt: dict | None = None) -> None:
    fmt = fmt or {"index": False, "float_format": lambda v: f"{v:.1f}"}
    b = HT.load_triton_h200()
    if not len(b):
        return
    print(f"\n== THE H200'S vLLM TRITON GRID ({len(b)} rows: 36 shapes in none of the committed rows of either Triton "
          f"family, warm and cold, {b['file'].iloc[0]}; {HT.PRED_TRITON_H200_CSV}, model at "
          f"{str(b['model_commit'].iloc[0])[:7]}, before the call), BLIND: the product as committed (the H100-SXM's "
          "terms); vLLM Triton's H200 STANDING (declared before the call); |model/measured - 1| median / p90, signed "
          "median, %")
    r = HT.load_triton_h200(replicate=True)
    for role, x in b.groupby("row_role", sort=False):
        t = models_table(x, ("regime",), ("new",), ("new",))
        e = x["new_err_pct"]
        met = int((t["new_goal"] == "met").sum())
        print(f"-- {'warm (the harness)' if role == 'blind' else 'cold (the engine state)'}:")
        print(t.to_string(**fmt))
        line = (f"   median |error| {np.median(e.abs()):.1f} %, p90 {np.percentile(e.abs(), 90):.1f} %, signed "
                f"{np.median(e):+.1f} %; regimes met {met} of {len(t)}")
        if len(r):
            rr = r[r["row_role"] == role]
            tr = models_table(rr, ("regime",), ("new",), ("new",))
            line += (f"; replicate {np.median(rr['new_err_pct'].abs()):.1f} / "
                     f"{np.percentile(rr['new_err_pct'].abs(), 90):.1f} %, {int((tr['new_goal'] == 'met').sum())} of "
                     f"{len(tr)}")
        print(line)
        # the STANDING moved on to the second grid (triton_h200_calls) once it was measured
        BOARD.add(FAMILY[role], "blind", "the H200's vLLM Triton grid, the product as committed", e, met, len(t),
                  standing=not len(HT.load_triton_h200_calls()))


#: the second grid's judged roles -> (the board's family, the section's heading)
CALLS_ROLES = {"blind": ("blind", "warm (the harness, its own call count)"),
               "cold": ("cold", "cold (the engine state)")}


def _met(t, lab) -> int:
    return int((t[f"{lab}_goal"] == "met").sum())


def triton_h200_calls(fmt: dict | None = None) -> None:
    fmt = fmt or {"index": False, "float_format": lambda v: f"{v:.1f}"}
    b = HT.load_triton_h200_calls()
    if not len(b):
        return
    warm = b["row_role"].isin(["blind", "blind_many", "recheck"]).to_numpy()
    same = bool((b.loc[warm, "calls"].to_numpy(float) == b.loc[warm, "calls_measured"].to_numpy(float)).all())
    print(f"\n== THE H200'S SECOND vLLM TRITON GRID ({len(b)} rows: 36 new shapes warm and cold, the 16 lone 2D ones "
          f"also warm at 32 calls, 6 rows of the first grid re-timed; {b['file'].iloc[0]}; "
          f"{HT.PRED_TRITON_H200_CALLS_CSV}, main = the model at {str(b['model_commit'].iloc[0])[:7]}, the candidates committed with the prices in defcde5, before the call; each warm "
          f"row's graph call count fixed there{'' if same else ' (SOME CALL COUNTS DIFFER)'}): main = the product as "
          "committed (the warm K/V footprint R copies x the K/V), A = the footprint the graph's calls touch, "
          "min(calls, R) x the K/V (fit_production_attention.TV_HARNESS_CALLS; committed terms, no engine price "
          "moves), B = A with the family's terms refitted under it; declared before the call: A ships if it meets "
          "more warm regimes than main, B over A only with more warm + cold regimes; the warm and cold rows are vLLM "
          "Triton's H200 STANDING; |model/measured - 1| median / p90, signed median, %")
    labs = tuple(HT.TRITON_CALLS_MODELS.values())
    r = HT.load_triton_h200_calls(replicate=True)
    met, nreg = {}, {}
    for role, (fam, head) in CALLS_ROLES.items():
        x = b[b["row_role"] == role]
        t = models_table(x, ("regime",), labs, labs)
        print(f"-- {head}:")
        print(t.to_string(**fmt))
        met[role], nreg[role] = {lab: _met(t, lab) for lab in labs}, len(t)
        line = "   " + "; ".join(f"{lab} {np.median(x[f'{lab}_err_pct'].abs()):.1f} / "
                                  f"{np.percentile(x[f'{lab}_err_pct'].abs(), 90):.1f} %, {met[role][lab]} of {len(t)}"
                                  for lab in labs)
        if len(r):
            rr = r[r["row_role"] == role]
            tr = models_table(rr, ("regime",), ("A",), ("A",))
            line += (f"; replicate A {np.median(rr['A_err_pct'].abs()):.1f} / "
                     f"{np.percentile(rr['A_err_pct'].abs(), 90):.1f} %, {_met(tr, 'A')} of {len(tr)}")
        print(line)
        BOARD.add(FAMILY[fam], "blind", "the H200's second vLLM Triton grid, A: the graph's calls (shipped)",
                  x["A_err_pct"], met[role]["A"], len(t), standing=True)
    ship_a = met["blind"]["A"] > met["blind"]["main"]
    ab = {lab: met["blind"][lab] + met["cold"][lab] for lab in ("A", "B")}
    print(f"   verdict: A {met['blind']['A']} of {nreg['blind']} warm regimes against main's "
          f"{met['blind']['main']}: {'SHIPPED' if ship_a else 'not shipped'}; B {ab['B']} warm + cold regimes against "
          f"A's {ab['A']}: {'shipped' if ab['B'] > ab['A'] else 'NOT shipped (a tie keeps A)' if ab['B'] == ab['A'] else 'NOT shipped'}")
    many = b[b["row_role"] == "blind_many"]
    print(f"   not judged: the lone 2D programs at 32 calls (every copy read, the footprint both main and A give them) "
          f"{np.median(many['A_err_pct'].abs()):.1f} / {np.percentile(many['A_err_pct'].abs(), 90):.1f} %, signed "
          f"{np.median(many['A_err_pct']):+.1f} %")
    re = b[b["row_role"].str.startswith("recheck")]
    dev = (re["h200_us"] / re["first_us"] - 1.0) * 100.0 if "first_us" in re.columns else None
    if dev is not None:
        print(f"   the launcher rewrite (ext/vllm_unified_attention.py, the first grid's copy lost): the first grid's "
              f"{len(re)} rows re-timed {dev.min():+.1f}..{dev.max():+.1f} % of their committed times")
