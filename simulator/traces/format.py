"""Attention/top-k trace files: what a decoder's selection policies pick per decode step, layer, KV head and
query row, stored compactly, read back with every field validated.

A trace is ONE file, `NAME.npz`: a zip archive (deflate) that holds

    meta.json            UTF-8 JSON, the metadata below (readable with `unzip -p NAME.npz meta.json`)
    positions.npy        int32 [S]   KV length each recorded step attends over (prompt + tokens so far)
    step_index.npy       int32 [S]   the decode step (0 = first token after the prompt); consecutive
                                     entries differing by 1 are consecutive steps (step-to-step statistics
                                     use only such pairs)
    sel.P.counts.npy     uint16|uint32 [S, L, H, Q]  selected units per row of policy P
    sel.P.delta.npy      uint16|uint32 [sum(counts)]  each row's indices, sorted ascending, delta-encoded:
                                     the row's first index, then the differences to the previous one (>= 1)
    sel.P.tier.npy       uint8 [sum(counts)] (optional) nested top-k tiers: entry e is in the top-tiers[j]
                                     set of its row iff tier[e] <= j (one recording gives several k)
    sel.P.score.npy      float16 [sum(counts)] (optional) the unit's selection score
    measure.M.npy        float16|float32|int16|int32 (optional) record-time measurements that need the full
                                     attention distribution (attention mass captured, KL, ...): axes named in
                                     meta["measures"][M]["axes"]
    spec.accepted.npy    int16 [R] (optional) accepted draft tokens per speculative round (real draft/target)

where S = recorded steps, L = layers, H = KV heads, Q = query rows of the policy (1 for a decode step; K+1 or
the tree's node count for a speculative verification round). A unit is a token, a block (NSA) or a page
(Quest/LServe) of `block_size` tokens; indices are unit numbers in [0, units(step)), units(step) =
ceil(positions[step] / block_size).

Why not DESIGN.md's sketch (one int32 array [steps, layers, heads, queries, k] padded with -1): a top-p or
SnapKV selection has no fixed k (padding wastes most of the array), int32 costs 4 B per index where sorted
deltas fit in 2 B (uint16) and deflate to ~1 B, and one file holds several policies recorded from the same
forward passes, so their statistics compare like with like. The tiers give several k from one recording.

meta.json (version 1; every key below is required unless marked optional; no other key is accepted):
    format "sparsesim.attention-trace", version 1, name, source "recorded" | "synthetic",
    model {name, layers, heads, kv_heads, head_dim, params, max_context, notes(optional)},
    context {prompt_tokens, max_tokens}, steps (= S),
    made {date YYYY-MM-DD, script, how, seed, device(optional)}, provenance (text, git-free),
    policies {P: {kind, unit, block_size, k (int or null), queries, tiers (list or null), scores (bool),
                  params (mapping), meaning}},
    measures {M: {axes [names], unit, meaning}} (optional), coords {axis: [values]} (optional),
    spec {tree_parent [int], k (optional: accepted drafts per round at most; default the tree's depth),
          tokens_per_round (optional number >= 1), verification (optional text)} (optional),
    draft_model {name, layers, params, heads / kv_heads / head_dim / notes (optional), layer_ids /
          skipped_layers (optional [int]: a self-speculative drafter's model layers run / skipped)} (optional: the
          drafter whose rounds spec.accepted records),
    record_config {...} (optional mapping: the recorder's settings), synthetic {...} (optional mapping: the
          parameters a synthetic trace was generated with).
Consistency: prompt_tokens <= max_tokens <= model.max_context; every position lies in [prompt_tokens,
max_tokens]; every spec.accepted value lies in [0, spec k] (`spec_k`).
Optional, for traces recorded from a pretrained model (simulator/traces/gguf_record.py; all additive):
    model.layer_ids [int]   the model layer of each trace layer (strictly increasing, one per trace layer): a
                            trace may hold only some of its model's layers (Gemma 3: the global layers)
    model.model_layers      the model's own layer count (> every layer_id)
    model.arch, model.sliding_window, model.quantization   what the model is
    source_model {package, file, sha256, bytes}   the GGUF file the trace was recorded from
    texts [{name, files, sha256, chars, tokens_read, licence, kind}]   the real texts the sequences read
    sanity {perplexity {text: {position range: perplexity}}}   the model's quality on those texts

Every malformed file raises `TraceError` naming the file, the field and what is wrong (see `read_trace`). What
this docstring lists is exactly what `trace info`, `trace stats` and a scenario's `trace:` read.
"""
from __future__ import annotations

import io
import json
import math
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from simulator.traces.requests import TraceError

FORMAT = "sparsesim.attention-trace"
VERSION = 1
#: largest uncompressed archive read (bytes): the biggest shipped trace is ~10 MB uncompressed
MAX_UNCOMPRESSED = 1 << 30
#: largest deflate ratio accepted per member (a "zip bomb" expands ~1000x; our index deltas reach ~12x,
#: all-equal measure arrays ~100x)
MAX_RATIO = 400
MAX_MEMBERS = 512
MAX_META_BYTES = 1 << 20
SOURCES = ("recorded", "synthetic")
UNITS = ("token", "block", "page")
#: policy kinds (what each selects: the recorder's policies, simulator/traces/recorder.py)
KINDS = ("token_topk", "block_topn", "page_topk", "snapkv", "topp", "window")
#: axis names a measure may use; their lengths come from the trace's shape or from meta["coords"]; an axis
#: named free_* (e.g. free_row) may have any length
SHAPE_AXES = ("step", "layer", "kv_head")
_NAME = re.compile(r"^[A-Za-z0-9_]+$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@dataclass
class Selection:
    """One policy's selections: row r = (step, layer, kv_head, query) in C order; row r's sorted unit
    indices are indices[offsets[r]:offsets[r+1]]."""

    name: str
    kind: str
    unit: str
    block_size: int
    k: int | None
    tiers: list[int] | None
    counts: np.ndarray            # int64 [S, L, H, Q]
    indices: np.ndarray           # int64 [total]
    tier: np.ndarray | None = None   # uint8 [total]
    score: np.ndarray | None = None  # float32 [total]
    params: dict = field(default_factory=dict)
    meaning: str = ""

    @property
    def shape(self) -> tuple[int, int, int, int]:
        return tuple(self.counts.shape)  # type: ignore[return-value]

    @property
    def queries(self) -> int:
        return int(self.counts.shape[3])

    @property
    def offsets(self) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(self.counts.reshape(-1))]).astype(np.int64)

    def row(self, s: int, layer: int, h: int, q: int = 0, k: int | None = None) -> np.ndarray:
        """Sorted unit indices of one row (restricted to the top-`k` tier when tiers exist)."""
        S, L, H, Q = self.shape
        r = ((s * L + layer) * H + h) * Q + q
        off = self.offsets
        idx = self.indices[off[r]:off[r + 1]]
        if k is not None and self.tier is not None:
            idx = idx[self.tier[off[r]:off[r + 1]] <= self.tiers.index(k)]
        return idx

    def restricted(self, k: int) -> "Selection":
        """The nested top-`k` selection (k must be one of `tiers`)."""
        if self.tiers is None or k not in self.tiers:
            if k == self.k:
                return self
            raise TraceError(f"policy {self.name!r} has no tier k={k}; tiers: {self.tiers}")
        j = self.tiers.index(k)
        keep = self.tier <= j
        rows = np.repeat(np.arange(self.counts.size), self.counts.reshape(-1))
        counts = np.bincount(rows[keep], minlength=self.counts.size).reshape(self.counts.shape)
        return Selection(self.name, self.kind, self.unit, self.block_size, k, None, counts, self.indices[keep],
                         None, None if self.score is None else self.score[keep], self.params, self.meaning)


@dataclass
class AttentionTrace:
    """A read (or built) attention/top-k trace; see the module docstring for every field."""

    file: str
    meta: dict
    positions: np.ndarray        # int64 [S]
    step_index: np.ndarray       # int64 [S]
    selections: dict[str, Selection]
    measures: dict[str, np.ndarray] = field(default_factory=dict)
    accepted: np.ndarray | None = None

    @property
    def name(self) -> str:
        return str(self.meta.get("name", Path(self.file).stem))

    @property
    def source(self) -> str:
        return str(self.meta["source"])

    @property
    def layers(self) -> int:
        return int(self.meta["model"]["layers"])

    @property
    def kv_heads(self) -> int:
        return int(self.meta["model"]["kv_heads"])

    @property
    def steps(self) -> int:
        return len(self.positions)

    def measure_axes(self, name: str) -> list[str]:
        return list(self.meta.get("measures", {})[name]["axes"])

    def coords(self, axis: str) -> list:
        return list(self.meta.get("coords", {}).get(axis, []))

    def consecutive(self) -> np.ndarray:
        """Indices i >= 1 of steps whose predecessor i-1 is the previous decode step."""
        return np.flatnonzero(np.diff(self.step_index) == 1) + 1


# ---- writing ----------------------------------------------------------------------------------------------
def encode_rows(rows_indices: list[np.ndarray] | None = None, *, counts: np.ndarray | None = None,
                flat: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(counts, delta) for sorted rows, given either a list of per-row index arrays or (counts, flat)."""
    if rows_indices is not None:
        counts = np.array([len(r) for r in rows_indices], dtype=np.int64)
        flat = np.concatenate([np.asarray(r, dtype=np.int64) for r in rows_indices]) if len(rows_indices) else \
            np.zeros(0, np.int64)
    flat = np.asarray(flat, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    delta = np.diff(flat, prepend=0)
    starts = np.concatenate([[0], np.cumsum(counts.reshape(-1))[:-1]]).astype(np.int64)
    nz = counts.reshape(-1) > 0
    delta[starts[nz]] = flat[starts[nz]]
    return counts, delta


def _narrow(a: np.ndarray) -> np.ndarray:
    return a.astype(np.uint16) if (a.size == 0 or a.max() < 65536) else a.astype(np.uint32)


def write_trace(path: str | Path, trace: AttentionTrace) -> Path:
    """Write `trace` to `path` (.npz, deflate). The trace is validated first, exactly as the reader does."""
    path = Path(path)
    _validate(trace, str(path))
    arrays: dict[str, np.ndarray] = {
        "positions": trace.positions.astype(np.int32),
        "step_index": trace.step_index.astype(np.int32),
    }
    for name, sel in trace.selections.items():
        counts, delta = encode_rows(counts=sel.counts, flat=sel.indices)
        arrays[f"sel.{name}.counts"] = _narrow(counts)
        arrays[f"sel.{name}.delta"] = _narrow(delta)
        if sel.tier is not None:
            arrays[f"sel.{name}.tier"] = sel.tier.astype(np.uint8)
        if sel.score is not None:
            arrays[f"sel.{name}.score"] = sel.score.astype(np.float16)
    for name, m in trace.measures.items():
        m = np.asarray(m)
        arrays[f"measure.{name}"] = m.astype(np.float16) if m.dtype.kind == "f" and m.dtype != np.float32 else m
    if trace.accepted is not None:
        arrays["spec.accepted"] = trace.accepted.astype(np.int16)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as zf:
        zf.writestr("meta.json", json.dumps(trace.meta, indent=1, sort_keys=True))
        for key, arr in arrays.items():
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.ascontiguousarray(arr), allow_pickle=False)
            zf.writestr(key + ".npy", buf.getvalue())
    tmp.replace(path)
    return path


# ---- reading ----------------------------------------------------------------------------------------------
def _zip_members(path: Path) -> dict[str, bytes]:
    from hwmodels.errors import SparsesimError
    from hwmodels.yamlio import read_bytes

    f = str(path)
    try:
        raw = read_bytes(path, "trace file", MAX_UNCOMPRESSED)   # capped: a device file reports size 0
    except SparsesimError as e:
        raise TraceError(str(e).removeprefix(f"{f}: "), file=f) from None
    if not raw:
        raise TraceError("is empty; a trace is a .npz zip archive (simulator/traces/format.py)", file=f)
    try:
        zf = zipfile.ZipFile(io.BytesIO(raw))
        infos = zf.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError, OSError) as e:
        raise TraceError(f"is not a readable .npz zip archive ({e})", file=f) from None
    if len(infos) > MAX_MEMBERS:
        raise TraceError(f"holds {len(infos)} members; at most {MAX_MEMBERS} are read", file=f)
    total = sum(i.file_size for i in infos)
    if total > MAX_UNCOMPRESSED:
        raise TraceError(f"would expand to {total:,} bytes (limit {MAX_UNCOMPRESSED:,}); refused", file=f)
    out = {}
    for info in infos:
        if info.compress_size and info.file_size / max(info.compress_size, 1) > MAX_RATIO and info.file_size > 1 << 20:
            raise TraceError(f"member {info.filename!r} expands {info.file_size / info.compress_size:.0f}x "
                             f"(limit {MAX_RATIO}x): refused as a possible zip bomb", file=f)
        if info.filename in out:
            raise TraceError(f"member {info.filename!r} appears twice", file=f)
        try:
            data = zf.read(info)
        except Exception as e:  # noqa: BLE001 - zipfile/zlib raise many kinds for damaged members
            raise TraceError(f"member {info.filename!r} is damaged ({type(e).__name__}: {e})", file=f) from None
        if len(data) != info.file_size:
            raise TraceError(f"member {info.filename!r} is truncated", file=f)
        out[info.filename] = data
    return out


def _array(members: dict[str, bytes], key: str, f: str) -> np.ndarray:
    try:
        arr = np.lib.format.read_array(io.BytesIO(members[key + ".npy"]), allow_pickle=False)
    except KeyError:
        raise TraceError("is missing", file=f, field=key) from None
    except Exception as e:  # noqa: BLE001 - numpy raises ValueError/EOFError/OSError for bad headers
        raise TraceError(f"is not a readable .npy array ({type(e).__name__}: {' '.join(str(e).split())[:120]})",
                         file=f, field=key) from None
    if arr.dtype.hasobject:
        raise TraceError("holds Python objects; only numeric arrays are read", file=f, field=key)
    return arr


def _need(d: Any, key: str, types, f: str, fld: str):
    if not isinstance(d, dict) or key not in d:
        raise TraceError("is missing", file=f, field=f"{fld}.{key}" if fld else key)
    v = d[key]
    if isinstance(v, bool) and bool not in (types if isinstance(types, tuple) else (types,)):
        raise TraceError(f"must be {_tname(types)}, got {v!r}", file=f, field=f"{fld}.{key}" if fld else key)
    if not isinstance(v, types):
        raise TraceError(f"must be {_tname(types)}, got {type(v).__name__} {str(v)[:40]!r}", file=f,
                         field=f"{fld}.{key}" if fld else key)
    return v


def _tname(types) -> str:
    types = types if isinstance(types, tuple) else (types,)
    names = {int: "an integer", str: "text", dict: "a mapping", list: "a list", bool: "true/false",
             float: "a number", type(None): "null"}
    return " or ".join(names.get(t, t.__name__) for t in types)


def _pos_int(d, key, f, fld, lo=1, hi=10**9) -> int:
    v = _need(d, key, int, f, fld)
    if not lo <= v <= hi:
        raise TraceError(f"must be an integer in [{lo}, {hi}], got {v}", file=f, field=f"{fld}.{key}")
    return v


META_KEYS = ("format", "version", "name", "source", "model", "context", "steps", "made", "provenance", "policies",
             "measures", "coords", "spec", "draft_model", "record_config", "synthetic", "source_model", "texts",
             "sanity")
SPEC_KEYS = ("tree_parent", "k", "tokens_per_round", "verification")
DRAFT_KEYS = {"name": str, "layers": int, "params": int, "heads": int, "kv_heads": int, "head_dim": int,
              "notes": str, "layer_ids": list, "skipped_layers": list}


def tree_depth(parent: list[int]) -> int:
    """Depth of a draft tree given each node's parent (-1: the root's children are at depth 1)."""
    depth: list[int] = []
    for p in parent:
        depth.append(1 if p < 0 else depth[p] + 1)
    return max(depth, default=0)


def spec_k(meta: dict) -> int:
    """Most drafts a recorded round can accept: meta.spec.k when given, else the draft tree's depth."""
    spec = meta["spec"]
    return int(spec["k"]) if spec.get("k") is not None else tree_depth(spec["tree_parent"])


def validate_meta(meta: Any, f: str) -> dict:
    """Check meta.json's keys and types (version 1); returns it."""
    if not isinstance(meta, dict):
        raise TraceError("must be a JSON object", file=f, field="meta.json")
    unknown = [k for k in meta if k not in META_KEYS]
    if unknown:
        raise TraceError(f"unknown key(s) {unknown[:5]}; allowed: {', '.join(META_KEYS)}", file=f, field="meta")
    fmt = meta.get("format")
    if fmt != FORMAT:
        raise TraceError(f"must be {FORMAT!r}, got {fmt!r}", file=f, field="meta.format")
    ver = meta.get("version")
    if ver != VERSION:
        raise TraceError(f"this sparsesim reads version {VERSION}, got {ver!r}", file=f, field="meta.version")
    _need(meta, "name", str, f, "meta")
    src = _need(meta, "source", str, f, "meta")
    if src not in SOURCES:
        raise TraceError(f"must be one of {', '.join(SOURCES)}, got {src!r}", file=f, field="meta.source")
    model = _need(meta, "model", dict, f, "meta")
    _need(model, "name", str, f, "meta.model")
    for key in ("layers", "heads", "kv_heads", "head_dim"):
        _pos_int(model, key, f, "meta.model", hi=4096)
    _pos_int(model, "params", f, "meta.model", hi=10**13)
    _pos_int(model, "max_context", f, "meta.model", hi=10**8)
    if model["heads"] % model["kv_heads"]:
        raise TraceError(f"heads {model['heads']} is not a multiple of kv_heads {model['kv_heads']}", file=f,
                         field="meta.model.kv_heads")
    if "layer_ids" in model:
        ids = model["layer_ids"]
        total = model.get("model_layers")
        if (not isinstance(ids, list) or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in ids)
                or ids != sorted(set(ids))):
            raise TraceError("must be a strictly increasing list of layer numbers >= 0", file=f,
                             field="meta.model.layer_ids")
        if len(ids) != model["layers"]:
            raise TraceError(f"lists {len(ids)} layers but the trace holds {model['layers']} (meta.model.layers): the "
                             "trace's layer count does not match its model's layer list", file=f,
                             field="meta.model.layer_ids")
        if total is not None and (isinstance(total, bool) or not isinstance(total, int) or (ids and ids[-1] >= total)):
            raise TraceError(f"model_layers must be an integer above every layer id, got {total!r}", file=f,
                             field="meta.model.model_layers")
    ctx = _need(meta, "context", dict, f, "meta")
    prompt = _pos_int(ctx, "prompt_tokens", f, "meta.context", hi=10**8)
    most = _pos_int(ctx, "max_tokens", f, "meta.context", hi=10**8)
    if prompt > most:
        raise TraceError(f"is {prompt}, more than max_tokens {most} (the prompt is part of the context)", file=f,
                         field="meta.context.prompt_tokens")
    if most > model["max_context"]:
        raise TraceError(f"is {model['max_context']}, less than the context recorded (max_tokens {most})", file=f,
                         field="meta.model.max_context")
    _pos_int(meta, "steps", f, "meta", hi=10**7)
    made = _need(meta, "made", dict, f, "meta")
    date = _need(made, "date", str, f, "meta.made")
    if not _DATE.match(date):
        raise TraceError(f"must be a date YYYY-MM-DD, got {date!r}", file=f, field="meta.made.date")
    for key in ("script", "how"):
        _need(made, key, str, f, "meta.made")
    _need(made, "seed", int, f, "meta.made")
    _need(meta, "provenance", str, f, "meta")
    pols = _need(meta, "policies", dict, f, "meta")
    for name, p in pols.items():
        fld = f"meta.policies.{name}"
        if not _NAME.match(str(name)):
            raise TraceError("policy names use letters, digits and '_' only", file=f, field=fld)
        if not isinstance(p, dict):
            raise TraceError("must be a mapping", file=f, field=fld)
        kind = _need(p, "kind", str, f, fld)
        if kind not in KINDS:
            raise TraceError(f"unknown kind {kind!r}; allowed: {', '.join(KINDS)}", file=f, field=f"{fld}.kind")
        unit = _need(p, "unit", str, f, fld)
        if unit not in UNITS:
            raise TraceError(f"unknown unit {unit!r}; allowed: {', '.join(UNITS)}", file=f, field=f"{fld}.unit")
        bs = _pos_int(p, "block_size", f, fld, hi=1 << 20)
        if unit == "token" and bs != 1:
            raise TraceError(f"a token unit has block_size 1, got {bs}", file=f, field=f"{fld}.block_size")
        k = _need(p, "k", (int, type(None)), f, fld)
        if k is not None and not 1 <= k <= 10**7:
            raise TraceError(f"must be null or an integer in [1, 10000000], got {k}", file=f, field=f"{fld}.k")
        _pos_int(p, "queries", f, fld, hi=4096)
        tiers = _need(p, "tiers", (list, type(None)), f, fld)
        if tiers is not None:
            if (not tiers or len(tiers) > 255 or not all(isinstance(t, int) and not isinstance(t, bool) and t >= 1
                                                         for t in tiers) or tiers != sorted(set(tiers))):
                raise TraceError("must be null or a strictly increasing list of positive integers", file=f,
                                 field=f"{fld}.tiers")
            if k is None or tiers[-1] != k:
                raise TraceError(f"the last tier must equal k ({k}), got {tiers[-1]}", file=f, field=f"{fld}.tiers")
        _need(p, "scores", bool, f, fld)
        _need(p, "params", dict, f, fld)
        _need(p, "meaning", str, f, fld)
    coords = meta.get("coords", {})
    if not isinstance(coords, dict) or not all(isinstance(v, list) for v in coords.values()):
        raise TraceError("must be a mapping of axis name -> list of values", file=f, field="meta.coords")
    ms = meta.get("measures", {})
    if not isinstance(ms, dict):
        raise TraceError("must be a mapping", file=f, field="meta.measures")
    for name, m in ms.items():
        fld = f"meta.measures.{name}"
        if not _NAME.match(str(name)):
            raise TraceError("measure names use letters, digits and '_' only", file=f, field=fld)
        axes = _need(m, "axes", list, f, fld)
        for a in axes:
            if a not in SHAPE_AXES and a not in coords and a != "query" and not str(a).startswith("free_"):
                raise TraceError(f"axis {a!r} is neither step/layer/kv_head/query/free_* nor listed in meta.coords",
                                 file=f, field=f"{fld}.axes")
        _need(m, "unit", str, f, fld)
        _need(m, "meaning", str, f, fld)
    spec = meta.get("spec")
    if spec is not None:
        if not isinstance(spec, dict):
            raise TraceError("must be a mapping", file=f, field="meta.spec")
        unknown = [k for k in spec if k not in SPEC_KEYS]
        if unknown:
            raise TraceError(f"unknown key(s) {unknown[:5]}; allowed: {', '.join(SPEC_KEYS)}", file=f, field="meta.spec")
        parent = _need(spec, "tree_parent", list, f, "meta.spec")
        if not parent or len(parent) > 4096 or not all(isinstance(x, int) and not isinstance(x, bool) for x in parent):
            raise TraceError("must be a list of 1 to 4096 integers", file=f, field="meta.spec.tree_parent")
        if any(not (-1 <= x < i) for i, x in enumerate(parent)):
            raise TraceError("each node's parent must be -1 (the root) or an earlier node", file=f,
                             field="meta.spec.tree_parent")
        if spec.get("k") is not None:
            _pos_int(spec, "k", f, "meta.spec", hi=tree_depth(parent))
        if "tokens_per_round" in spec and (not check_finite_number(spec["tokens_per_round"])
                                           or spec["tokens_per_round"] < 1):
            raise TraceError(f"must be a number >= 1, got {spec['tokens_per_round']!r}", file=f,
                             field="meta.spec.tokens_per_round")
        if "verification" in spec:
            _need(spec, "verification", str, f, "meta.spec")
    dm = meta.get("draft_model")
    if dm is not None:
        if not isinstance(dm, dict):
            raise TraceError(f"must be a mapping {{name, layers, params, ...}}, got {type(dm).__name__}", file=f,
                             field="meta.draft_model")
        unknown = [k for k in dm if k not in DRAFT_KEYS]
        if unknown:
            raise TraceError(f"unknown key(s) {unknown[:5]}; allowed: {', '.join(DRAFT_KEYS)}", file=f,
                             field="meta.draft_model")
        _need(dm, "name", str, f, "meta.draft_model")
        for key in ("layers", "heads", "kv_heads", "head_dim"):
            if key in dm or key == "layers":
                _pos_int(dm, key, f, "meta.draft_model", hi=4096)
        _pos_int(dm, "params", f, "meta.draft_model", hi=10**13)
        if "notes" in dm:
            _need(dm, "notes", str, f, "meta.draft_model")
        for key in ("layer_ids", "skipped_layers"):
            ids = dm.get(key)
            if ids is not None and not (isinstance(ids, list) and len(ids) <= 4096 and all(
                    isinstance(i, int) and not isinstance(i, bool) and 0 <= i < 4096 for i in ids)
                    and len(set(ids)) == len(ids)):
                raise TraceError("must be a list of distinct layer indices in [0, 4096)", file=f,
                                 field=f"meta.draft_model.{key}")
    for key in ("record_config", "synthetic"):
        if key in meta and not isinstance(meta[key], dict):
            raise TraceError(f"must be a mapping, got {type(meta[key]).__name__}", file=f, field=f"meta.{key}")
    return meta


def _validate(t: AttentionTrace, f: str) -> None:
    meta = validate_meta(t.meta, f)
    S = int(meta["steps"])
    L, H = int(meta["model"]["layers"]), int(meta["model"]["kv_heads"])
    for key, arr in (("positions", t.positions), ("step_index", t.step_index)):
        if arr.ndim != 1 or len(arr) != S:
            raise TraceError(f"must have shape [{S}] (meta.steps), got {list(arr.shape)}", file=f, field=key)
        if arr.dtype.kind not in "iu":
            raise TraceError(f"must be integers, got {arr.dtype}", file=f, field=key)
    maxtok = int(meta["context"]["max_tokens"])
    prompt = int(meta["context"]["prompt_tokens"])
    if S and (t.positions.min() < prompt or t.positions.max() > maxtok):
        raise TraceError(f"values must lie in [{prompt}, {maxtok}] (meta.context prompt_tokens to max_tokens: a step "
                         f"attends over the prompt and the tokens so far), got [{t.positions.min()}, "
                         f"{t.positions.max()}]", file=f, field="positions")
    if S > 1 and (np.diff(t.step_index) <= 0).any():
        raise TraceError("must be strictly increasing", file=f, field="step_index")
    if S and t.step_index.min() < 0:
        raise TraceError("must be >= 0", file=f, field="step_index")
    if set(t.selections) != set(meta["policies"]):
        raise TraceError(f"policies in meta {sorted(meta['policies'])} and arrays {sorted(t.selections)} differ",
                         file=f, field="meta.policies")
    for name, sel in t.selections.items():
        fld = f"sel.{name}"
        p = meta["policies"][name]
        Q = int(p["queries"])
        if sel.counts.shape != (S, L, H, Q):
            raise TraceError(f"counts must have shape [steps {S}, layers {L}, kv_heads {H}, queries {Q}], got "
                             f"{list(sel.counts.shape)}", file=f, field=f"{fld}.counts")
        units = -(-t.positions.astype(np.int64) // int(p["block_size"]))  # ceil
        cmax = int(sel.counts.max()) if sel.counts.size else 0
        if p["k"] is not None and cmax > p["k"]:
            i = np.unravel_index(int(np.argmax(sel.counts)), sel.counts.shape)
            raise TraceError(f"row (step, layer, head, query) {tuple(int(x) for x in i)} selects {cmax} units, "
                             f"more than k = {p['k']}", file=f, field=f"{fld}.counts")
        over = sel.counts > units[:, None, None, None]
        if over.any():
            i = np.unravel_index(int(np.argmax(over)), over.shape)
            raise TraceError(f"row {tuple(int(x) for x in i)} selects {int(sel.counts[i])} units of only "
                             f"{int(units[i[0]])}", file=f, field=f"{fld}.counts")
        total = int(sel.counts.sum())
        if len(sel.indices) != total:
            raise TraceError(f"holds {len(sel.indices)} indices; counts sum to {total}", file=f, field=f"{fld}.delta")
        if total:
            rows = np.repeat(np.arange(sel.counts.size), sel.counts.reshape(-1))
            lim = np.repeat(np.broadcast_to(units[:, None, None, None], sel.counts.shape).reshape(-1),
                            sel.counts.reshape(-1))
            bad = (sel.indices < 0) | (sel.indices >= lim)
            if bad.any():
                e = int(np.argmax(bad))
                i = np.unravel_index(int(rows[e]), sel.counts.shape)
                raise TraceError(f"row (step, layer, head, query) {tuple(int(x) for x in i)}: index "
                                 f"{int(sel.indices[e])} is outside [0, {int(lim[e])}): the step has "
                                 f"{int(t.positions[i[0]])} tokens = {int(lim[e])} {p['unit']}s of {p['block_size']} "
                                 "token(s)", file=f,
                                 field=f"{fld}.delta")
            same_row = rows[1:] == rows[:-1]
            dup = same_row & (np.diff(sel.indices) <= 0)
            if dup.any():
                e = int(np.argmax(dup)) + 1
                i = np.unravel_index(int(rows[e]), sel.counts.shape)
                raise TraceError(f"row {tuple(int(x) for x in i)}: indices must be strictly increasing (sorted, no "
                                 f"duplicates); {int(sel.indices[e - 1])} is followed by {int(sel.indices[e])}",
                                 file=f, field=f"{fld}.delta")
        if sel.tier is not None:
            if p["tiers"] is None:
                raise TraceError("tier array present but meta tiers is null", file=f, field=f"{fld}.tier")
            if len(sel.tier) != total or (total and int(sel.tier.max()) >= len(p["tiers"])):
                raise TraceError(f"must hold {total} values in [0, {len(p['tiers'])})", file=f, field=f"{fld}.tier")
        elif p["tiers"] is not None:
            raise TraceError("meta lists tiers but the tier array is missing", file=f, field=f"{fld}.tier")
        if sel.score is not None:
            if len(sel.score) != total:
                raise TraceError(f"must hold {total} values (one per index)", file=f, field=f"{fld}.score")
            if not np.isfinite(sel.score).all():
                raise TraceError("holds NaN or infinite values", file=f, field=f"{fld}.score")
        elif p["scores"]:
            raise TraceError("meta says scores: true but the score array is missing", file=f, field=f"{fld}.score")
    coords = meta.get("coords", {})
    Qs = {int(p["queries"]) for p in meta["policies"].values()} or {1}
    sizes = {"step": S, "layer": L, "kv_head": H, **{k: len(v) for k, v in coords.items()}}
    ms = meta.get("measures", {})
    if set(ms) != set(t.measures):
        raise TraceError(f"measures in meta {sorted(ms)} and arrays {sorted(t.measures)} differ", file=f,
                         field="meta.measures")
    for name, arr in t.measures.items():
        axes = ms[name]["axes"]
        if arr.dtype.kind not in "iuf":
            raise TraceError(f"must be numeric, got {arr.dtype}", file=f, field=f"measure.{name}")
        if arr.ndim != len(axes):
            raise TraceError(f"has {arr.ndim} axes; meta names {len(axes)} ({axes})", file=f, field=f"measure.{name}")
        for n, a in zip(arr.shape, axes):
            if str(a).startswith("free_"):
                continue
            if a == "query":
                if n not in Qs:
                    raise TraceError(f"axis 'query' has {n} entries; policies have {sorted(Qs)} query rows",
                                     file=f, field=f"measure.{name}")
            elif n != sizes[a]:
                raise TraceError(f"axis {a!r} has {n} entries, expected {sizes[a]}", file=f, field=f"measure.{name}")
        if arr.dtype.kind == "f":
            with np.errstate(invalid="ignore"):
                if np.isinf(arr).any():
                    raise TraceError("holds infinite values (NaN marks 'not defined'; inf is refused)", file=f,
                                     field=f"measure.{name}")
    if t.accepted is not None:
        spec = meta.get("spec")
        if spec is None:
            raise TraceError("spec.accepted present but meta.spec is missing", file=f, field="spec.accepted")
        kmax = spec_k(meta)
        if t.accepted.ndim != 1 or (len(t.accepted) and (t.accepted.min() < 0 or t.accepted.max() > kmax)):
            raise TraceError(f"must be a 1-D array of accepted lengths in [0, {kmax}] (meta.spec k, or the tree's "
                             "depth)", file=f, field="spec.accepted")


def read_trace(path: str | Path) -> AttentionTrace:
    """Read and validate a trace file. Raises TraceError (file, field, what is wrong) for: a missing, empty or
    non-zip file, damaged/truncated members, zip bombs, meta.json that is not UTF-8 JSON or lacks keys,
    a wrong format/version, arrays of the wrong shape or dtype, indices outside the step's context, rows
    longer than k, unsorted or duplicate indices, NaN scores, measures whose shape does not match their axes."""
    path = Path(path)
    f = str(path)
    members = _zip_members(path)
    raw = members.get("meta.json")
    if raw is None:
        raise TraceError("is missing from the archive (is this a sparsesim attention trace?)", file=f,
                         field="meta.json")
    if len(raw) > MAX_META_BYTES:
        raise TraceError(f"is {len(raw):,} bytes; at most {MAX_META_BYTES:,} are read", file=f, field="meta.json")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise TraceError(f"is not UTF-8 (byte {e.start})", file=f, field="meta.json") from None
    try:
        meta = json.loads(text, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(f"{c} is not JSON")))
    except (json.JSONDecodeError, ValueError, RecursionError) as e:
        raise TraceError(f"is not valid JSON ({e})", file=f, field="meta.json") from None
    validate_meta(meta, f)
    positions = _array(members, "positions", f)
    step_index = _array(members, "step_index", f)
    for key, a in (("positions", positions), ("step_index", step_index)):
        if a.dtype.kind not in "iu":
            raise TraceError(f"must be an integer array, got {a.dtype}", file=f, field=key)
    sels = {}
    for name, p in meta["policies"].items():
        fld = f"sel.{name}"
        counts = _array(members, f"{fld}.counts", f)
        delta = _array(members, f"{fld}.delta", f)
        for key, a in (("counts", counts), ("delta", delta)):
            if a.dtype not in (np.uint16, np.uint32):
                raise TraceError(f"must be uint16 or uint32, got {a.dtype}", file=f, field=f"{fld}.{key}")
        if counts.ndim != 4:
            raise TraceError(f"must have 4 axes [steps, layers, kv_heads, queries], got {counts.ndim}", file=f,
                             field=f"{fld}.counts")
        if delta.ndim != 1:
            raise TraceError("must be 1-D", file=f, field=f"{fld}.delta")
        counts = counts.astype(np.int64)
        total = int(counts.sum())
        if len(delta) != total:
            raise TraceError(f"holds {len(delta)} values; counts sum to {total}", file=f, field=f"{fld}.delta")
        d = delta.astype(np.int64)
        starts = np.concatenate([[0], np.cumsum(counts.reshape(-1))[:-1]])[counts.reshape(-1) > 0]
        if total:
            inner = np.ones(total, dtype=bool)
            inner[starts] = False
            if (d[inner] < 1).any():
                e = int(np.argmax(inner & (d < 1)))
                raise TraceError(f"entry {e}: a zero delta means a duplicate index (rows must be strictly "
                                 "increasing)", file=f, field=f"{fld}.delta")
        cs = np.cumsum(d)
        base = np.zeros(total, dtype=np.int64)
        if total:
            base_at_start = cs[starts] - d[starts]
            seg = np.zeros(total, dtype=np.int64)
            seg[starts] = 1
            seg = np.cumsum(seg) - 1
            base = base_at_start[seg]
        indices = cs - base
        tier = score = None
        if f"{fld}.tier.npy" in members:
            tier = _array(members, f"{fld}.tier", f)
            if tier.dtype != np.uint8 or tier.ndim != 1:
                raise TraceError(f"must be a 1-D uint8 array, got {tier.dtype} with {tier.ndim} axes", file=f,
                                 field=f"{fld}.tier")
        if f"{fld}.score.npy" in members:
            score = _array(members, f"{fld}.score", f)
            if score.dtype.kind != "f" or score.ndim != 1:
                raise TraceError(f"must be a 1-D float array, got {score.dtype}", file=f, field=f"{fld}.score")
            score = score.astype(np.float32)
        sels[name] = Selection(name, p["kind"], p["unit"], int(p["block_size"]), p["k"], p["tiers"], counts,
                               indices, tier, score, p["params"], p["meaning"])
    measures = {name: _array(members, f"measure.{name}", f) for name in meta.get("measures", {})}
    accepted = None
    if "spec.accepted.npy" in members:
        accepted = _array(members, "spec.accepted", f)
        if accepted.dtype.kind not in "iu":
            raise TraceError(f"must be integers, got {accepted.dtype}", file=f, field="spec.accepted")
        accepted = accepted.astype(np.int64)
    known = {"meta.json", "positions.npy", "step_index.npy", "spec.accepted.npy"}
    for name in meta["policies"]:
        known |= {f"sel.{name}.{x}.npy" for x in ("counts", "delta", "tier", "score")}
    known |= {f"measure.{m}.npy" for m in meta.get("measures", {})}
    extra = sorted(set(members) - known)
    if extra:
        raise TraceError(f"holds members that meta.json does not describe: {extra[:5]}", file=f, field="meta.json")
    t = AttentionTrace(file=f, meta=meta, positions=positions.astype(np.int64), step_index=step_index.astype(np.int64),
                       selections=sels, measures=measures, accepted=accepted)
    _validate(t, f)
    return t


def check_finite_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
