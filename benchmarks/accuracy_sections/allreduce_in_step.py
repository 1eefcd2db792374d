"""The engines' all-reduce inside a decode step (simulator/calibration/allreduce_in_step.py; lab/kernels/
measure_allreduce_in_step.py): per-call epsilon of the all-reduce after a GEMM over the parts timed alone, the four
looked-at 4 x H200 runs (Llama-3.1-70B's row-parallel shapes) and the blind in-step grid (Llama-3.1-8B / Qwen2.5-32B
shapes) judged by the rule committed before it (the H200's after_gemm constant, adopted), and the step-2 grid (Qwen2.5 /
Mistral-Large shapes) that replaced the constant by a share of the preceding GEMM's memory time (adopted by its rule)."""
from __future__ import annotations

from simulator.calibration.scoreboard import BOARD


def _cells(df, cols) -> None:
    """Print a grid's cells (signed, two decimals)."""
    import pandas as pd

    with pd.option_context("display.width", 200):
        print(df[cols].to_string(index=False, float_format=lambda v: f"{v:+.2f}"))


def allreduce_in_step() -> None:
    """Print the looked-at epsilons (with the spin controls), the blind cells against FITTED_EPS_US and 0, BOARD rows of
    the blind steps' error (parts + 2 L epsilon against the measured step)."""
    import pandas as pd

    from simulator.calibration import allreduce_in_step as S

    t = S.looked_at()
    print("\n== engines' all-reduce inside a decode step (4 x H200, vLLM's custom all-reduce after row-parallel GEMMs; "
          "epsilon = the per-call cost the parts timed alone miss, us; eps_spin / eps_gspin = spin-kernel controls)")
    g = t.groupby(["world", "tokens"])[["eps", "eps_spin", "eps_gspin"]].median().reset_index()
    print("  looked-at (Llama-3.1-70B shapes, 4 runs; median per cell):")
    with pd.option_context("display.width", 200):
        print(g.to_string(index=False, float_format=lambda v: f"{v:+.2f}"))
    print(f"  fitted epsilon (pooled median of {len(t)} cells): {S.fitted_epsilon_us():.3f} us, committed "
          f"{S.FITTED_EPS_US} us before the blind grid")
    r = S.judge_blind()
    if r is None:
        return
    c = r["cells"]
    print(f"  blind grid (Llama-3.1-8B / Qwen2.5-32B shapes, T {S.BLIND_TOKENS}, L {S.BLIND_LAYERS}): measured "
          f"epsilon nearer {S.FITTED_EPS_US} than 0 in {r['nearer']} of {r['n']} cells (rule: >= {S.ADOPT_MIN_CELLS}, "
          f"and median |error| {c['abs_fit'].median():.2f} < {c['abs_zero'].median():.2f} us): "
          f"{'ADOPTED' if r['adopt'] else 'not adopted'}")
    _cells(c, ["world", "hidden", "tokens", "eps", "abs_fit", "abs_zero", "step_err_fit_%", "step_err_zero_%"])
    rep = S.judge_blind(run=S.BLIND_REPLICATE)
    if rep is not None:
        rc = rep["cells"]
        print(f"  the blind grid's replicate (a second lease): nearer {S.FITTED_EPS_US} than 0 in {rep['nearer']} of "
              f"{rep['n']}, median |error| {rc['abs_fit'].median():.2f} against {rc['abs_zero'].median():.2f} us")
    z = S.sizes_probe()
    if z is not None:
        print(f"  small-GEMM probe (looked-at, after the judgement; hidden {sorted(set(z['hidden']))}, ffn 8192): epsilon "
              f"{z['eps'].min():+.2f} .. {z['eps'].max():+.2f} us -- no wait where the GEMMs are short (2-6 us)")
    f2 = S.fit_step2_share()
    print(f"  step-2 candidate (priced before its grid, {S.STEP2_PRED_CSV}): the wait = {S.STEP2_SHARE} x sqrt(g - 1) x "
          f"the preceding GEMM's memory time, no constant; on the {f2['cells']} looked-at cells rms "
          f"{f2['rms_us']['candidate']:.2f} us against the constant's {f2['rms_us']['shipped']:.2f} and 0's "
          f"{f2['rms_us']['zero']:.2f}")
    for col, what in (("step_err_fit_%", f"parts + 2 L x {S.FITTED_EPS_US} us (adopted then)"),
                      ("step_err_zero_%", "parts alone (epsilon 0)")):
        BOARD.add("all-reduce in a step (H200)", "blind", f"blind in-step grid, step at L = {S.BLIND_LAYERS[-1]}: {what}",
                  c[col])
    r2 = S.judge_step2()
    if r2 is None:
        print("  its grid: not run yet")
        return
    c2 = r2["cells"]
    print(f"  step-2 grid (Qwen2.5-7B / Qwen2.5-14B / Mistral-Large shapes {S.STEP2_DIMS}, T {S.STEP2_TOKENS}, L "
          f"{S.STEP2_LAYERS}): the candidate nearer than the constant in {r2['nearer']} of {r2['n']} cells, median "
          f"|error| {c2['abs_candidate'].median():.2f} against {c2['abs_shipped'].median():.2f} us (rule: more than half "
          f"and a lower median): {'ADOPTED (shipped: after_gemm_share)' if r2['adopt'] else 'not adopted'}")
    _cells(c2, ["world", "hidden", "tokens", "eps", "eps_candidate_us", "step_err_candidate_%", "step_err_shipped_%",
                "step_err_zero_%"])
    rep2 = S.judge_step2(run=S.STEP2_REPLICATE)
    if rep2 is not None:
        rc2 = rep2["cells"]
        print(f"  the step-2 grid's replicate (same lease): nearer in {rep2['nearer']} of {rep2['n']}, median |error| "
              f"{rc2['abs_candidate'].median():.2f} against {rc2['abs_shipped'].median():.2f} us")
    for col, what in (("step_err_candidate_%", "parts + 2 L x share wait (shipped)"),
                      ("step_err_shipped_%", f"parts + 2 L x {S.FITTED_EPS_US} us (the constant it replaced)"),
                      ("step_err_zero_%", "parts alone (epsilon 0)")):
        BOARD.add("all-reduce in a step (H200)", "blind", f"step-2 in-step grid, step at L = {S.STEP2_LAYERS[-1]}: {what}",
                  c2[col])
    rt = S.judge_trt()
    if rt is None:
        return
    ct = rt["cells"]
    print(f"  TensorRT-LLM's kernels in a step (the same shapes; the Lamport one-shot everywhere, the two-shot where tokens > "
          f"ranks; priced before the run with the shipped wait, which the model charges every custom kind): the wait "
          f"nearer than 0 in {rt['nearer']} of {rt['n']} pairs, median |error| {ct['abs_shipped'].median():.2f} against "
          f"{ct['abs_zero'].median():.2f} us (rule: at least half and a lower median): "
          f"{'KEPT for TensorRT-LLM' if rt['keep'] else 'restricted to vLLM / SGLang'}")
    _cells(ct, ["world", "hidden", "tokens", "impl", "engine_pick", "eps", "eps_shipped_us", "step_err_shipped_%",
                "step_err_zero_%"])
    rr = S.judge_trt(run=S.TRT_REPLICATE)
    if rr is not None:
        print(f"  its replicate (same lease): nearer in {rr['nearer']} of {rr['n']}, median |error| "
              f"{rr['cells']['abs_shipped'].median():.2f} against {rr['cells']['abs_zero'].median():.2f} us")
    for col, what in (("step_err_shipped_%", "parts + 2 L x the shipped wait"), ("step_err_zero_%", "parts alone")):
        BOARD.add("all-reduce in a step (H200)", "blind",
                  f"TensorRT-LLM in-step grid, step at L = {S.STEP2_LAYERS[-1]}: {what}", ct[col])
