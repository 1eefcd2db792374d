"""Command line: `sparsesim <command>`; each command is a module of `simulator.commands`.

    sparsesim run [SCENARIO]        price a scenario (default: the shipped quickstart): tables, CSV, plot
    sparsesim sweep SCENARIO        price the whole strategy-tuple product, report skips, rank
    sparsesim scenarios list|show   the shipped scenarios
    sparsesim hw list | show NAME   hardware specs and the source of every number
    sparsesim models list | show NAME
    sparsesim strategies [AXIS] [--sources]   strategy values, parameters, defaults (and their sources)
    sparsesim figures list | run SCENARIO     paper reproductions (simulator/figures)
    sparsesim calibrate fit DATA.csv | report [DEVICE]   fit / check roofline efficiencies
    (and simulate, plan, trace where their packages are installed)

Errors a user can cause print one clear message (no traceback) and exit with status 2; a valid input where nothing
fits (nothing priced, nothing in memory, no plan candidate, no finished request) exits with status 3.
"""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from simulator import commands
from simulator.commands._common import BAD_INPUT, UsageError

# kept for callers of the old module-level names
_UsageError = UsageError


def _command_modules() -> list[str]:
    found = [m.name for m in pkgutil.iter_modules(commands.__path__) if not m.name.startswith("_")
             and m.name != "outputs"]
    ordered = [n for n in commands.COMMAND_ORDER if n in found]
    return ordered + sorted(set(found) - set(ordered))


def build_parser() -> argparse.ArgumentParser:
    from simulator.commands._common import EXIT_STATUS_HELP

    p = argparse.ArgumentParser(prog="sparsesim", description="Performance model and simulator of long-context "
                                "LLM serving with sparse attention, top-k, KV compression and speculation.",
                                epilog=EXIT_STATUS_HELP)
    sub = p.add_subparsers(dest="command")
    for name in _command_modules():
        importlib.import_module(f"{commands.__name__}.{name}").register(sub)
    for cmd in sub.choices.values():   # every command's --help states the exit statuses too
        cmd.epilog = f"{cmd.epilog}\n\n{EXIT_STATUS_HELP}" if cmd.epilog else EXIT_STATUS_HELP
    return p


def main(argv: list[str] | None = None) -> int:
    from hwmodels.errors import SparsesimError

    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return BAD_INPUT
    try:
        return args.func(args)
    except SparsesimError as e:
        print(f"sparsesim: error: {e}", file=sys.stderr)
        return BAD_INPUT
    except KeyboardInterrupt:
        print("sparsesim: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
