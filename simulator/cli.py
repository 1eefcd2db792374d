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
    from simulator.commands._common import EXIT_STATUS_HELP, add_json_argument

    p = argparse.ArgumentParser(prog="sparsesim", description="Performance model and simulator of long-context "
                                "LLM serving with sparse attention, top-k, KV compression and speculation.",
                                epilog=EXIT_STATUS_HELP)
    sub = p.add_subparsers(dest="command")
    for name in _command_modules():
        importlib.import_module(f"{commands.__name__}.{name}").register(sub)
    for cmd in sub.choices.values():   # every command's --help states the exit statuses too
        cmd.epilog = f"{cmd.epilog}\n\n{EXIT_STATUS_HELP}" if cmd.epilog else EXIT_STATUS_HELP
        if "--json" not in cmd._option_string_actions:    # every command takes --json (its text inside the object)
            add_json_argument(cmd)
    return p


def main(argv: list[str] | None = None) -> int:
    from hwmodels.errors import SparsesimError

    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return BAD_INPUT
    as_json = bool(getattr(args, "json", False))
    try:
        if not as_json:
            return args.func(args)
        return _run_json(args)
    except SparsesimError as e:
        print(f"sparsesim: error: {e}", file=sys.stderr)
        if as_json:   # stdout still carries one JSON object
            import json

            print(json.dumps({"command": args.command, "error": str(e), "exit_status": BAD_INPUT}), flush=True)
        return BAD_INPUT
    except KeyboardInterrupt:
        print("sparsesim: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


def _run_json(args) -> int:
    """Run a command under --json: its text goes to stderr, progress is quiet, and the summary it hands over
    (commands._common.emit_json) is printed as one JSON object on stdout."""
    import contextlib
    import io
    import json

    from simulator import progress
    from simulator.commands._common import json_safe

    real = sys.stdout
    text = io.StringIO()
    progress.QUIET = True
    try:
        with contextlib.redirect_stdout(text):
            rc = args.func(args)
    finally:
        progress.QUIET = False
        sys.stderr.write(text.getvalue())      # the text report, for a person reading the terminal
    summary = getattr(args, "_json_summary", None)
    if summary is None:    # a command without a structured summary: its text report inside the object
        summary = {"command": args.command, "text": text.getvalue()}
    summary = {**json_safe(summary), "exit_status": rc}
    print(json.dumps(summary, allow_nan=False), file=real, flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
