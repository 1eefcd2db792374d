"""`sparsesim plan SCENARIO`: the cheapest candidate (hardware, model, strategy tuple, parallelism, replicas) that
serves the scenario's workload within its SLOs — analytic screen, engine capacity search, ranked table,
Pareto plots and a one-page report (simulator.planning)."""
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


def register(sub) -> None:
    p = sub.add_parser("plan", help="capacity plan: the cheapest deployment that meets the scenario's SLOs",
                       description="Screen every strategy tuple of the scenario analytically, find each survivor's "
                                   "highest request rate within the SLOs with the serving engine, and rank by cost "
                                   "(the scenario's plan: section; simulator/planning/config.py).")
    p.add_argument("scenario", help="a scenario YAML path or a shipped name with a plan: section (e.g. plan_mooncake)")
    add_out_argument(p)
    add_set_argument(p)
    add_json_argument(p)
    p.add_argument("--quick", action="store_true",
                   help="fewer requests per engine run and a coarser search (the plan's quick: settings)")
    p.add_argument("--html", action="store_true", help="also write report.html (interactive, self-contained: Pareto of "
                                                       "throughput per GPU vs tokens/s per user, candidates, provenance)")
    from simulator.parallel import add_arguments

    add_arguments(p)
    p.set_defaults(func=cmd_plan)


def cmd_plan(args) -> int:
    from hwmodels.errors import ScenarioError
    from simulator.parallel import client_from_args
    from simulator.planning.report import summary_text, write_outputs
    from simulator.planning.study import run_plan
    from simulator.scenario import load_scenario

    sc = load_scenario(args.scenario, args.set)
    if sc.plan is None:
        raise ScenarioError("has no plan: section; `sparsesim plan` needs one (see the shipped plan_mooncake)",
                            file=sc.file, field="plan")
    out = OutputDir.prepare(args.out, sc.name)
    with client_from_args(args) as cl:
        res = run_plan(sc, quick=args.quick, client=cl, progress=True)
    print(summary_text(res))
    for line in calibration_lines(sc.hardware):
        print(line)
    print()
    for line in write_outputs(res, out):
        print(line)
    if args.html:
        from simulator.html_report import plan_report

        plan_report(out.file("report.html"), sc, res)
        print(f"wrote {out.path / 'report.html'}")
    for line in out.finish():
        print(line)
    emit_json(args, {"command": "plan", "scenario": sc.name, "file": sc.file, **plan_summary(res),
                     "files": [str(out.path / n) for n in out.written]})
    return 0 if res.winner is not None else NOTHING_FITS


def plan_summary(res) -> dict:
    """The plan's result as plain data for --json: the winner and the ranked candidates."""
    import dataclasses

    def plain(x):
        if x is None:
            return None
        if dataclasses.is_dataclass(x):
            return {f.name: plain(getattr(x, f.name)) for f in dataclasses.fields(x)
                    if not f.name.startswith("_") and isinstance(getattr(x, f.name), (int, float, str, bool, type(None),
                                                                                   dict, list, tuple))}
        if hasattr(x, "to_dict"):
            return x.to_dict(orient="records") if hasattr(x, "columns") else x.to_dict()
        return x

    out = {"winner": plain(res.winner)}
    table = getattr(res, "table", None)
    if table is not None and hasattr(table, "to_dict"):
        out["candidates"] = table.head(1000).to_dict(orient="records")
    return out
