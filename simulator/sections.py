"""Validation helpers shared by the parsers of a scenario's optional sections (`serving:` in
simulator.engine.config and simulator.engine.adaptive, `plan:` in simulator.planning.config): each problem becomes
one ScenarioError that names the file and the field and says what is allowed."""
from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from hwmodels.errors import ScenarioError, SparsesimError
from simulator.strategies.base import Strategy, parse_axis


def err(msg: str, file: str, fld: str) -> ScenarioError:
    return ScenarioError(msg, file=file, field=fld)


def bare_message(e: SparsesimError) -> str:
    """The message of an error without the 'file: field 'x': ' prefix its constructor added."""
    msg = str(e)
    if e.file and msg.startswith(f"{e.file}: "):
        msg = msg[len(str(e.file)) + 2:]
    if e.field and msg.startswith(f"field '{e.field}': "):
        msg = msg[len(str(e.field)) + 10:]
    return msg


def mapping(v: Any, allowed: set, file: str, fld: str) -> dict:
    """`v` as a mapping whose keys are all in `allowed` (None = an empty mapping)."""
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise err(f"must be a mapping, got {type(v).__name__}", file, fld)
    bad = [k for k in v if not isinstance(k, str) or k not in allowed]
    if bad:
        raise err(f"unknown key(s) {sorted(map(str, bad))}; allowed: {', '.join(sorted(allowed))}", file, fld)
    return v


def number(v: Any, file: str, fld: str, lo: float = 0.0, hi: float = 1e12, strict_lo: bool = True,
           integer: bool = False) -> float:
    """A finite number (a whole one if `integer`) in (lo, hi] (or [lo, hi] when not strict_lo); never a
    boolean."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise err(f"must be a {'whole ' if integer else ''}number, got {v!r}", file, fld)
    if integer and v != int(v):
        raise err(f"must be a whole number, got {v!r}", file, fld)
    if (v <= lo if strict_lo else v < lo) or v > hi:
        lo_s = f"> {lo:g}" if strict_lo else f">= {lo:g}"
        raise err(f"must be {lo_s} and <= {hi:g}, got {v!r}", file, fld)
    return int(v) if integer else float(v)


#: a message that already names its field: "field 'x': ..."
FIELD_IN_MSG = re.compile(r"^field '([^']+)': ")


def one_strategy(axis: str, v: Any, file: str, fld: str, base: Path | None = None) -> Strategy:
    """One value of a strategy axis (a name or {name: {params}}), as a section gives it for one replica group or
    candidate; an error names `fld` (and the parameter under it). `base`: the folder relative paths in the value
    (a draft model's file) resolve against, the scenario's."""
    if isinstance(v, list):
        raise err("takes one value per replica group (use several groups to compare values)", file, fld)
    try:
        out = parse_axis(axis, [v], file, base)
    except ScenarioError as e:
        msg = bare_message(e)
        m = FIELD_IN_MSG.match(msg)
        if m and m.group(1).startswith(f"strategies.{axis}"):  # the parameter's own field, under this group
            raise err(msg[m.end():], file, fld + m.group(1)[len(f"strategies.{axis}"):]) from None
        raise err(msg, file, fld) from None
    return out[0]
