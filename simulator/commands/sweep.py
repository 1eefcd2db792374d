"""`sparsesim sweep SCENARIO`: price the whole strategy-tuple product, count skips, rank under the SLO."""
from __future__ import annotations

from simulator.commands._common import NOTHING_FITS, OutputDir, add_out_argument, calibration_lines


def register(sub) -> None:
    s = sub.add_parser("sweep", help="price the whole strategy-tuple product, report skips, rank")
    s.add_argument("scenario", help="a scenario YAML path or a shipped name")
    add_out_argument(s)
    s.add_argument("--parquet", action="store_true",
                   help="stream every priced row to results.parquet chunk by chunk instead of holding the table in "
                        "memory (for sweeps too large for it); ranked.csv then holds the best 1,000 feasible rows")
    from simulator.parallel import add_arguments

    add_arguments(s)
    s.set_defaults(func=cmd_sweep)


def cmd_sweep(args) -> int:
    from simulator import planner, report
    from simulator.commands.outputs import write_results
    from simulator.parallel import client_from_args
    from simulator.scenario import load_scenario

    sc = load_scenario(args.scenario)
    out = OutputDir.prepare(args.out, sc.name)
    parquet = out.file("results.parquet") if args.parquet else None
    with client_from_args(args) as cl:
        result = planner.evaluate(sc, breakdown=False, progress=True, parquet=parquet, client=cl)
    n_combos = planner.n_tuples(sc)
    total = result.rows + result.n_skipped
    print(f"scenario {sc.name}: {n_combos} strategy tuples x {len(sc.batch) * len(sc.context) * len(sc.output_tokens)}"
          f" workload settings = {total} settings; priced {result.rows}, skipped {result.n_skipped}")
    for line in calibration_lines(sc.hardware):
        print(line)
    print(report.skipped_text(result.skipped))
    if not result.rows:
        print("nothing could be priced: every strategy tuple or setting was skipped.")
        return NOTHING_FITS
    if result.results is not None:
        df = result.results
        n_oom = int((~df["fits"]).sum())
        n_slo = int((df["fits"] & ~df["slo_ok"]).sum())
    else:
        n_oom, n_slo = result.n_oom, result.n_slo
    slo = ", ".join(f"{k} <= {v:g}" for k, v in sc.slo.items()) or "none"
    print(f"not ranked: {n_oom} do not fit in memory, {n_slo} miss the SLO ({slo})")
    print()
    ranked = planner.rank(result, sc)
    print(report.ranking_text(ranked, sc.top, f"Top {sc.top} by {sc.rank_by}"))
    print()
    print(report.ranking_text(planner.best_per_context(result, sc), 10**6,
                              f"Best per (hardware, model, context) by {sc.rank_by}"))
    print()
    if result.results is not None:
        for line in write_results(sc, result, out, False):
            print(line)
    else:
        print(f"wrote {parquet}  ({result.rows} rows, streamed)")
        if "plot" in sc.outputs:
            print("note: no plot with --parquet (the table is not held in memory); plot from results.parquet")
    if "csv" in sc.outputs:
        p = out.file("ranked.csv")
        report.write_csv(ranked, p, progress=True)
        what = ""
        if result.results is None:
            n_feasible = result.rows - n_oom - n_slo
            what = (f" (all {n_feasible} feasible rows)" if len(ranked) == n_feasible else
                    f" (the best {len(ranked)} of {n_feasible} feasible rows; all rows are in results.parquet)")
        print(f"wrote {p}{what}")
    for line in out.finish():
        print(line)
    if ranked.empty:
        print("nothing fits: no setting fits in memory within the SLO, so nothing is ranked")
        return NOTHING_FITS
    return 0
