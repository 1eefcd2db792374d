"""Trace statistics: the one object through which attention/top-k traces reach strategy costs.

A scenario's `trace: NAME-or-PATH` is parsed into a `TraceStats` (simulator.traces.scenario), which the
planner hands to every Combo as `combo.trace` (None = no trace: strategies use their parameters). A
strategy reads statistics BY NAME from the catalog below; nothing else about traces needs to be known.

    ts = combo.trace                                   # TraceStats or None
    if ts is not None and ts.has("topk.overlap_shifted"):
        ov = ts.per_layer("topk.overlap_shifted", combo.model.layers, k=2048)   # [model layers]
        s = ts.samples("topk.overlap_shifted_samples", layer=0, k=2048)        # distribution, not a mean
        g = ts.get("ssv.gamma_eff")                      # full array; ts.axes("ssv.gamma_eff") names its axes
        g4 = ts.select("ssv.gamma_eff", order="position_sorted", C=4)          # [trace layers]

Layers. A trace comes from ITS model (5 layers for stories260K, a few for the project-trained model); a
strategy prices ANOTHER model. `per_layer(name, n)` maps model layer j to trace layer
round(j (L_t - 1) / (n - 1)) (nearest relative depth; the first and the last layers map onto each other).
That a 6-layer model's layer 3 behaves like a 61-layer model's layer 36 is an ASSUMPTION the caller
accepts by asking; the trace says nothing about layers it does not have.

Coordinates. Axes other than layer/head/sample carry coordinate values in `coords[axis]` (e.g. C = (2, 4, 8),
order = ("bfs", "dfs", "position_sorted"), k = the top-k tiers recorded); `select(name, axis=value, ...)`
picks by value, `per_layer(..., k=2048)` too. A value that was not recorded raises TraceError listing those
that were (no silent interpolation).

Missing statistics. A trace holds only what its policies allow (stories260K has no draft model, so no
spec.* or specattn.*). `has(name)` says whether it is there; `get` of a missing name raises TraceError
naming the trace and what it does have. Catalog names are fixed; a statistic added later gets a new name.

Cost. TraceStats holds only small arrays (samples are capped at SAMPLES per layer): it is picklable, cheap
to copy into every Combo, hashed by content digest. Statistics are computed once per trace file
(simulator.traces.analysis) and cached beside it as NAME.stats.npz (keyed by the trace file's SHA-256);
shipped traces ship their stats files, so `sparsesim run` with a trace adds only a load (~10 ms).
"""
from __future__ import annotations

import hashlib
import io
import json
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from simulator.traces.requests import TraceError

#: version of the statistics computation: a cached NAME.stats.npz of another version is recomputed
STATS_VERSION = 1
#: distribution samples kept per layer (deterministic, evenly spaced subsample of all (step, head) values)
SAMPLES = 256


@dataclass(frozen=True)
class Stat:
    """One catalog entry: a named statistic, the axes of its array, its unit, what it means and which seed
    document's quantity it is."""

    name: str
    axes: tuple[str, ...]
    unit: str
    meaning: str
    seed: str
    consumer: str = ""


def _s(name, axes, unit, meaning, seed, consumer=""):
    return Stat(name, tuple(axes.split()) if axes else (), unit, meaning, seed, consumer)


#: THE CATALOG. Axes: layer (trace layers), kv_head, sample (pooled over steps and heads, <= SAMPLES),
#: k (top-k tiers), order (bfs|dfs|position_sorted), C (group size 2|4|8), layer_lag (layers apart, 1..4),
#: step_lag (decode steps apart, 0..15),
#: interval (reuse interval), budget (tokens), p (top-p threshold), draft_layer, target_layer,
#: length (accepted draft tokens 0..K), round (speculative rounds), step_bin (decode-step bins).
#: Seed documents: 000 SSV, 001 GVR, 002 SpecAttn, 003 SnapStream, 004 LServe (/work/shared/seeds).
CATALOG: tuple[Stat, ...] = (
    # ---- exact token top-k (DSA-style) and GVR --------------------------------------------------------------
    _s("topk.overlap_raw", "k layer", "fraction",
       "|S_t & S_t-1| / k: raw step-to-step overlap of the exact token top-k (per KV head: the GQA group's "
       "summed attention probabilities), mean over consecutive recorded steps and heads",
       "001 GVR Fig. 2 (raw overlap per layer; L0-1 ~1.5 %, L20-60 35-50 %)", "topk.gvr (pass count)"),
    _s("topk.overlap_shifted", "k layer", "fraction",
       "|S_t & (S_t-1 + 1)| / k: overlap with the previous top-k shifted by one position (TensorRT-LLM's preIdx "
       "offset +1)", "001 GVR L54-56 'shifted overlap'", "topk.gvr"),
    _s("topk.overlap_raw_head", "k layer kv_head", "fraction", "topk.overlap_raw per KV head",
       "001 GVR Fig. 2", "topk.gvr"),
    _s("topk.overlap_raw_samples", "k layer sample", "fraction",
       "distribution of the per-(step, head) raw overlap (cost is non-linear in overlap: use samples)",
       "001 GVR Fig. 2", "topk.gvr"),
    _s("topk.overlap_shifted_samples", "k layer sample", "fraction", "distribution of the shifted overlap",
       "001 GVR L54-56", "topk.gvr"),
    _s("topk.random_overlap", "k", "fraction", "k / N: the overlap a random preIdx would have (N = mean "
       "context of the recorded steps)", "001 GVR ablation 'Random indices ~2.9 %'", "topk.gvr"),
    _s("topk.prev_hit_lift", "k layer", "ratio",
       "previous-top-k hit ratio |S_t & S_t-1| / |S_t-1| divided by the random hit ratio k/N (how much better "
       "than random the previous step predicts)", "001 GVR Phase 1: 'hit ratio of preIdx much larger than K/N'",
       "topk.gvr"),
    _s("topk.prev_hit_mass", "k layer", "fraction",
       "mean attention mass at step t captured by S_t-1 / mean mass captured by S_t (ratio of means: what a "
       "one-step-stale top-k keeps)", "001 GVR (temporal stability)", "attention.dsa"),
    _s("gvr.guess_count_ratio", "layer sample", "ratio",
       "count(s >= pmean) / k on recorded full score rows, pmean = mean score at the previous step's top-k "
       "(GVR phase 1's first threshold; in [1, C/k] means phase 2 stops after its first count pass)",
       "001 GVR Phase 1-2", "topk.gvr"),
    _s("gvr.passes_rows", "layer sample", "passes",
       "phase-2 count passes of simulator.strategies.topk.secant_search run on recorded full score rows with "
       "preIdx = previous step's top-k (k = meta gvr_k, capacity = 3k as 6144/2048)",
       "001 GVR 'converges in 1-2 iterations on real decode data'", "topk.gvr"),
    _s("gvr.passes_model", "layer", "passes",
       "simulator.strategies.topk.passes_for(mean raw overlap of the layer, 'previous', k, N) at the trace's "
       "k and context: the Gaussian pass model fed with the recorded overlap", "001 GVR", "topk.gvr"),
    # ---- NSA blocks and SSV grouped verification --------------------------------------------------------------
    _s("nsa.overlap_step", "layer", "fraction",
       "step-to-step overlap of NSA block top-n (single-row decode)", "000 SSV (temporal stability)", "attention.nsa"),
    _s("ssv.adjacent_overlap", "order layer", "fraction",
       "|I_a & I_b| / n for adjacent verification rows in traversal order (NSA block top-n over compressed "
       "keys), mean over rounds, heads and adjacent pairs", "000 SSV Insight 1: 50-90 % at 8K, most layers",
       "verify_kernel.ssv (gamma)"),
    _s("ssv.adjacent_overlap_samples", "order layer sample", "fraction", "distribution of ssv.adjacent_overlap",
       "000 SSV Insight 1", "verify_kernel.ssv"),
    _s("ssv.union_ratio", "order C layer", "ratio",
       "|union of a group's block sets| / n for groups of C consecutive rows in traversal order (last group may "
       "be smaller; each group counted once)", "000 SSV |I_merged| ~ n(1+(C-1)(1-rho)) (30.4 / 16 = 1.9 at C 4)",
       "verify_kernel.ssv"),
    _s("ssv.union_ratio_samples", "order C layer sample", "ratio", "distribution of ssv.union_ratio",
       "000 SSV", "verify_kernel.ssv"),
    _s("ssv.f_load", "order C layer", "fraction",
       "sum over groups of |union| / sum of per-row n: selected-block traffic of the grouped kernel relative to "
       "per-row loading", "000 SSV f_load (0.4375 at gamma .75, C 4)", "verify_kernel.ssv"),
    _s("ssv.gamma_eff", "order C layer", "fraction",
       "the gamma that makes SSV's formula f_load = (1+(C-1)(1-gamma))/C equal the measured ssv.f_load (a "
       "drop-in value for verify_kernel.ssv's overlap parameter)", "000 SSV", "verify_kernel.ssv"),
    _s("ssv.cross_layer_jaccard", "layer_lag layer", "fraction",
       "Jaccard(I^l, I^(l+lag)) of the same row and KV head's NSA block sets, lag 1..4 layers (NaN past the "
       "last layer)", "000 SSV Insight 2: layouts stable over 'several consecutive layers'", "schedule (refresh/reuse)"),
    _s("ssv.reuse_recall", "layer_lag layer", "fraction",
       "|I^l & I^(l+lag)| / |I^(l+lag)|: share of layer l+lag's blocks a reuse layer still loads",
       "000 SSV refresh/reuse", "schedule"),
    _s("ssv.reuse_mass", "layer_lag layer", "fraction",
       "attention mass of layer l+lag captured by layer l's block selection / mass captured by its own",
       "000 SSV refresh/reuse (accuracy side)", "schedule"),
    # ---- Quest / LServe pages ----------------------------------------------------------------------------------
    _s("lserve.reuse_recall", "step_lag layer", "fraction",
       "mean mass at step t captured by the page selection of step t-lag (plus the pages of tokens generated "
       "since) / mean mass captured by step t's own selection (ratio of means; can exceed 1: min-max page "
       "scores are not mass-optimal)", "004 LServe 3.5.3 temporal locality", "attention.lserve"),
    _s("lserve.interval_recall", "interval layer", "fraction",
       "mean of lserve.reuse_recall over lags 0..r-1: the recall of reusable page selection with interval r",
       "004 LServe Table 6 (interval 1..16; accuracy flat until > 8)", "attention.lserve (reuse interval)"),
    _s("lserve.mass", "layer", "fraction",
       "attention mass captured by LServe's hierarchical selection (logical pages N_L, physical N_P, top "
       "physical pages by max logical min-max score) at the trace's token budget", "004 LServe 3.5.2",
       "attention.lserve"),
    _s("quest.mass", "layer", "fraction",
       "attention mass captured by flat Quest page selection (page N_L) at the same token budget",
       "004 LServe 3.5.1 / Quest", "attention.quest"),
    _s("lserve.page_inflation", "layer", "ratio",
       "distinct physical pages holding the top (budget / N_L) logical pages, divided by budget / N_P: 1 = the "
       "important logical pages cluster (no budget inflation), N_P/N_L = fully scattered",
       "004 LServe 3.5.3 spatial locality (worst case N_P/N_L)", "attention.lserve"),
    _s("lserve.step_overlap", "layer", "fraction", "step-to-step overlap of the physical page selection",
       "004 LServe 3.5.3", "attention.lserve"),
    # ---- StreamingLLM / SnapKV --------------------------------------------------------------------------------
    _s("streaming.mass", "layer", "fraction",
       "attention mass on the sink tokens + the recent window (StreamingLLM)", "003 SnapStream (StreamingLLM)",
       "kv_policy"),
    _s("snapkv.recall", "budget layer", "fraction",
       "attention mass of the decode steps captured by sink + SnapKV top-K (chosen once from the prompt's "
       "observation window, avg-pooled) + the recent window, vs the budget K", "003 SnapStream (SnapKV Eq. 1-2)",
       "kv_policy.snapkv"),
    _s("snapkv.recall_decay", "budget step_bin", "fraction",
       "snapkv.recall (mean over layers) by decode-step bin: how the prompt-time choice ages",
       "003 SnapStream", "kv_policy.snapkv"),
    # ---- speculation and SpecAttn --------------------------------------------------------------------------
    _s("spec.accept_len_samples", "round", "tokens",
       "accepted draft tokens per verification round from the recorded draft/target pair (chain of K)",
       "000 SSV / 002 SpecAttn (acceptance)", "speculation"),
    _s("spec.accept_hist", "length", "fraction", "fraction of rounds accepting 0..K draft tokens",
       "000 SSV E[accepted]", "speculation"),
    _s("spec.accept_rate", "", "fraction",
       "per-token acceptance alpha = P(draft token i accepted | tokens < i accepted), pooled over positions",
       "000 SSV alpha; 002 SpecAttn (not stated)", "speculation"),
    _s("spec.tokens_per_round", "", "tokens", "mean accepted + 1 (the bonus token)", "000 SSV 'E[acc] ~ 3'",
       "speculation"),
    _s("specattn.kl", "draft_layer target_layer", "nats",
       "mean KL(A_target_j || A_draft_i) of the GQA-group-averaged attention distributions at the same steps",
       "002 SpecAttn Eq. 4 / Fig. 2", "attention.specattn"),
    _s("specattn.layer_map", "target_layer", "layer",
       "draft layer for each target layer: simulator.dtw.monotonic_dtw(-KL)", "002 SpecAttn App. B Algorithm 3",
       "attention.specattn"),
    _s("specattn.mapped_draft_layers", "", "layers", "distinct draft layers the map uses (the draft layers "
       "whose attention must be materialized)", "002 SpecAttn", "attention.specattn"),
    _s("specattn.kept_fraction", "p target_layer", "fraction",
       "tokens kept by top-p on the mapped draft layer's attention / context", "002 SpecAttn Table 1 "
       "(KV reduction 44.3/68.8/78.4 % at p .99/.97/.95)", "attention.specattn"),
    _s("specattn.target_mass", "p target_layer", "fraction",
       "target attention mass captured by that draft top-p selection", "002 SpecAttn App. A (error <= 1-p)",
       "attention.specattn"),
    _s("specattn.agreement", "target_layer", "fraction",
       "Jaccard of the mapped draft layer's top-k and the target layer's top-k (k = meta topk k)",
       "002 SpecAttn (draft<->target selection agreement)", "attention.specattn"),
    # ---- attention shape (fit targets of the synthetic generator) -----------------------------------------
    _s("attn.sink_mass", "layer", "fraction", "attention mass on the first 4 tokens", "003 (StreamingLLM sinks)",
       "synthetic generator"),
    _s("attn.local_mass", "layer", "fraction", "attention mass on the last 64 tokens", "locality", "synthetic"),
    _s("attn.topk_mass", "k layer", "fraction", "attention mass captured by the exact top-k", "001/002",
       "attention.dsa"),
    _s("attn.entropy_bits", "layer", "bits", "entropy of the GQA-group attention distribution", "-", "synthetic"),
)
BY_NAME: dict[str, Stat] = {s.name: s for s in CATALOG}


def catalog_markdown() -> str:
    """The catalog as a Markdown table (docs/TRACE_STATS_API.md is generated from it)."""
    lines = ["| name | axes | unit | meaning | seed document | consumer |", "|---|---|---|---|---|---|"]
    for s in CATALOG:
        lines.append(f"| `{s.name}` | {' x '.join(s.axes) or 'scalar'} | {s.unit} | {s.meaning} | {s.seed} | "
                     f"{s.consumer} |")
    return "\n".join(lines)


@dataclass(frozen=True, eq=False)
class TraceStats:
    """Statistics of one attention/top-k trace (see the module docstring and CATALOG).

    name      the trace's name; file: its file; source: 'recorded' | 'synthetic' (never blurred)
    meta      small summary: model {name, layers, kv_heads, ...}, context, policies {name: params}, provenance
    values    catalog name -> numpy array with the catalog's axes
    coords    axis -> coordinate values (k, order, C, lag, interval, budget, p, length, step_bin)
    digest    SHA-256 of the trace file the statistics came from (equality and hash use it)
    """

    name: str
    file: str
    source: str
    meta: Mapping[str, Any]
    values: Mapping[str, np.ndarray]
    coords: Mapping[str, tuple]
    digest: str
    notes: tuple[str, ...] = field(default=())

    def __eq__(self, other) -> bool:
        return isinstance(other, TraceStats) and other.digest == self.digest and other.name == self.name

    def __hash__(self) -> int:
        return hash(("TraceStats", self.name, self.digest))

    def __repr__(self) -> str:
        return f"TraceStats({self.name!r}, {self.source}, {len(self.values)} statistics)"

    # ---- access ------------------------------------------------------------------------------------------
    @property
    def recorded(self) -> bool:
        return self.source == "recorded"

    @property
    def layers(self) -> int:
        return int(self.meta["model"]["layers"])

    def names(self) -> list[str]:
        return [s.name for s in CATALOG if s.name in self.values]

    def has(self, name: str) -> bool:
        return name in self.values

    def axes(self, name: str) -> tuple[str, ...]:
        if name not in BY_NAME:
            raise TraceError(f"unknown statistic {name!r}; the catalog (simulator.traces.stats.CATALOG) has "
                             f"{len(CATALOG)} names, e.g. {', '.join(s.name for s in CATALOG[:4])}")
        return BY_NAME[name].axes

    def get(self, name: str) -> np.ndarray:
        """The statistic's full array (axes: `axes(name)`)."""
        self.axes(name)
        if name not in self.values:
            raise TraceError(f"trace {self.name!r} has no statistic {name!r} (its policies do not provide it); it "
                             f"has: {', '.join(self.names())}", file=self.file)
        return self.values[name]

    def scalar(self, name: str) -> float:
        return float(np.asarray(self.get(name)).reshape(-1)[0])

    def _index(self, axis: str, value) -> int:
        vals = list(self.coords.get(axis, ()))
        for i, v in enumerate(vals):
            if v == value or (isinstance(v, (int, float)) and isinstance(value, (int, float))
                              and abs(float(v) - float(value)) < 1e-9):
                return i
        raise TraceError(f"trace {self.name!r} has no {axis} = {value!r}; recorded: {vals}", file=self.file)

    def select(self, name: str, **where) -> np.ndarray:
        """The array with the named coordinate axes fixed by value, e.g. select('ssv.gamma_eff',
        order='bfs', C=4) -> [layer]."""
        arr = self.get(name)
        axes = list(self.axes(name))
        for axis, value in where.items():
            if axis not in axes:
                raise TraceError(f"statistic {name!r} has axes {axes}, not {axis!r}")
            if axis in ("layer", "kv_head", "sample", "target_layer", "draft_layer", "round"):
                i = int(value)
            else:
                i = self._index(axis, value)
            arr = np.take(arr, i, axis=axes.index(axis))
            axes.remove(axis)
        return arr

    def layer_map(self, model_layers: int) -> np.ndarray:
        """This trace's layer for each layer of a model of `model_layers` layers (nearest relative depth)."""
        return layer_map(self.layers, model_layers)

    def per_layer(self, name: str, layers: int, **where) -> np.ndarray:
        """[layers] values for a model of `layers` layers: the statistic's layer axis (mean over any sample /
        kv_head axis left) mapped by nearest relative depth (module docstring)."""
        arr = self.select(name, **where)
        axes = [a for a in self.axes(name) if a not in where]
        lname = "layer" if "layer" in axes else "target_layer" if "target_layer" in axes else None
        if lname is None:
            raise TraceError(f"statistic {name!r} has no layer axis (axes {axes})")
        for a in reversed(axes):
            if a in ("sample", "kv_head"):
                arr = np.nanmean(arr, axis=axes.index(a))
                axes.remove(a)
        if len(axes) != 1:
            raise TraceError(f"statistic {name!r} still has axes {axes}: fix the others with keywords, e.g. "
                             f"per_layer({name!r}, {layers}, {axes[0] if axes[0] != lname else axes[-1]}=...)")
        return np.asarray(arr, dtype=np.float64)[layer_map(arr.shape[0], layers, self.layer_depths)]

    @property
    def layer_depths(self) -> np.ndarray | None:
        """Relative depth (0 = first, 1 = last model layer) of each trace layer when the trace records only some of
        its model's layers (meta.model.layer_ids, e.g. Gemma 3's global layers), else None (trace layers are the
        model's layers)."""
        m = self.meta.get("model", {})
        ids, total = m.get("layer_ids"), m.get("model_layers")
        if not ids or not total or len(ids) != self.layers or total <= 1:
            return None
        return np.asarray(ids, dtype=np.float64) / (float(total) - 1.0)

    def samples(self, name: str, layer: int | None = None, **where) -> np.ndarray:
        """1-D distribution samples (NaN dropped) of a *_samples statistic, of one trace layer or pooled."""
        arr = self.select(name, **where)
        axes = [a for a in self.axes(name) if a not in where]
        if layer is not None:
            arr = np.take(arr, int(layer), axis=axes.index("layer"))
        arr = np.asarray(arr, dtype=np.float64).reshape(-1)
        return arr[np.isfinite(arr)]

    def summary(self, name: str) -> float:
        """Mean over every entry (NaN ignored): one number for tables."""
        a = np.asarray(self.get(name), dtype=np.float64)
        return float(np.nanmean(a)) if np.isfinite(a).any() else float("nan")

    # ---- persistence ---------------------------------------------------------------------------------
    def save(self, path: str | Path) -> Path:
        path = Path(path)
        head = {"stats_version": STATS_VERSION, "name": self.name, "source": self.source, "meta": self.meta,
                "coords": {k: list(v) for k, v in self.coords.items()}, "digest": self.digest,
                "notes": list(self.notes)}
        tmp = path.with_name(path.name + ".tmp")
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("stats.json", json.dumps(head, sort_keys=True, default=_json_default))
            for k, v in self.values.items():
                buf = io.BytesIO()
                np.lib.format.write_array(buf, np.ascontiguousarray(np.asarray(v, dtype=np.float32)),
                                          allow_pickle=False)
                zf.writestr(k + ".npy", buf.getvalue())
        tmp.replace(path)
        return path


def _json_default(o):
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(type(o).__name__)


def layer_map(trace_layers: int, model_layers: int, depths: np.ndarray | None = None) -> np.ndarray:
    """Trace layer for each model layer: nearest relative depth, first->first, last->last. `depths` (optional): the
    relative depth in ITS model of each trace layer, when the trace holds only some layers (TraceStats.layer_depths);
    each model layer then takes the trace layer of nearest depth (ties: the shallower)."""
    if model_layers <= 1 or trace_layers <= 1:
        return np.zeros(max(model_layers, 1), dtype=np.int64)[:model_layers]
    j = np.arange(model_layers)
    if depths is not None and len(depths) == trace_layers:
        d = j / (model_layers - 1)
        return np.argmin(np.abs(d[:, None] - np.asarray(depths, np.float64)[None, :]), axis=1).astype(np.int64)
    return np.rint(j * (trace_layers - 1) / (model_layers - 1)).astype(np.int64)


def file_digest(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def stats_path(trace_path: str | Path) -> Path:
    p = Path(trace_path)
    return p.with_name(p.name[:-4] + ".stats.npz" if p.name.endswith(".npz") else p.name + ".stats.npz")


def read_stats(path: str | Path, digest: str | None = None) -> TraceStats | None:
    """A cached stats file, or None when absent, of another STATS_VERSION, or for another trace digest."""
    path = Path(path)
    if not path.is_file():
        return None
    try:
        with zipfile.ZipFile(path) as zf:
            head = json.loads(zf.read("stats.json").decode("utf-8"))
            if head.get("stats_version") != STATS_VERSION or (digest and head.get("digest") != digest):
                return None
            values = {}
            for info in zf.infolist():
                if info.filename.endswith(".npy"):
                    if info.file_size > 64 << 20:
                        return None
                    values[info.filename[:-4]] = np.lib.format.read_array(io.BytesIO(zf.read(info)),
                                                                          allow_pickle=False)
    except Exception:  # noqa: BLE001 - a damaged cache is recomputed, never trusted
        return None
    coords = {k: tuple(v) for k, v in head["coords"].items()}
    return TraceStats(name=head["name"], file=head.get("file", str(path)), source=head["source"], meta=head["meta"],
                      values=values, coords=coords, digest=head["digest"], notes=tuple(head.get("notes", [])))
