"""`sparsesim run [SCENARIO]`: price a scenario (default: the shipped quickstart) and print its tables."""
from __future__ import annotations

from simulator.commands._common import (
    NOTHING_FITS,
    OutputDir,
    add_json_argument,
    add_out_argument,
    add_set_argument,
    calibration_lines,
    emit_json,
)

DEFAULT_SCENARIO = "quickstart"


def register(sub) -> None:
    r = sub.add_parser("run", help="price a scenario and print tables, write CSV and a plot")
    r.add_argument("scenario", nargs="?", help=f"a scenario YAML path or a shipped name (default {DEFAULT_SCENARIO};"
                                               " see `sparsesim scenarios list`)")
    add_out_argument(r)
    add_set_argument(r)
    add_json_argument(r)
    r.add_argument("--breakdown", action="store_true", help="also write breakdown.csv: time per op per setting")
    from simulator.parallel import add_arguments

    add_arguments(r)
    r.set_defaults(func=cmd_run)


def cmd_run(args) -> int:
    from simulator import planner, report
    from simulator.commands.outputs import check_targets, print_reproductions, write_results
    from simulator.scenario import load_scenario

    sc = load_scenario(args.scenario or DEFAULT_SCENARIO, args.set)
    check_targets(sc, overridden=bool(args.set))
    out = OutputDir.prepare(args.out, sc.name)
    from simulator.parallel import client_from_args

    with client_from_args(args) as cl:
        result = planner.evaluate(sc, breakdown=args.breakdown, progress=True, client=cl)
    print(f"scenario {sc.name} ({sc.file})" + (f": {sc.description}" if sc.description else "")
          + (f" [changed by --set {'; '.join(args.set)}: the description is the file's]" if args.set else ""))
    for line in calibration_lines(sc.hardware):
        print(line)
    print()
    if result.results.empty:
        print("nothing could be priced: every strategy tuple or setting was skipped.")
        print(report.skipped_text(result.skipped))
        emit_json(args, {"command": "run", "scenario": sc.name, "priced": 0, "skipped": result.n_skipped})
        return NOTHING_FITS
    if "table" in sc.outputs:
        print(report.run_tables(result.results))
    print(report.skipped_text(result.skipped))
    for line in write_results(sc, result, out, args.breakdown):
        print(line)
    print_reproductions(sc, out)
    for line in out.finish():
        print(line)
    df = result.results
    emit_json(args, {"command": "run", "scenario": sc.name, "file": sc.file, "priced": int(len(df)),
                     "skipped": result.n_skipped, "fit_in_memory": int(df["fits"].sum()),
                     "results": df.head(10_000).to_dict(orient="records"),
                     "files": [str(out.path / n) for n in out.written]})
    if not result.results["fits"].any():
        print("nothing fits: no setting's batch fits in memory (the tables show 'oom')")
        return NOTHING_FITS
    return 0
