"""`--set a.b=c`: what-if overrides applied to a scenario's raw YAML mapping right after it is read.

    doc = apply_overrides(doc, ["serving.scheduler.max_num_seqs=64", "strategies.kv_dtype=[fp8]"], file)

A path is dot-separated keys into the mapping; a list element is named by its index (`serving.replicas.0.count=2`).
The value is parsed as YAML (`64` an integer, `[fp8, bf16]` a list, `{tp: 2}` a mapping, `true` a boolean, `'64'` a
string), so it is typed as it would be in the file, and the scenario is then validated as usual: a wrong type or
value gets the same one-line error as in the file. A path whose parent does not exist, or that goes through a
value that is not a mapping or list, is refused here naming the flag; a new key in an existing mapping is added
and left to the validation (which refuses keys it does not know).
"""
from __future__ import annotations

import copy
from typing import Any

import yaml

from hwmodels.errors import ScenarioError

#: most --set overrides per command (each is a small edit of the YAML mapping)
MAX_SETS = 256


def parse_set(text: str) -> tuple[list[str], Any]:
    """('a.b.c' split into keys, the value parsed as YAML) from 'a.b.c=value'."""
    if not isinstance(text, str) or "=" not in text:
        raise ScenarioError(f"--set {text!r}: give PATH=VALUE (e.g. serving.scheduler.max_num_seqs=64)")
    path, _, raw = text.partition("=")
    keys = path.strip().split(".")
    if not path.strip() or any(not k.strip() for k in keys):
        raise ScenarioError(f"--set {text!r}: the path must be dot-separated keys (e.g. serving.slo.ttft_ms)")
    try:
        value = yaml.safe_load(raw) if raw.strip() else None
    except yaml.YAMLError as e:
        raise ScenarioError(f"--set {text!r}: the value is not YAML ({' '.join(str(e).split())[:120]})") from None
    return [k.strip() for k in keys], value


def apply_overrides(doc: Any, sets: list[str] | None, file: str = "<scenario>", top_keys=()) -> Any:
    """A copy of `doc` with every `--set PATH=VALUE` applied in order (the original is not changed). `top_keys`: the
    top-level keys a scenario may have (a missing one is created; any other unknown top-level key is refused)."""
    top = set(top_keys)
    if not sets:
        return doc
    if len(sets) > MAX_SETS:
        raise ScenarioError(f"{len(sets)} --set overrides; at most {MAX_SETS}")
    if not isinstance(doc, dict):
        raise ScenarioError("must be a YAML mapping before --set can change it", file=file)
    out = copy.deepcopy(doc)
    for text in sets:
        keys, value = parse_set(text)
        node: Any = out
        for depth, k in enumerate(keys[:-1]):
            where = ".".join(keys[:depth + 1])
            node = _child(node, k, where, text, file, create=isinstance(node, dict) and (depth >= 1 or k in top),
                          known=top if depth == 0 and top else None)
        last = keys[-1]
        if isinstance(node, list):
            i = _index(node, last, ".".join(keys), text, file)
            node[i] = value
        elif isinstance(node, dict):
            if len(keys) == 1 and last not in node and last not in top:
                raise ScenarioError(f"--set {text}: {file} has no top-level key {last!r}; known: "
                                    f"{', '.join(sorted(top or node))}")
            node[last] = value
        else:
            raise ScenarioError(f"--set {text}: {'.'.join(keys[:-1])} is {_kind(node)}, not a mapping or list", file=file)
    return out


def _kind(v: Any) -> str:
    return f"the {type(v).__name__} {str(v)[:40]!r}" if v is not None else "empty (null)"


def _index(node: list, k: str, where: str, text: str, file: str) -> int:
    try:
        i = int(k)
    except ValueError:
        raise ScenarioError(f"--set {text}: {where}: the list is indexed by numbers 0..{len(node) - 1}, got {k!r}",
                            file=file) from None
    if not -len(node) <= i < len(node):
        raise ScenarioError(f"--set {text}: {where}: index {i} is out of range (the list has {len(node)} entries)",
                            file=file)
    return i


def _child(node: Any, k: str, where: str, text: str, file: str, create: bool, known=None) -> Any:
    """node[k] for a mapping (created empty inside an existing section when `create`) or a list."""
    if isinstance(node, dict):
        if k not in node or node[k] is None:
            if k in node or create:
                node[k] = {}
            else:
                raise ScenarioError(f"--set {text}: no key {where!r} in the scenario; known: "
                                    f"{', '.join(sorted(map(str, known or node)))}", file=file)
        return node[k]
    if isinstance(node, list):
        return node[_index(node, k, where, text, file)]
    raise ScenarioError(f"--set {text}: {where.rsplit('.', 1)[0]} is {_kind(node)}, not a mapping or list", file=file)
