"""`sparsesim figures list | run SCENARIO`: the paper reproductions."""
from __future__ import annotations

from simulator.commands._common import OutputDir, UsageError, add_out_argument, add_set_argument


def register(sub) -> None:
    f = sub.add_parser("figures", help="paper reproductions: list them, or run a scenario's targets only")
    f.add_argument("action", choices=["list", "run"])
    f.add_argument("scenario", nargs="?", help="run: a scenario with targets: (a path, a shipped name, or a "
                                               "reproduction name from `figures list`)")
    add_out_argument(f)
    add_set_argument(f)
    f.set_defaults(func=cmd_figures)


def cmd_figures(args) -> int:
    from simulator.commands.outputs import print_reproductions
    from simulator.figures import reproductions, scenario_for
    from simulator.scenario import load_scenario

    reg = reproductions()
    if args.action == "list":
        if args.scenario:
            raise UsageError(f"figures list takes no argument (got {args.scenario!r}); use `sparsesim figures run NAME`")
        print(f"{'reproduction':<28} {'shipped scenario':<24} what it compares")
        for name, fn in sorted(reg.items()):
            doc = (fn.__doc__ or "").strip().splitlines()
            print(f"{name:<28} {scenario_for(name) or '-':<24} {doc[0] if doc else ''}")
        return 0
    if not args.scenario:
        raise UsageError("figures run needs a SCENARIO with targets: or a reproduction name (see `figures list`)")
    target = args.scenario
    if target in reg and scenario_for(target):
        target = scenario_for(target)
    sc = load_scenario(target, args.set)
    if not sc.targets:
        raise UsageError(f"{sc.file} names no reproductions (targets:)")
    out = OutputDir.prepare(args.out, sc.name)
    print_reproductions(sc, out)
    for line in out.finish():
        print(line)
    return 0
