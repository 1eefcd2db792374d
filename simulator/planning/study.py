"""A capacity-planning study: which candidate serves the workload within the SLOs at the lowest cost.

    from simulator.planning.study import run_plan
    res = run_plan(load_scenario("plan_mooncake"), quick=True)
    res.table      # one row per candidate, best first (status ok first, then by the objective)
    res.runs       # one row per engine run
    res.winner     # the best row (a pandas Series), or None

Steps:
  1. candidates: the scenario's strategy tuples (simulator.planner.combos), refusals counted as in a sweep;
     every candidate's hardware needs a price (simulator.planning.prices);
  2. screen: memory fit, analytic SLO feasibility, optimistic rate (simulator.planning.screen);
  3. objective per candidate, from its capacity per replica c (requests/s), tp GPUs per replica at
     p USD per GPU-hour and the workload's mean output tokens L per request:
        target rate R:  replicas = ceil(R / c), GPUs = replicas x tp, cost = GPUs x p USD/h  (minimized)
        budget B:       replicas = floor(B / (tp p)), served rate = replicas x c               (maximized)
        neither:        USD per million output tokens at capacity = tp p / (3600 c L) x 1e6   (minimized)
     and USD per million output tokens (at the target rate, or at capacity) reported for every candidate;
  4. search in waves: candidates in order of their best case (the objective with the screen's optimistic
     rate, never worse than the engine's) go to the engine (simulator.planning.search) `wave` at a time; a
     candidate whose best case cannot beat the `keep`-th best objective verified so far is pruned ("cost").
     Waves make the pruning independent of how many Dask workers run a wave: the result is the same with
     any number of workers, or none.
"""
from __future__ import annotations

import math
import time
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from hwmodels.errors import ScenarioError

STATUS_ORDER = {"ok": 0, "budget": 1, "cost": 2, "slo": 3, "memory": 4}


@dataclass
class PlanResult:
    table: pd.DataFrame
    runs: pd.DataFrame
    skipped: Counter
    workload: object
    plan: object
    prices: object
    objective: str
    engine_runs: int
    wall_s: float
    alternatives: list = field(default_factory=list)   # (Prices, winner label, cost) under other price lists
    scenario: str = ""
    quick: bool = False

    @property
    def winner(self):
        ok = self.table[self.table["status"] == "ok"]
        return None if ok.empty else ok.iloc[0]

    @property
    def runner_up(self):
        ok = self.table[self.table["status"] == "ok"]
        return None if len(ok) < 2 else ok.iloc[1]


def _objective(plan) -> str:
    if plan.target_rate is not None:
        return "target"
    if plan.budget_usd_h is not None:
        return "budget"
    return "usd_per_mtok"


def _score(plan, obj: str, rate: float, tp: int, price: float, mean_out: float) -> float:
    """The quantity minimized (module docstring), for a replica serving `rate` requests/s."""
    if rate <= 0:
        return math.inf
    if obj == "target":
        return math.ceil(plan.target_rate / rate - 1e-9) * tp * price
    if obj == "budget":
        return -math.floor(plan.budget_usd_h / (tp * price) + 1e-9) * rate
    return tp * price / (3600.0 * rate * mean_out) * 1e6


def _search_task(shared, combo, rate_start, label):
    """One candidate's engine search (a Dask task, or called in place)."""
    from simulator.planning.search import find_capacity

    plan = shared
    s = plan.search
    return find_capacity(combo, plan.serving, plan.serving.source, plan.slo_limits, plan.goodput, rate_start,
                         s.tolerance, s.max_runs, s.seed, label)


def _bar(total: int, desc: str, progress: bool):
    from simulator.progress import progress_bar

    return progress_bar(total, desc, "candidate", progress)


def run_plan(sc, plan=None, quick: bool = False, client=None, progress: bool = False) -> PlanResult:
    """Run the study of scenario `sc` (its `plan:` section, or `plan`)."""
    from simulator import planner
    from simulator.engine.api import load_source
    from simulator.planning.prices import alternative_lists, prices_for
    from simulator.planning.screen import Workload, screen

    t0 = time.perf_counter()
    plan = plan if plan is not None else sc.plan
    if plan is None:
        raise ScenarioError("has no plan: section; `sparsesim plan` needs one (see simulator/planning/config.py)",
                            file=sc.file, field="plan")
    if quick:
        plan = plan.quick_version()
    prices = prices_for(plan.price_list, plan.price_override, plan.file)
    trace = load_source(plan.serving.source, seed=plan.search.seed)
    if len(trace) < 2:
        raise ScenarioError(f"the workload has {len(trace)} request(s); a plan needs at least 2", file=plan.file,
                            field="plan.workload")
    wl = Workload.of(trace)
    obj = _objective(plan)

    # 1. candidates
    skipped: Counter = Counter()
    cands = []
    for combo in planner.combos(sc):
        reason = planner.combo_refusal(combo)
        if reason:
            skipped[reason] += 1
            continue
        cands.append(combo)
    missing = sorted({c.hardware.name for c in cands if prices.of(c.hardware.name) is None})
    if missing:
        raise ScenarioError(f"no price for {', '.join(missing)} in price list {prices.list_name}; give one under "
                            "plan.prices.override (USD per GPU-hour)", file=plan.file, field="plan.prices")

    # 2. screen
    rows = []
    caching = plan.serving.scheduler.get("enable_prefix_caching", True)
    bar = _bar(len(cands), "screening candidates", progress)
    for i, c in enumerate(cands):
        s = screen(c, wl, plan.slo_limits, caching)
        price = prices.of(c.hardware.name)
        rows.append({
            "id": i, "hardware": c.hardware.name, "model": c.model.name, "strategy": c.strategy_label(),
            "kv_dtype": c.kv_dtype, "weight_dtype": c.weight_dtype, "parallel": c.parallel_label(),
            "gpus_per_replica": c.tp, "usd_per_gpu_hour": price, "status": s.status, "reason": s.reason,
            "screen_max_batch": s.max_batch, "screen_tpot_b1_ms": s.tpot_b1_ms, "screen_ttft_b1_ms": s.ttft_b1_ms,
            "screen_tokens_per_s": s.best_tokens_per_s, "screen_rate_ub": s.rate_ub, "screen_rate_est": s.rate_est,
            "best_case": _score(plan, obj, s.rate_ub, c.tp, price, wl.mean_output) if s.ok else math.inf,
        })
        if bar is not None:
            bar.update()
    if bar is not None:
        bar.close()

    # 3-4. engine search in waves, branch and bound on the best case
    order = sorted((r for r in rows if r["status"] == "ok"), key=lambda r: (r["best_case"], r["id"]))
    results: dict[int, object] = {}
    verified: list[float] = []
    keep, wave = plan.search.keep, plan.search.wave
    bar = _bar(len(order), "engine search", progress)
    pos = 0
    while pos < len(order):
        bound = sorted(verified)[keep - 1] if len(verified) >= keep else math.inf
        batch = []
        while pos < len(order) and len(batch) < wave:
            r = order[pos]
            pos += 1
            if r["best_case"] >= bound:
                r["status"] = "cost"
                r["reason"] = _cost_reason(obj, r["best_case"], bound, keep)
                if bar is not None:
                    bar.update()
                continue
            batch.append(r)
        if not batch:
            continue
        items = [(cands[r["id"]], r["screen_rate_est"], f"{r['hardware']} {r['parallel']} {r['strategy']}")
                 for r in batch]
        if client is not None:
            from simulator.parallel import map_ordered

            outs = list(map_ordered(client, _search_task, plan, items))
        else:
            outs = [_search_task(plan, *it) for it in items]
        for r, res in zip(batch, outs):
            results[r["id"]] = res
            if res.status == "ok":
                verified.append(_score(plan, obj, res.capacity, r["gpus_per_replica"], r["usd_per_gpu_hour"],
                                       wl.mean_output))
            if bar is not None:
                bar.update()
    if bar is not None:
        bar.close()

    # the table
    run_rows = []
    for r in rows:
        res = results.get(r["id"])
        r["engine_runs"] = 0 if res is None else len(res.runs)
        if res is None:
            continue
        for k, run in enumerate(res.runs):
            run_rows.append({"id": r["id"], "run": k, "rate_req_s": run.rate, "passed": run.passed,
                             "gpus": r["gpus_per_replica"], "usd_per_gpu_hour": r["usd_per_gpu_hour"],
                             **{f"sim_{kk}": v for kk, v in run.summary.items()}})
        if res.status != "ok":
            r["status"], r["reason"] = "slo", f"engine: {res.reason}"
            continue
        best = res.best
        r["capacity_req_s"] = res.capacity
        r["capacity_is_floor"] = res.at_least
        if res.at_least:
            r["reason"] = res.reason
        for k in ("ttft_p90_ms", "tpot_p90_ms", "e2e_p90_ms", "output_tokens_per_s", "slo_attainment"):
            r[k] = best.summary.get(k)
        out_tps = best.summary.get("output_tokens_per_s") or res.capacity * wl.mean_output
        r["output_tokens_per_s_per_gpu"] = out_tps / r["gpus_per_replica"]
        r["usd_per_mtok_at_capacity"] = r["gpus_per_replica"] * r["usd_per_gpu_hour"] / (3600.0 * out_tps) * 1e6
        tp, price = r["gpus_per_replica"], r["usd_per_gpu_hour"]
        if obj == "target":
            reps = math.ceil(plan.target_rate / res.capacity - 1e-9)
            r["replicas"] = reps
            r["gpus"] = reps * tp
            r["usd_per_hour"] = reps * tp * price
            r["usd_per_mtok"] = r["usd_per_hour"] / (3600.0 * plan.target_rate * wl.mean_output) * 1e6
        elif obj == "budget":
            reps = math.floor(plan.budget_usd_h / (tp * price) + 1e-9)
            if reps == 0:   # not even one replica: nothing is served, so this is no deployment at all
                r["status"] = "budget"
                r["reason"] = (f"one replica ({tp} GPU(s) at ${price:,.2f}/h = ${tp * price:,.2f}/h) costs more than "
                               f"the budget of ${plan.budget_usd_h:,.2f}/h")
                r["replicas"], r["gpus"], r["usd_per_hour"], r["served_req_s"] = 0, 0, 0.0, 0.0
                r["objective"] = math.inf
                continue
            r["replicas"] = reps
            r["gpus"] = reps * tp
            r["usd_per_hour"] = reps * tp * price
            r["served_req_s"] = reps * res.capacity
            r["usd_per_mtok"] = (r["usd_per_hour"] / (3600.0 * r["served_req_s"] * wl.mean_output) * 1e6
                                 if reps else math.inf)
        else:
            r["usd_per_mtok"] = r["usd_per_mtok_at_capacity"]
        r["objective"] = _score(plan, obj, res.capacity, tp, price, wl.mean_output)
    table = pd.DataFrame(rows)
    if "objective" not in table:
        table["objective"] = np.nan
    if "usd_per_mtok_at_capacity" not in table:
        table["usd_per_mtok_at_capacity"] = np.nan
    table["status_rank"] = table["status"].map(STATUS_ORDER)
    # ties on the objective (same replica count) go to the lower cost per token at capacity
    table = table.sort_values(["status_rank", "objective", "usd_per_mtok_at_capacity", "best_case", "id"],
                              kind="stable").drop(columns=["status_rank"]).reset_index(drop=True)
    table.insert(0, "rank", np.arange(1, len(table) + 1))
    runs = pd.DataFrame(run_rows)

    res = PlanResult(table=table, runs=runs, skipped=skipped, workload=wl, plan=plan, prices=prices, objective=obj,
                     engine_runs=len(run_rows), wall_s=time.perf_counter() - t0, scenario=sc.name, quick=quick)
    # price sensitivity: the winner among the verified candidates under every other list that prices them all
    ok = table[table["status"] == "ok"]
    if not ok.empty:
        for alt in alternative_lists(set(ok["hardware"]), plan.price_override):
            if alt.list_name == prices.list_name:
                continue
            sc_alt = [(_score(plan, obj, row.capacity_req_s, row.gpus_per_replica, alt.of(row.hardware),
                              wl.mean_output), k) for k, row in enumerate(ok.itertuples())]
            best = min(sc_alt)
            row = ok.iloc[best[1]]
            res.alternatives.append((alt, label_of(row), best[0]))
    return res


def label_of(row) -> str:
    """A candidate in words: 'Llama-3.1-70B on H200, TP4, dense, KV fp8, weights fp8'."""
    return (f"{row['model']} on {row['hardware']}, {row['parallel']}, {row['strategy']}, KV {row['kv_dtype']}, "
            f"weights {row['weight_dtype']}")


def _cost_reason(obj: str, best_case: float, bound: float, keep: int) -> str:
    if obj == "target":
        return (f"cost: even at its optimistic (analytic) capacity it needs ${best_case:,.2f}/h, no better than the "
                f"{_nth(keep)}best verified ${bound:,.2f}/h")
    if obj == "budget":
        return (f"cost: even at its optimistic capacity it serves {-best_case:.3g} req/s within the budget, no more "
                f"than the {_nth(keep)}best verified {-bound:.3g} req/s")
    return (f"cost: even at its optimistic capacity it costs ${best_case:,.3f} per million output tokens, no better "
            f"than the {_nth(keep)}best verified ${bound:,.3f}")


def _nth(k: int) -> str:
    return {1: "", 2: "2nd ", 3: "3rd "}.get(k, f"{k}th ")
