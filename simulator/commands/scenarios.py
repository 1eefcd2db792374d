"""`sparsesim scenarios list | show NAME`: the scenarios shipped with the package."""
from __future__ import annotations

from simulator.commands._common import UsageError


def register(sub) -> None:
    s = sub.add_parser("scenarios", help="shipped scenarios: list them, or show NAME (the YAML text)")
    s.add_argument("action", choices=["list", "show"])
    s.add_argument("name", nargs="?")
    s.set_defaults(func=cmd_scenarios)


def cmd_scenarios(args) -> int:
    from hwmodels.yamlio import load_yaml, read_text
    from simulator.shipped import scenarios_dir, shipped_scenarios

    found = shipped_scenarios()
    if args.action == "list":
        if args.name:
            raise UsageError("scenarios list takes no name; use `sparsesim scenarios show NAME`")
        print(f"shipped scenarios ({scenarios_dir()}); run one with `sparsesim run NAME`:")
        width = max((len(n) for n in found), default=4)
        for name, path in found.items():
            doc = load_yaml(path, "scenario file")
            desc = doc.get("description", "") if isinstance(doc, dict) else ""
            keys = [k for k in ("targets", "serving", "plan", "trace") if isinstance(doc, dict) and k in doc]
            tag = f" [{', '.join(keys)}]" if keys else ""
            print(f"  {name:<{width}}  {' '.join(str(desc).split())[:100]}{tag}")
        return 0
    if not args.name:
        raise UsageError("scenarios show needs a NAME; see `sparsesim scenarios list`")
    name = args.name[:-5] if args.name.endswith(".yaml") else args.name
    if name not in found:
        raise UsageError(f"no shipped scenario {args.name!r}; shipped: {', '.join(found)}")
    print(f"# {found[name]}")
    print(read_text(found[name], "scenario file"), end="")
    return 0
