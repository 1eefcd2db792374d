"""`sparsesim plan SCENARIO`: the cheapest candidate (hardware, model, strategy tuple, parallelism, replicas) that
serves the scenario's workload within its SLOs — analytic screen, engine capacity search, ranked table,
Pareto plots and a one-page report (simulator.planning)."""
from __future__ import annotations

from simulator.commands._common import NOTHING_FITS, OutputDir, add_out_argument, calibration_lines


def register(sub) -> None:
    p = sub.add_parser("plan", help="capacity plan: the cheapest deployment that meets the scenario's SLOs",
                       description="Screen every strategy tuple of the scenario analytically, find each survivor's "
                                   "highest request rate within the SLOs with the serving engine, and rank by cost "
                                   "(the scenario's plan: section; simulator/planning/config.py).")
    p.add_argument("scenario", help="a scenario YAML path or a shipped name with a plan: section (e.g. plan_mooncake)")
    add_out_argument(p)
    p.add_argument("--quick", action="store_true",
                   help="fewer requests per engine run and a coarser search (the plan's quick: settings)")
    from simulator.parallel import add_arguments

    add_arguments(p)
    p.set_defaults(func=cmd_plan)


def cmd_plan(args) -> int:
    from hwmodels.errors import ScenarioError
    from simulator.parallel import client_from_args
    from simulator.planning.report import summary_text, write_outputs
    from simulator.planning.study import run_plan
    from simulator.scenario import load_scenario

    sc = load_scenario(args.scenario)
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
    for line in out.finish():
        print(line)
    return 0 if res.winner is not None else NOTHING_FITS
