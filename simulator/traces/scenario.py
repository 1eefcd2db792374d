"""The scenario section `trace:` — an attention/top-k trace whose statistics reach the strategies.

    trace: stories260K_2026-11-22          # a shipped trace name (`sparsesim trace list`)
    trace: ../my_traces/run7.npz           # or a path; relative paths resolve against the scenario's folder
    trace: {name: NAME-or-PATH}            # the same, as a mapping (room for options later)

`parse_trace_section` returns a `simulator.traces.stats.TraceStats`, stored as `Scenario.trace` and handed to
every Combo as `combo.trace`. Statistics come from the precomputed NAME.stats.npz beside the trace (shipped
for shipped traces), so a scenario with a trace loads in milliseconds; a user's new trace is analysed once
and cached beside it.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from hwmodels.errors import ScenarioError
from simulator.traces.requests import TraceError

ATTENTION_DIR = "attention"


def shipped_attention_traces() -> dict[str, Path]:
    """Shipped attention-trace name -> file (traces/attention/*.npz, statistics caches excluded)."""
    from simulator.shipped import traces_dir

    d = traces_dir() / ATTENTION_DIR
    if not d.is_dir():
        return {}
    return {p.name[:-4]: p for p in sorted(d.glob("*.npz")) if not p.name.endswith(".stats.npz")}


def find_trace(name_or_path: str | Path, base_dir: Path | None = None) -> Path:
    """A shipped trace name or a path (relative to `base_dir` when given) -> the trace file."""
    if not isinstance(name_or_path, (str, Path)) or not str(name_or_path).strip():
        raise TraceError(f"a trace is a shipped name or a path to a .npz file, got {name_or_path!r}")
    key = str(name_or_path)
    shipped = shipped_attention_traces()
    if key in shipped:
        return shipped[key]
    p = Path(key).expanduser()
    if not p.is_absolute() and base_dir is not None:
        p = Path(base_dir) / p
    if p.is_file():
        return p
    if p.exists():
        raise TraceError("is a directory (or not a regular file), not a trace file", file=str(p))
    if key.endswith(".npz") or "/" in key or "\\" in key:
        raise TraceError("no such trace file", file=str(p))
    names = ", ".join(shipped) or "(none)"
    raise TraceError(f"unknown trace {key!r}; shipped: {names} (or give a path to a .npz trace)")


def parse_trace_section(value: Any, file: str, base_dir: Path, scenario: Any = None):  # noqa: ARG001 - parser signature
    """Validate `trace:` and return its TraceStats (raises ScenarioError with field 'trace'); signature of
    simulator.scenario.SECTION_PARSERS (the trace reads nothing else of the scenario)."""
    from simulator.traces.analysis import load_stats

    if isinstance(value, dict):
        extra = set(value) - {"name"}
        if extra or "name" not in value:
            raise ScenarioError(f"a mapping takes only 'name' (a shipped trace or a path), got {sorted(value)}",
                                file=file, field="trace")
        value = value["name"]
    if not isinstance(value, str) or not value.strip():
        raise ScenarioError(f"must be a shipped trace name or a path to a .npz trace, got {value!r}", file=file,
                            field="trace")
    try:
        path = find_trace(value, base_dir)
        return load_stats(path)
    except TraceError as e:
        raise ScenarioError(str(e), file=file, field="trace") from None
