"""What every `sparsesim calibrate fit*` command checks before a fitted file is written.

1. The measurement CSV (`read_csv`): it exists, has data rows and the columns the fit needs; every time and
   every shape value a row's family uses is a finite positive number. A malformed file stops with one line
   naming the file, the column and what is wrong (header only, NaN, inf, negative, zero, text, unknown
   families, too few rows). Rows a measurement script wrote without a time (an empty `median_us`: skipped
   or unavailable kernels, with a note) are counted and left out, never silently accepted as numbers.
2. The fit is independent of earlier fits (`datasheet_spec`): it starts from the spec's datasheet values
   (peaks, bandwidth, the spec's own launch overheads) and the uncalibrated Efficiency, never from a fitted
   file that happens to be loaded (defect D16 of the newcomer review: a CSV without launch rows used to take
   the installed fit's launch cost).
3. The result is physical (`check_physical`): efficiencies in (0, 1.2], saturations in (0, 16] SMs,
   per-kernel fixed and sync times in [0, 1 ms), launch costs in [0.5, 50] us, the overlap exponent in
   [1, 64], latencies below 100 us. A parameter outside these ranges means the data are wrong (units,
   corrupted rows), not that the GPU is unusual: refused.
4. Its held-out error is within a stated bound (`check_bounds`), per op kind; see each fit module's
   REFUSAL_BOUNDS for the numbers and their reasoning.
5. It is written next to the user's data or to `--fitted-dir`, never into an installed package
   (`fitted_dir_for`), merged with what other fits own in that file (`merge_into`), validated by the same
   reader the specs use before the file is replaced.
Every fitter sets its parameters through `efficiency_with` (names as in a fitted file).
"""
from __future__ import annotations

import gzip
import io
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from hwmodels import datafiles as DF
from hwmodels.errors import SparsesimError
from hwmodels.spec import FITTED_ENV, Efficiency, HardwareSpec, efficiency_from_dict, load_hardware
from hwmodels.yamlio import decode_utf8, load_yaml, read_bytes, read_text

#: physical ranges of fitted parameters (see module docstring): (low, high, inclusive low)
EFF_RANGE = (0.0, 1.2)
SATURATION_RANGE = (0.0, 16.0)
FIXED_US_MAX = 1000.0
LAUNCH_US_RANGE = (0.5, 50.0)
OVERLAP_RANGE = (1.0, 64.0)
LATENCY_US_MAX = 100.0


#: largest measurement CSV read (bytes): the biggest committed campaign is ~1.5 MB; the cap is on what is read,
#: so a device file or a wrong, huge file stops with one line instead of filling memory
MAX_CSV_BYTES = 256 * 2**20


class CalibrationError(SparsesimError):
    """A calibration input or result a fitted file must not be written from."""


# ---------------------------------------------------------------------------------------------------
# 1. the CSV
# ---------------------------------------------------------------------------------------------------
def _csv_text(p: Path, what: str) -> str:
    """The UTF-8 text of a CSV, decompressed when its name ends in .gz (at most MAX_CSV_BYTES either way)."""
    if not p.name.endswith(DF.GZ):
        return read_text(p, what, MAX_CSV_BYTES)
    raw = read_bytes(p, what, MAX_CSV_BYTES)
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(raw)) as g:
            data = g.read(MAX_CSV_BYTES + 1)
    except (OSError, EOFError) as e:
        raise CalibrationError(f"is not a readable gzip file ({e}); expected {what}", file=str(p)) from None
    if len(data) > MAX_CSV_BYTES:
        raise CalibrationError(f"is larger than {MAX_CSV_BYTES} bytes uncompressed; expected {what}", file=str(p))
    return decode_utf8(data, str(p), what)


def read_csv(path: str | Path, required: tuple[str, ...], what: str, time_col: str = "median_us",
             min_rows: int = 1) -> tuple[pd.DataFrame, int]:
    """Read a measurement CSV strictly. Returns (rows with a time, count of rows without one).

    Every cell is read as text first, so that an empty cell (not measured), the text 'NaN', 'inf' and a
    word are told apart; the time column is then converted and must be a finite number > 0 wherever it is
    not empty."""
    p = DF.resolve(path)   # X.csv or its committed gzip form X.csv.gz
    if not p.exists():
        raise CalibrationError("no such file", file=str(p))
    if not p.is_file():
        raise CalibrationError(f"is not a file; give {what}", file=str(p))
    try:
        text = io.StringIO(_csv_text(p, what))
    except CalibrationError:
        raise
    except SparsesimError as e:
        raise CalibrationError(str(e).removeprefix(f"{p}: "), file=str(p)) from None
    try:
        df = pd.read_csv(text, dtype=str, keep_default_na=False, skipinitialspace=True)
    except pd.errors.EmptyDataError:
        raise CalibrationError(f"is empty; expected {what}", file=str(p)) from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as e:
        msg = str(e).strip().splitlines()[0][:120] if str(e).strip() else type(e).__name__
        raise CalibrationError(f"is not a readable CSV ({msg}); expected {what}", file=str(p)) from None
    df.columns = [str(c).strip() for c in df.columns]
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise CalibrationError(f"is missing columns {missing}; is it {what}?", file=str(p))
    if df.empty:
        raise CalibrationError(f"has a header but no data rows; expected {what}", file=str(p))
    raw = df[time_col].astype(str).str.strip()
    empty = raw == ""
    t = pd.to_numeric(raw.where(~empty, None), errors="coerce")
    bad = ~empty & ~(np.isfinite(t.to_numpy(float, na_value=np.nan)) & (t.to_numpy(float, na_value=np.nan) > 0))
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise CalibrationError(f"column {time_col}: {int(bad.sum())} row(s) are not a finite time > 0 (first: "
                               f"data row {i + 1}, {raw.iloc[i]!r}); an unmeasured kernel has an empty cell",
                               file=str(p), field=time_col)
    df[time_col] = t
    for c in df.columns:  # columns whose every non-empty cell is a number become numbers (empty -> NaN)
        if c == time_col:
            continue
        col = df[c].astype(str).str.strip()
        try:
            df[c] = pd.to_numeric(col.where(col != "", None), errors="raise")
        except (ValueError, TypeError):
            df[c] = col
    timed = df[~empty.to_numpy()].reset_index(drop=True)
    if len(timed) < min_rows:
        raise CalibrationError(f"has {len(timed)} timed row(s); a fit needs at least {min_rows}", file=str(p))
    return timed, int(empty.sum())


#: Largest physical value of the shape columns measurement scripts write (a count of elements, tokens, heads, ...):
#: 10-1000x beyond any measured or served shape (GEMM dims: vocab 262,144; contexts: 10M tokens; bytes: 10 TB).
#: Beyond them a value is a corrupted row or a unit mistake, which would drag a fit (a GEMM of k = 1e12 moves
#: memory.gemm by 14 %).
SHAPE_MAX = {"m": 1e7, "n": 1e7, "k": 1e7, "batch": 1e7, "rows": 1e8, "heads": 4096, "kv_heads": 4096,
             "head_dim": 4096, "context": 1e8, "seq": 1e8, "q_rows": 1e5, "pages": 1e8, "page_size": 1e6,
             "selected_tokens": 1e8, "row_len": 1e9, "topk_k": 1e8, "layers": 4096, "n_kernels": 1e7, "threads": 4096,
             "gpus": 1024, "ctas": 1e8, "iterations": 1e9, "bytes": 1e13, "footprint_bytes": 1e13,
             "bytes_moved": 1e15, "sweeps_mean": 1e4}
#: shape columns that count whole things (a fraction is a corrupted row)
INTEGER_SHAPES = ("m", "n", "k", "batch", "rows", "heads", "kv_heads", "head_dim", "context", "seq", "q_rows", "pages",
                  "page_size", "selected_tokens", "row_len", "topk_k", "layers", "n_kernels", "threads", "gpus", "ctas",
                  "iterations", "bytes", "footprint_bytes")
#: worst factor between predicted and measured time any fit row or checked row may have after a fit (either way:
#: an absolute % error cannot exceed 100 % when the measured time is the larger): on the committed H100 / H200
#: campaigns the worst such rows are off by 3.0x / 3.2x (small gathers, held out); 10x is a corrupted measurement
#: or a row of another kernel
WORST_ROW_FACTOR = 10.0


def positive_columns(df: pd.DataFrame, rows: np.ndarray, cols: tuple[str, ...], file: str, family: str) -> None:
    """The columns `cols` must hold finite numbers > 0 on every row in `rows` (the shape of that family), within
    their physical range (SHAPE_MAX) and whole where they count things (INTEGER_SHAPES)."""
    for c in cols:
        if c not in df.columns:
            if rows.any():
                raise CalibrationError(f"has {family} rows but no column {c!r}", file=file, field=c)
            continue
        raw = df[c].astype(str).str.strip()
        v = pd.to_numeric(raw, errors="coerce").to_numpy(float, na_value=np.nan)
        bad = rows & ~(np.isfinite(v) & (v > 0))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise CalibrationError(f"column {c}: {int(bad.sum())} {family} row(s) are not a finite number > 0 "
                                   f"(first: data row {i + 1}, {raw.iloc[i]!r})", file=file, field=c)
        hi = SHAPE_MAX.get(c, math.inf)
        with np.errstate(invalid="ignore"):
            bad = rows & ((v > hi) | ((v != np.round(v)) if c in INTEGER_SHAPES else False))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            why = f"above {hi:g}, beyond any real shape" if v[i] > hi else "not a whole number"
            raise CalibrationError(f"column {c}: {int(bad.sum())} {family} row(s) outside the physical range (first: "
                                   f"data row {i + 1}, {raw.iloc[i]!r}: {why}); a corrupted row would drag the fit",
                                   file=file, field=c)


def numeric(df: pd.DataFrame, cols: tuple[str, ...]) -> pd.DataFrame:
    """`df` with `cols` (where present) converted to floats (empty cells -> NaN)."""
    out = df.copy()
    for c in cols:
        if c in out.columns:
            out[c] = pd.to_numeric(out[c].astype(str).str.strip().replace("", None), errors="coerce")
    return out


# ---------------------------------------------------------------------------------------------------
# 2. the starting point
# ---------------------------------------------------------------------------------------------------
def datasheet_spec(name: str) -> HardwareSpec:
    """The spec `name` with its datasheet values only: uncalibrated efficiencies and the launch overheads
    its spec file states (the loader replaces them by a fitted file's measured ones; a fit must not
    start from those)."""
    hw = load_hardware(name)
    doc = load_yaml(hw.file, "hardware spec file")
    lo = doc.get("launch_overhead_us") or {}
    graph = (lo.get("graph") or {}).get("value")
    eager = (lo.get("eager") or {}).get("value")
    return replace(hw, launch_graph_s=float(graph) * 1e-6, launch_eager_s=float(eager) * 1e-6,
                   efficiency=Efficiency(source="datasheet (uncalibrated)"))


# ---------------------------------------------------------------------------------------------------
# 3. physical ranges, 4. error bounds
# ---------------------------------------------------------------------------------------------------
def check_physical(params: dict[str, float], file: str) -> None:
    """Refuse parameters outside their physical ranges. `params` maps 'part.key' (as written into the
    fitted file: memory.gemm, fixed_us.attention, launch_us.graph, overlap_p, latency.loop_iter_us, ...)
    to values."""
    for name, v in params.items():
        part = name.split(".")[0]
        if part in ("compute", "memory", "compute_dtype"):
            lo, hi, ok = EFF_RANGE[0], EFF_RANGE[1], EFF_RANGE[0] < v <= EFF_RANGE[1]
            allowed = f"an efficiency in ({lo:g}, {hi:g}]"
        elif part == "saturation":
            ok, allowed = SATURATION_RANGE[0] < v <= SATURATION_RANGE[1], "in (0, 16] multiples of the SM count"
        elif part == "cta_slots":
            ok, allowed = 0.0 < v <= 64.0, "in (0, 64] resident CTAs per SM"
        elif part in ("fixed_us", "sync_us", "iter_us", "cta_fixed_us", "iter_l2_us", "cta_serial_us",
                      "wave_fixed_us"):
            ok, allowed = 0.0 <= v < FIXED_US_MAX, "in [0, 1000) us (under 1 ms per kernel)"
        elif part == "launch_us":
            ok, allowed = LAUNCH_US_RANGE[0] <= v <= LAUNCH_US_RANGE[1], "in [0.5, 50] us per kernel launch"
        elif part == "l2_bw_tbs":
            ok, allowed = 0.5 <= v <= 50.0, "in [0.5, 50] TB/s"
        elif part == "overlap_p":
            ok, allowed = OVERLAP_RANGE[0] <= v <= OVERLAP_RANGE[1], "in [1, 64]"
        elif part == "broadcast_copy":
            from hwmodels.spec import BROADCAST_TERMS

            lo, hi = BROADCAST_TERMS.get(name.partition(".")[2], (0.0, 0.0))
            ok, allowed = lo <= v <= hi, f"in [{lo:g}, {hi:g}]"
        elif part == "chain_queue":
            ok, allowed = 0.0 <= v <= 1.0, "a share in [0, 1]"
        elif part in ("latency", "link_latency_us"):
            ok, allowed = 0.0 < v < LATENCY_US_MAX, "in (0, 100) us"
        else:
            ok, allowed = math.isfinite(v), "finite"
        if not (isinstance(v, (int, float)) and math.isfinite(v) and ok):
            raise CalibrationError(f"the fit gives {name} = {v:.4g}, outside its physical range ({allowed}): the "
                                   f"measurements are not consistent with the model (wrong units or corrupted "
                                   f"rows?); nothing was written", file=file, field=name)


def check_bounds(err_pct: pd.DataFrame, bounds: dict[str, tuple[str, float, float]], file: str,
                 fitted: list[str]) -> list[str]:
    """Refuse when a fitted op kind's check rows miss their bound.

    err_pct: one row per measured kernel with columns `group`, `part` and `ape_pct` (absolute % error).
    bounds: op kind -> (group whose `part` rows check it, median bound %, p90 bound %); `part` is taken
    from the group name 'GROUP|PART'. fitted: the op kinds this fit actually set. Returns the lines that
    report each check."""
    lines = []
    for kind in fitted:
        if kind not in bounds:
            continue
        key, med_b, p90_b = bounds[kind]
        group, _, part = key.partition("|")
        e = err_pct[(err_pct["group"] == group) & (err_pct["part"] == part)]["ape_pct"].to_numpy(float)
        if len(e) == 0:
            raise CalibrationError(f"the {kind} fit cannot be checked: no '{group}' rows of part '{part}' in the "
                                   f"data (a fit that cannot be checked on held-out shapes is not written)",
                                   file=file)
        med, p90, worst = float(np.median(e)), float(np.percentile(e, 90)), float(np.max(e))
        worst_b = 3.0 * p90_b
        if not (np.isfinite(med) and med <= med_b and p90 <= p90_b and worst <= worst_b):
            raise CalibrationError(f"the {kind} fit misses its bound on {group} ({part}, {len(e)} rows): median "
                                   f"|error| {med:.3g} % (bound {med_b:g} %), p90 {p90:.3g} % (bound {p90_b:g} %), worst "
                                   f"{worst:.3g} % (bound {worst_b:g} %: 3x the p90 bound); nothing was written",
                                   file=file)
        lines.append(f"{kind}: {group} ({part}) median {med:.1f} % <= {med_b:g} %, p90 {p90:.1f} % <= {p90_b:g} %, "
                     f"worst {worst:.1f} % <= {worst_b:g} %")
    return lines


def check_worst_row(err: pd.DataFrame, file: str, bound: float = WORST_ROW_FACTOR,
                    measured: str = "median_us", predicted: str = "predicted_us") -> None:
    """Refuse when any priced measured row (fit rows included: a corrupted one pulls the fit towards it, and a
    held-out bound never sees it) is off by more than a factor `bound` either way after the fit."""
    m = err[measured].to_numpy(float)
    p = err[predicted].to_numpy(float)
    ok = np.isfinite(m) & np.isfinite(p) & (m > 0) & (p > 0)
    if not ok.any():
        return
    factor = np.where(ok, np.maximum(p / np.where(ok, m, 1), m / np.where(ok, p, 1)), 1.0)
    i = int(np.argmax(factor))
    if factor[i] > bound:
        row = err.iloc[i]
        raise CalibrationError(f"after the fit, a measured row of {row.get('group', '?')} ({row.get('part', '?')}, "
                               f"data row {int(row.name) + 1 if isinstance(row.name, (int, np.integer)) else '?'}) is off "
                               f"by {factor[i]:.3g}x: measured {m[i]:.4g} us, predicted {p[i]:.4g} us (worst allowed "
                               f"{bound:g}x; the committed fits' worst such rows: ~3x): a corrupted time or shape, or a "
                               "row of another kernel; nothing was written", file=file)


# ---------------------------------------------------------------------------------------------------
# 5. where the file goes
# ---------------------------------------------------------------------------------------------------
def _installed_package_dir() -> Path:
    import hwmodels

    return Path(hwmodels.__file__).resolve().parent


def fitted_dir_for(arg: str | None, data_files: list[str | Path]) -> Path:
    """Where a fit writes `<device>.yaml`: --fitted-dir when given, else `fitted/` beside the (first) CSV,
    except when that CSV is one the package ships (then ./results/calibration/fitted). Never a folder inside
    an installed package (site-packages / dist-packages): refused with the reason."""
    if arg:
        d = Path(arg)
    else:
        csv = Path(data_files[0]).resolve()
        pkg = _installed_package_dir()
        d = Path("results/calibration/fitted") if pkg in csv.parents else csv.parent / "fitted"
    parts = d.resolve().parts
    if "site-packages" in parts or "dist-packages" in parts:
        raise CalibrationError("is inside an installed Python package; a fit is never written there (the next "
                               "install would undo it). Give --fitted-dir DIR outside it and export "
                               f"{FITTED_ENV}=DIR", file=str(d), field="--fitted-dir")
    if d.exists() and not d.is_dir():
        raise CalibrationError("exists and is not a folder; give another --fitted-dir", file=str(d),
                               field="--fitted-dir")
    return d


def merge_into(path: Path, own: dict, owned_keys: dict[str, tuple[str, ...] | None]) -> dict:
    """The document to write at `path`: what is there now (other fits' terms are kept), with the keys this
    fit owns replaced. owned_keys: top-level key -> None (the whole value is this fit's) or the sub-keys of
    a mapping this fit owns (e.g. 'memory': ('gemm', 'copy', ...))."""
    doc: dict = {}
    if path.exists():
        try:
            old = load_yaml(path, "fitted efficiency file")
        except SparsesimError as e:
            raise CalibrationError(f"the existing fitted file cannot be merged into: {e}", file=str(path)) from None
        if not isinstance(old, dict):
            raise CalibrationError("the existing fitted file is not a mapping; move it away first", file=str(path))
        doc = {k: (dict(v) if isinstance(v, dict) else v) for k, v in old.items()}
    if not any((own.get(key) not in (None, {}, [], "")) if sub is None else
               any(k in (own.get(key) or {}) for k in sub) for key, sub in owned_keys.items()):
        raise CalibrationError(f"the fit set none of its terms ({', '.join(owned_keys)}): the data hold nothing it could "
                               f"fit; {path} is left as it was", file=str(path))
    for key, sub in owned_keys.items():
        if sub is None:
            if key in own:
                doc[key] = own[key]
            else:
                doc.pop(key, None)
        else:
            table = {k: v for k, v in (doc.get(key) or {}).items() if k not in sub}
            table.update({k: v for k, v in (own.get(key) or {}).items()})
            doc[key] = table
    for key, v in own.items():  # provenance keys (source, device, data, fit, errors_pct, ...)
        if key not in owned_keys:
            doc[key] = v
    first = ("source", "device", "data", "compute", "memory", "compute_dtype", "fixed_us", "sync_us", "saturation")
    return {**{k: doc[k] for k in first if k in doc}, **{k: v for k, v in doc.items() if k not in first}}


def write_checked(path: Path, doc: dict, header: str) -> Path:
    """Validate `doc` with the reader the specs use, then (only then) write it."""
    import yaml

    efficiency_from_dict(doc, str(path))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(header + yaml.safe_dump(plain(doc), sort_keys=False, width=110))
    except OSError as e:
        raise CalibrationError(f"cannot be written ({e.strerror or e}); give another --fitted-dir",
                               file=str(path)) from None
    return path


def how_to_use(path: Path) -> str:
    """The line every fit prints after writing."""
    return (f"wrote {path}\nto use it: export {FITTED_ENV}={path.parent.resolve()}  (searched before the shipped "
            f"fitted files, no reinstall needed)")


def plain(x):
    """numpy scalars and NaN -> plain YAML-safe Python values."""
    if isinstance(x, dict):
        return {str(k): plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [plain(v) for v in x]
    if isinstance(x, np.floating):
        x = float(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.bool_):
        return bool(x)
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def efficiency_with(eff: Efficiency, updates: dict[str, float]) -> Efficiency:
    """`eff` with parameters replaced; names are 'part.key' as in a fitted file (memory.gemm, fixed_us.copy,
    cta_slots.attn_fa2, iter_us.attn_fa2, cta_fixed_us.attn_fa2, iter_l2_us.reduce, overlap_p, l2_bw_tbs,
    broadcast_copy.lead_ps_per_byte (Efficiency.broadcast_copy, kept in the fitted file's units), ...)."""
    parts = {"compute": dict(eff.compute), "memory": dict(eff.memory), "compute_dtype": dict(eff.compute_dtype),
             "fixed_us": dict(eff.fixed_s), "sync_us": dict(eff.sync_s), "saturation": dict(eff.saturation),
             "cta_slots": dict(eff.cta_slots), "iter_us": dict(eff.iter_s), "cta_fixed_us": dict(eff.cta_fixed_s),
             "iter_l2_us": dict(eff.iter_l2_s), "cta_serial_us": dict(eff.cta_serial_s),
             "wave_fixed_us": dict(eff.wave_fixed_s), "chain_queue": dict(eff.chain_queue)}
    scale = {"fixed_us": 1e-6, "sync_us": 1e-6, "iter_us": 1e-6, "cta_fixed_us": 1e-6, "iter_l2_us": 1e-6,
             "cta_serial_us": 1e-6, "wave_fixed_us": 1e-6}
    for path, v in updates.items():
        part, _, key = path.partition(".")
        if part == "overlap_p":
            eff = replace(eff, overlap_p=v)
        elif part == "l2_bw_tbs":
            eff = replace(eff, l2_bw_bytes_s=float(v) * 1e12)
        elif part == "broadcast_copy":
            eff = replace(eff, broadcast_copy={**eff.broadcast_copy, key: float(v)})
        elif part in parts:
            parts[part][key] = float(v) * scale.get(part, 1.0)
        else:
            raise KeyError(path)
    return replace(eff, compute=parts["compute"], memory=parts["memory"], compute_dtype=parts["compute_dtype"],
                   fixed_s=parts["fixed_us"], sync_s=parts["sync_us"], saturation=parts["saturation"],
                   cta_slots=parts["cta_slots"], iter_s=parts["iter_us"], cta_fixed_s=parts["cta_fixed_us"],
                   iter_l2_s=parts["iter_l2_us"], cta_serial_s=parts["cta_serial_us"],
                   wave_fixed_s=parts["wave_fixed_us"], chain_queue=parts["chain_queue"])
