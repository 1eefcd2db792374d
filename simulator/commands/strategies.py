"""`sparsesim strategies [AXIS] [--sources]`: every strategy value, its parameters and their sources."""
from __future__ import annotations

from simulator.commands._common import UsageError


def register(sub) -> None:
    st = sub.add_parser("strategies", help="list every strategy axis value with its parameters and defaults")
    st.add_argument("axis", nargs="?", help="only this axis")
    st.add_argument("--sources", action="store_true", help="also print where each default comes from")
    st.set_defaults(func=cmd_strategies)


def cmd_strategies(args) -> int:
    from simulator.strategies.base import AXES, DEFAULT_VALUE, registry

    reg = registry()
    axes = [args.axis] if args.axis else list(AXES)
    for a in axes:
        if a not in reg:
            raise UsageError(f"unknown axis {a!r}; axes: {', '.join(AXES)}")
        print(f"{a}:  (default {DEFAULT_VALUE[a]})")
        for name, cls in sorted(reg[a].items()):
            print(f"  {name:<14} {cls.description}")
            for p, spec in cls.params.items():
                print(f"      {p} = {spec.default!r}   [{spec.allowed}]" if spec.allowed else f"      {p} = {spec.default!r}")
                if args.sources:
                    print(f"          source: {spec.source}")
        print()
    print("Also per scenario: kv_dtype, weight_dtype, parallelism {tp, ep, attn_dp}; runtime launch/kernels.")
    return 0


