"""The `sparsesim` sub-commands: one module per command, each with `register(subparsers)`.

`simulator.cli` imports every module of this package (in COMMAND_ORDER first, then any other) and lets
each add its parser; a module sets `func` on its parser with `set_defaults(func=...)`. A new command is a
new module here; nothing else needs editing.
"""
COMMAND_ORDER = ("run", "sweep", "simulate", "compare", "plan", "scenarios", "trace", "figures", "hw", "models",
                 "strategies", "calibrate")
