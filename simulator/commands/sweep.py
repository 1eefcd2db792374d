"""`sparsesim sweep SCENARIO`: price the whole strategy-tuple product, count skips, rank under the SLO."""
from __future__ import annotations

from simulator.commands._common import OutputDir, add_out_argument


def register(sub) -> None:
    s = sub.add_parser("sweep", help="price the whole strategy-tuple product, report skips, rank")
    s.add_argument("scenario", help="a scenario YAML path or a shipped name")
    add_out_argument(s)
    s.set_defaults(func=cmd_sweep)


def cmd_sweep(args) -> int:
    from simulator import planner, report
    from simulator.commands.outputs import write_results
    from simulator.scenario import load_scenario

    sc = load_scenario(args.scenario)
    out = OutputDir.prepare(args.out, sc.name)
    result = planner.evaluate(sc, breakdown=False, progress=True)
    n_combos = sum(1 for _ in planner.combos(sc))
    total = len(result.results) + result.n_skipped
    print(f"scenario {sc.name}: {n_combos} strategy tuples x {len(sc.batch) * len(sc.context) * len(sc.output_tokens)}"
          f" workload settings = {total} settings; priced {len(result.results)}, skipped {result.n_skipped}")
    print(report.skipped_text(result.skipped))
    if result.results.empty:
        return 1
    df = result.results
    n_oom = int((~df["fits"]).sum())
    n_slo = int((df["fits"] & ~df["slo_ok"]).sum())
    slo = ", ".join(f"{k} <= {v:g}" for k, v in sc.slo.items()) or "none"
    print(f"not ranked: {n_oom} do not fit in memory, {n_slo} miss the SLO ({slo})")
    print()
    ranked = planner.rank(result, sc)
    print(report.ranking_text(ranked, sc.top, f"Top {sc.top} by {sc.rank_by}"))
    print()
    print(report.ranking_text(planner.best_per_context(result, sc), 10**6,
                              f"Best per (hardware, model, context) by {sc.rank_by}"))
    print()
    for line in write_results(sc, result, out, False):
        print(line)
    if "csv" in sc.outputs:
        p = out.file("ranked.csv")
        ranked.to_csv(p, index=False)
        print(f"wrote {p}")
    for line in out.finish():
        print(line)
    return 0
