"""FlashMLA's sparse decode (DeepSeek-V3.2's DSA attention as SGLang runs it on Hopper) against the product's price:
the first H200 grid.

The DSA strategy (simulator/strategies/dsa.py decode_ops) prices the sparse MLA of a decode step with the generic
`attention` kind (absorbed MLA over T = min(N, k) gathered latent entries, one op plus a combine where it splits; its
split size an ASSUMPTION until calibrated) and its heads per device, H / TP, as they are. The kernel that runs it in
SGLang on SM90 is FlashMLA's sparse decode (sgl_flash_mla 1.0.0's frozen csrc_legacy kernels, V3.2 KV format, 656
bytes a token): query heads 64 or 128 only (SGLang pads fewer to 64), the scheduler's split of each row's k indices
over the SMs, a combine. This grid times that kernel (lab/kernels/measure_flashmla_sparse.py; cold K/V, the engine's
state, and warm) at DeepSeek-V3.2's decode shapes on the H200 and prices each shape as the product does today (no
candidate): the FIRST LOOK of the product's DSA attention against the kernel users run, committed before the call.
The shapes: TP 1 / 2 / 8 (128 / 64 / 16 heads a GPU, the kernel at 128 / 64 / 64), batch 1-128, s_q 1 (plain decode)
and 2 (one MTP draft), context 8K and 64K, k 2048.
"""
from __future__ import annotations

import contextlib
from pathlib import Path

import numpy as np
import pandas as pd

from hwmodels.roofline import price
from hwmodels.spec import HardwareSpec
from simulator.calibration import fit_production_topk_gemm as F


@contextlib.contextmanager
def rule(module, name: str, value):
    """A module-level rule switch (e.g. flashmla_sparse.COMBINE_CHAIN) set to `value` for the block, restored after."""
    old = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, old)


MODEL = "DeepSeek-V3.2-Exp"
TOPK = 2048
PREDICTION = "flashmla_sparse_h200_prediction_2026-11-28.csv"
#: (tp, batch, s_q, context)
SHAPES = [(tp, b, sq, n) for tp in (1, 2, 8) for b in (1, 4, 16, 32, 64, 128) for sq in (1, 2) for n in (8192, 65536)]


def kernel_heads(tp: int) -> int:
    """The query heads the kernel runs at TP `tp`: DeepSeek-V3.2's 128 / tp, padded up to 64 (the kernel takes 64 or
    128: SGLang pads)."""
    return max(64, 128 // int(tp))


def regime(tp, batch) -> np.ndarray:
    """The grid's regimes (declared before the call): the kernel's heads (128 / 64 / 64 padded from 16) x batch
    (<= 16 / >= 32)."""
    tp, batch = np.asarray(tp), np.asarray(batch)
    h = np.where(tp == 1, "128 heads (TP1)", np.where(tp == 2, "64 heads (TP2)", "16 heads padded to 64 (TP8)"))
    return np.array([f"{a}, batch {'<= 16' if b <= 16 else '>= 32'}" for a, b in zip(h, batch)])


def product_parts_us(hw: HardwareSpec, tp: int, batch: int, s_q: int, context: int, pad_heads: int | None = None,
                     sparse_kernel: str | None = None) -> dict:
    """The product's price of one layer's sparse MLA for one decode step of `batch` sequences with `s_q` query rows
    each (s_q 2: one MTP draft) at `context`, in us, by op name: {'attention': ..., 'attention_combine': ...} (a name
    the step does not price is absent); `pad_heads`, `sparse_kernel` set the DSA strategy's parameters (None: their
    defaults)."""
    from dataclasses import replace

    from simulator.combo import make_combo
    from simulator.pricing import decode_ops
    from simulator.strategies.base import parse_axis

    c = make_combo(hw.name, MODEL, kv_dtype="fp8", tp=int(tp), launch="graph", attention="dense")
    spec = "none" if s_q == 1 else {"mtp": {"k": int(s_q) - 1}}
    # the harness draws every query row's indices independently: no row re-reads another's keys (row_overlap 0)
    par = {"row_overlap": 0.0} | ({} if pad_heads is None else {"pad_heads": int(pad_heads)}) | (
        {} if sparse_kernel is None else {"sparse_kernel": sparse_kernel})
    c = replace(c, attention=parse_axis("attention", [{"dsa": par}])[0], topk=parse_axis("topk", ["radix"])[0],
                speculation=parse_axis("speculation", [spec])[0])
    ops, _ = decode_ops(c, np.array([float(batch)]), np.array([float(context)]))
    names = np.asarray(ops.names, dtype=object)[ops.name_id]
    sec = price(ops, hw, "graph") - hw.launch_graph_s * (ops.count if hasattr(ops, "count") else 1.0)
    # per layer: the target model's layers (an MTP draft module's own layer aside: count > 1 rows only)
    out = {}
    for name in ("attention", "attention_combine"):
        keep = (names == name) & (ops.count > 1)
        if keep.any():
            out[name] = float((sec[keep] / ops.count[keep]).sum() * 1e6)
    return out


def product_us(hw: HardwareSpec, tp: int, batch: int, s_q: int, context: int, pad_heads: int | None = None,
               sparse_kernel: str | None = None) -> float:
    """The product's price of one layer's sparse MLA (the DSA strategy's `attention` and `attention_combine` ops), us
    (product_parts_us summed)."""
    return float(sum(product_parts_us(hw, tp, batch, s_q, context, pad_heads, sparse_kernel).values()))


def frame() -> pd.DataFrame:
    rows = []
    for tp, b, sq, n in SHAPES:
        rows.append({"tp": tp, "batch": b, "s_q": sq, "heads": kernel_heads(tp), "heads_dev": 128 // tp, "topk": TOPK,
                     "context": n})
    t = pd.DataFrame(rows)
    t["regime"] = regime(t["tp"], t["batch"])
    return t


def predict(hw: HardwareSpec) -> pd.DataFrame:
    """Every shape priced as the product prices DSA decode attention today (`pred_us`, per layer)."""
    t = frame()
    t["pred_us"] = [product_us(hw, tp, b, sq, n) for tp, b, sq, n in zip(t["tp"], t["batch"], t["s_q"], t["context"])]
    return t


def newest(tag: str, data_dir: Path = F.DATA_DIR, replicate: bool = False, suffix: str = "") -> Path | None:
    """The newest H200 measurement file of a campaign `tag` (flashmla_sparse_nvidia-h200_<date>_<tag>[_replicate]
    <suffix>.csv), None before one exists."""
    files = sorted(Path(data_dir).glob(f"flashmla_sparse_nvidia-h200_*_{tag}{'_replicate' if replicate else ''}"
                                       f"{suffix}.csv"))
    return files[-1] if files else None


def joined(prediction: str, path: Path | None, key: list, kernel: str | None = None,
           data_dir: Path = F.DATA_DIR) -> pd.DataFrame | None:
    """A committed `prediction` joined on `key` to the measurement at `path` (its rows of `kernel` where given):
    median_us and note beside the prices; None where nothing is measured yet."""
    if path is None:
        return None
    m = pd.read_csv(path)
    if kernel is not None:
        m = m[m["kernel"] == kernel]
    return pd.read_csv(Path(data_dir) / prediction).merge(m[key + ["median_us", "note"]], on=key, how="inner")


def measured_grid(prediction: str, tag: str, kernel: str = "fmla_sparse", data_dir: Path = F.DATA_DIR,
                  replicate: bool = False) -> pd.DataFrame | None:
    """A grid's committed `prediction` joined to the newest H200 measurement of `kernel` tagged `tag` (None before it
    exists)."""
    return joined(prediction, newest(tag, data_dir, replicate), ["batch", "s_q", "heads", "topk", "context"], kernel,
                  data_dir)


def measured(kernel: str = "fmla_sparse", data_dir: Path = F.DATA_DIR) -> pd.DataFrame | None:
    """Grid 1's committed prediction joined to its H200 measurement of `kernel` (None before it exists)."""
    return measured_grid(PREDICTION, "grid1", kernel, data_dir)


#: the second grid (new shapes; TP 4 joins: 32 heads a GPU): main = the DSA strategy as shipped (pad_heads 0: the heads
#: a device holds), cand = dsa.PAD_HEADS_CANDIDATE (64: the kernel's 64-head CTAs, fewer heads padded), read from the
#: kernel's source (it takes 64 or 128 query heads) after grid 1's TP8 rows ran -44..-57 % fast (LOOKED-AT there: the
#: same padding prices them within grid 1's TP2 rows' errors); declared before the call: the candidate ships if it meets
#: more regimes, a tie by the lower pooled median; the grid holds FlashMLA sparse decode's H200 STANDING
SHAPES2 = ([(8, b, sq, n) for b in (2, 8, 24, 48, 96) for sq, n in ((1, 32768), (3, 4096))]
           + [(4, b, sq, n) for b in (3, 12, 40, 80) for sq, n in ((1, 16384), (2, 131072))]
           + [(2, b, 3, 32768) for b in (6, 20, 56)] + [(1, b, 4, 16384) for b in (2, 10, 48)])
PREDICTION2 = "flashmla_sparse_h200_grid2_prediction_2026-11-28.csv"


def regime2(tp, batch) -> np.ndarray:
    """The second grid's regimes (declared before the call)."""
    tp, batch = np.asarray(tp), np.asarray(batch)
    return np.where(tp >= 4, np.where(batch <= 16, "heads padded to 64 (TP4 / TP8), batch <= 16",
                                      "heads padded to 64 (TP4 / TP8), batch >= 24"),
                    np.where(tp == 2, "64 heads (TP2)", "128 heads (TP1)"))


def predict2(hw: HardwareSpec) -> pd.DataFrame:
    """SHAPES2 priced by main (`pred_main_us`: pad_heads 0) and the candidate (`pred_us`: PAD_HEADS_CANDIDATE)."""
    from simulator.strategies.dsa import PAD_HEADS_CANDIDATE

    rows = [{"tp": tp, "batch": b, "s_q": sq, "heads": kernel_heads(tp), "heads_dev": 128 // tp, "topk": TOPK,
             "context": n} for tp, b, sq, n in SHAPES2]
    t = pd.DataFrame(rows)
    t["regime"] = regime2(t["tp"], t["batch"])
    t["pred_main_us"] = [product_us(hw, *a, pad_heads=0) for a in zip(t["tp"], t["batch"], t["s_q"], t["context"])]
    t["pred_us"] = [product_us(hw, *a, pad_heads=PAD_HEADS_CANDIDATE)
                    for a in zip(t["tp"], t["batch"], t["s_q"], t["context"])]
    return t


def measured2(kernel: str = "fmla_sparse", data_dir: Path = F.DATA_DIR, replicate: bool = False
              ) -> pd.DataFrame | None:
    """Grid 2's committed prediction joined to its H200 measurement of `kernel` (None before it exists)."""
    return measured_grid(PREDICTION2, "grid2", kernel, data_dir, replicate)


#: the tile chain's kinds and their fit (fit_tiles): FlashMLA's sparse decode as the chain of its scheduler's tiles
#: (simulator/kernels/flashmla_sparse.py), iter_us (one 64-token tile) and fixed_us (Q load, epilogue, combine) per kind
TILE_KINDS = ("attn_flashmla_sparse", "attn_flashmla_sparse_pair")


def tile_eff(hw: HardwareSpec, terms: dict):
    """hw's efficiency with the tile kinds' terms {kind: (iter_us a tile, fixed_us, sync_us a request segment)} and
    one resident CTA an SM (the kernel's
    __launch_bounds__ min blocks 1 and ~226 KiB of shared memory: the source)."""
    from dataclasses import replace

    e = hw.efficiency
    return replace(e, iter_s={**e.iter_s, **{k: v[0] * 1e-6 for k, v in terms.items()}},
                   fixed_s={**e.fixed_s, **{k: v[1] * 1e-6 for k, v in terms.items()}},
                   sync_s={**e.sync_s, **{k: v[2] * 1e-6 for k, v in terms.items()}},
                   cta_slots={**e.cta_slots, **{k: 1.0 for k in terms}})


def fit_tiles(hw: HardwareSpec) -> dict:
    """iter_us, fixed_us and sync_us of each tile kind by least squares on log time over grid 1's cold rows of that kind (the
    kernel at 64 heads: TP2's rows, TP8's being the same measurements; 128 heads: TP1's), priced through the product
    (dsa sparse_kernel flashmla)."""
    from scipy.optimize import least_squares

    m = measured()
    m = m.drop_duplicates(["batch", "s_q", "heads", "context"]).reset_index(drop=True)
    out = {}
    for kd, tp in (("attn_flashmla_sparse", 2), ("attn_flashmla_sparse_pair", 1)):
        sub = m[m["tp"] == tp].reset_index(drop=True)
        y = np.log(sub["median_us"].to_numpy(float))

        def resid(x, sub=sub, kd=kd, y=y):
            h2 = hw.with_efficiency(tile_eff(hw, {kd: (x[0], x[1], x[2])}))
            p = [product_us(h2, tp, b, sq, n, sparse_kernel="flashmla")
                 for b, sq, n in zip(sub["batch"], sub["s_q"], sub["context"])]
            return np.log(np.maximum(p, 1e-3)) - y
        r = least_squares(resid, [2.5, 3.0, 5.0], bounds=([0.1, 0.0, 0.0], [20.0, 50.0, 50.0]))
        out[kd] = {"iter_us": round(float(r.x[0]), 4), "fixed_us": round(float(r.x[1]), 4),
                   "sync_us": round(float(r.x[2]), 4), "rows": len(sub),
                   "rms_log_error": round(float(np.sqrt(np.mean(r.fun ** 2))), 4)}
    return out


#: the third grid (new shapes): main = the DSA strategy as shipped (sparse_kernel generic, heads padded), cand = the
#: tile chain (sparse_kernel flashmla) on fit_tiles' terms (fitted on grid 1's cold rows alone; grid 2 was LOOKED-AT
#: with them: 4 of 4 regimes, 4.5 % median); declared before the call: the candidate ships if it meets more regimes, a
#: tie by the lower pooled median; the grid holds FlashMLA sparse decode's H200 STANDING
SHAPES3 = ([(8, b, sq, n) for b, sq, n in ((3, 1, 24576), (6, 2, 8192), (12, 4, 49152), (20, 1, 98304), (28, 2, 16384),
                                           (40, 4, 24576), (72, 1, 65536), (112, 2, 12288))]
           + [(4, b, sq, n) for b, sq, n in ((5, 2, 40960), (9, 1, 20480), (36, 3, 8192), (60, 1, 57344),
                                             (100, 2, 32768), (160, 1, 16384))]
           + [(2, b, sq, n) for b, sq, n in ((3, 2, 12288), (24, 1, 98304), (44, 2, 24576), (90, 1, 49152))]
           + [(1, b, sq, n) for b, sq, n in ((5, 1, 16384), (14, 3, 32768), (40, 2, 8192), (100, 1, 65536))])
PREDICTION3 = "flashmla_sparse_h200_grid3_prediction_2026-11-28.csv"


def predict3(hw: HardwareSpec) -> pd.DataFrame:
    """SHAPES3 priced by main (`pred_main_us`: the strategy's defaults) and the candidate (`pred_us`: sparse_kernel
    flashmla on fit_tiles' terms, which the frame records)."""
    x = fit_tiles(hw)
    h2 = hw.with_efficiency(tile_eff(hw, {k: (v["iter_us"], v["fixed_us"], v["sync_us"]) for k, v in x.items()}))
    rows = [{"tp": tp, "batch": b, "s_q": sq, "heads": kernel_heads(tp), "heads_dev": 128 // tp, "topk": TOPK,
             "context": n} for tp, b, sq, n in SHAPES3]
    t = pd.DataFrame(rows)
    t["regime"] = regime2(t["tp"], t["batch"])
    t["pred_main_us"] = [product_us(hw, *a) for a in zip(t["tp"], t["batch"], t["s_q"], t["context"])]
    t["pred_us"] = [product_us(h2, *a, sparse_kernel="flashmla") for a in zip(t["tp"], t["batch"], t["s_q"], t["context"])]
    t["terms"] = str(x)
    return t


def measured3(kernel: str = "fmla_sparse", data_dir: Path = F.DATA_DIR, replicate: bool = False
              ) -> pd.DataFrame | None:
    """Grid 3's committed prediction joined to its H200 measurement of `kernel` (None before it exists)."""
    return measured_grid(PREDICTION3, "grid3", kernel, data_dir, replicate)


def write_tiles(device: str = "H200", out_dir: Path | None = None) -> tuple[Path, dict]:
    """fit_span_tiles' terms (the tile kinds fitted on the SPANS campaign's sparse kernel spans) and fit_iter_l2's (their
    L2-hit tile, fitted on grid 5's prefill rows) merged into
    out_dir/<device>.yaml (default: the shipped fitted files): each tile kind's cta_slots 1, iter_us (a tile), fixed_us,
    sync_us (a request segment), and the fit's record under production_kernels.flashmla_sparse. For a device other than
    the H200 the same terms, marked as the H200's (ASSUMPTION: the same GH100 SM and clocks; FlashMLA's sparse decode not
    measured there)."""
    from hwmodels.spec import fitted_dirs, load_hardware
    from hwmodels.yamlio import load_yaml
    from simulator.calibration import checks as C

    x = fit_span_tiles(load_hardware("H200"))
    l2 = fit_iter_l2(load_hardware("H200"))
    for k in TILE_KINDS:
        x[k]["iter_l2_us"] = l2[k]["iter_l2_us"]
        x[k]["iter_l2_rows"] = l2[k]["rows"]
    rec = {k: dict(v) for k, v in x.items()} | {
        "iter_l2_data": sorted(Path(F.DATA_DIR).glob("flashmla_sparse_nvidia-h200_*_grid5_spans.csv"))[-1].name,
        "iter_l2_judged": ("the sixth FlashMLA sparse grid (flashmla_sparse_h200_grid6_prediction_2026-11-29.csv, 20 new "
                           "shapes, blind): 3 of 3 regimes, 4.0 / 6.6 %, against every gather from HBM, 1 of 3, 13.4 / "
                           "31.3 %"),
        "data": sorted(Path(F.DATA_DIR).glob("flashmla_sparse_nvidia-h200_*_spans1_spans.csv"))[-1].name,
        "judged": ("the fourth FlashMLA sparse grid (flashmla_sparse_h200_grid4_prediction_2026-11-29.csv, 39 new "
                   "shapes, blind, with the combine as FlashMLA's combine kernel): 4 of 4 regimes, 2.6 / 7.1 %, against "
                   "grid 1's terms with the combine as its bytes, 4 of 4, 4.5 / 11.7 %")}
    if device != "H200":
        rec["source"] = ("the H200's fit (ASSUMPTION: the same GH100 SM, clocks and shared memory; FlashMLA's sparse "
                         f"decode was not measured on the {device})")
    p = Path(out_dir or fitted_dirs()[0]) / f"{device}.yaml"
    old = (load_yaml(p, "fitted efficiency file") or {}).get("production_kernels", {}) if p.exists() else {}
    own = {"cta_slots": {k: 1.0 for k in TILE_KINDS}, "iter_us": {k: x[k]["iter_us"] for k in TILE_KINDS},
           "iter_l2_us": {k: x[k]["iter_l2_us"] for k in TILE_KINDS},
           "fixed_us": {k: x[k]["fixed_us"] for k in TILE_KINDS}, "sync_us": {k: x[k]["sync_us"] for k in TILE_KINDS},
           "production_kernels": dict(old) | {"flashmla_sparse": rec}}
    doc = C.merge_into(p, own, {"cta_slots": TILE_KINDS, "iter_us": TILE_KINDS, "iter_l2_us": TILE_KINDS, "fixed_us": TILE_KINDS,
                                "sync_us": TILE_KINDS, "production_kernels": None})
    return C.write_checked(p, doc, ""), rec


#: FlashMLA's sparse PREFILL (flash_mla_sparse_fwd: DSA's attention over a prompt; its grid (h / 64) x P CTAs, not
#: persistent, invalid indices skipped) against the product's DSA prefill attention (the generic kind over
#: sum_i min(i + 1, k) pairs at the heads a device holds): a FIRST LOOK, no candidate, committed before the call;
#: (tp, prompt P)
PREFILL_SHAPES = [(tp, p) for tp in (1, 2, 8) for p in (2048, 4096, 8192, 16384, 32768)]
PREFILL_PREDICTION = "flashmla_sparse_prefill_h200_prediction_2026-11-28.csv"


def product_prefill_us(hw: HardwareSpec, tp: int, prompt: int, sparse_prefill: str | None = None) -> float:
    """The product's price of one layer's sparse MLA at the prefill of one `prompt`-token prompt (the DSA strategy's
    prefill `attention` op), in us."""
    from dataclasses import replace

    from simulator.combo import make_combo
    from simulator.pricing import prefill_ops
    from simulator.strategies.base import parse_axis

    c = make_combo(hw.name, MODEL, kv_dtype="fp8", tp=int(tp), launch="graph", attention="dense")
    att = "dsa" if sparse_prefill is None else {"dsa": {"sparse_prefill": sparse_prefill}}
    c = replace(c, attention=parse_axis("attention", [att])[0], topk=parse_axis("topk", ["radix"])[0])
    ops = prefill_ops(c, np.array([float(prompt)]))
    names = np.asarray(ops.names, dtype=object)[ops.name_id]
    sec = price(ops, hw, "graph") - hw.launch_graph_s * ops.count
    keep = (names == "attention") & (ops.count > 1)
    return float((sec[keep] / ops.count[keep]).sum() * 1e6)


def predict_prefill(hw: HardwareSpec) -> pd.DataFrame:
    """PREFILL_SHAPES priced as the product prices DSA prefill attention today (`pred_us`, per layer)."""
    t = pd.DataFrame([{"tp": tp, "heads": kernel_heads(tp), "heads_dev": 128 // tp, "prompt": p, "topk": TOPK}
                      for tp, p in PREFILL_SHAPES])
    t["regime"] = np.where(t["tp"] == 1, "128 heads (TP1)", np.where(t["tp"] == 2, "64 heads (TP2)",
                                                                     "16 heads padded to 64 (TP8)"))
    t["pred_us"] = [product_prefill_us(hw, tp, p) for tp, p in zip(t["tp"], t["prompt"])]
    return t


def measured_prefill(data_dir: Path = F.DATA_DIR, replicate: bool = False) -> pd.DataFrame | None:
    """The prefill grid's committed prediction joined to its H200 measurement (None before it exists)."""
    return joined(PREFILL_PREDICTION, newest("prefill1", data_dir, replicate), ["heads", "prompt", "topk"], data_dir=data_dir)


#: the second prefill grid (new prompts, TP 4 joins): main = the DSA strategy as shipped (sparse_prefill generic), cand
#: = sparse_prefill flashmla (read from the kernel's source after prefill grid 1: every row's k index tiles at the padded
#: heads, a CTA per (64 heads, row); no fitted constant: the attention kind's own terms; LOOKED-AT on grid 1: 5.3 /
#: 10.9 % against 68.7 / 264.0 %); declared before the call: the candidate ships if it meets more regimes, a tie by the
#: lower pooled median; the grid holds FlashMLA sparse prefill's H200 STANDING
PREFILL_SHAPES2 = ([(8, p) for p in (3072, 6144, 12288, 24576)] + [(4, p) for p in (2560, 10240, 20480)]
                   + [(2, p) for p in (5120, 28672)] + [(1, p) for p in (3584, 14336, 24576)])
PREFILL_PREDICTION2 = "flashmla_sparse_prefill_h200_grid2_prediction_2026-11-28.csv"


def prefill_regime(tp) -> np.ndarray:
    """The prefill grids' regimes: the kernel's heads."""
    tp = np.asarray(tp)
    return np.where(tp == 1, "128 heads (TP1)", np.where(tp == 2, "64 heads (TP2)", "heads padded to 64 (TP4 / TP8)"))


def predict_prefill2(hw: HardwareSpec) -> pd.DataFrame:
    """PREFILL_SHAPES2 priced by main (`pred_main_us`) and the candidate (`pred_us`: sparse_prefill flashmla)."""
    t = pd.DataFrame([{"tp": tp, "heads": kernel_heads(tp), "heads_dev": 128 // tp, "prompt": p, "topk": TOPK}
                      for tp, p in PREFILL_SHAPES2])
    t["regime"] = prefill_regime(t["tp"])
    t["pred_main_us"] = [product_prefill_us(hw, tp, p) for tp, p in zip(t["tp"], t["prompt"])]
    t["pred_us"] = [product_prefill_us(hw, tp, p, "flashmla") for tp, p in zip(t["tp"], t["prompt"])]
    return t


def measured_prefill2(data_dir: Path = F.DATA_DIR, replicate: bool = False) -> pd.DataFrame | None:
    """The second prefill grid's committed prediction joined to its H200 measurement (None before it exists)."""
    return joined(PREFILL_PREDICTION2, newest("prefill2", data_dir, replicate), ["heads", "prompt", "topk"], data_dir=data_dir)


#: the SPANS campaign (diagnostic, LOOKED-AT once measured): each kernel of the sparse decode call timed on its own
#: (lab/kernels/measure_flashmla_sparse.py --spans: the sparse kernel's span and the PDL-launched combine's exposed tail)
#: after grid 3 left the padded heads' batch <= 16 regime +12 % (the model's split into the tile chain and the combine is
#: what it asks). Shapes: the split-heavy small batches at 64 heads (s_q 1 and 2) and 128 heads, large-batch controls,
#: and grid 3's 22 shapes again (their totals measured once: the two campaigns' agreement)
SPANS_SHAPES = ([(8, b, 1, 32768) for b in (1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24)]
                + [(8, b, 2, 16384) for b in (1, 2, 3, 4, 6, 8)]
                + [(1, b, 1, 16384) for b in (1, 2, 3, 4, 6, 8, 12, 16)]
                + [(8, b, 1, 32768) for b in (32, 64, 128, 192)] + [(1, b, 1, 16384) for b in (64, 128)]
                + SHAPES3)
SPANS_PREDICTION = "flashmla_sparse_h200_spans_prediction_2026-11-29.csv"


def predict_spans(hw: HardwareSpec) -> pd.DataFrame:
    """SPANS_SHAPES priced by the product as shipped: the call (`pred_us`) and its two ops (`pred_attention_us`: the
    tile chain; `pred_combine_us`: the combine, 0 where no request splits), us a layer."""
    rows = []
    for tp, b, sq, n in dict.fromkeys(SPANS_SHAPES):
        d = product_parts_us(hw, tp, b, sq, n)
        rows.append({"tp": tp, "batch": b, "s_q": sq, "heads": kernel_heads(tp), "heads_dev": 128 // tp, "topk": TOPK,
                     "context": n, "regime": regime2(tp, b).item(), "pred_us": sum(d.values()),
                     "pred_attention_us": d.get("attention", 0.0), "pred_combine_us": d.get("attention_combine", 0.0)})
    return pd.DataFrame(rows)


def measured_spans(data_dir: Path = F.DATA_DIR, replicate: bool = False, tag: str = "spans1",
                   prediction: str = SPANS_PREDICTION) -> pd.DataFrame | None:
    """A spans campaign's kernel spans (sparse_us, combine_tail_us, call_us, combine_lag_us; eager calls) joined to its
    committed per-op prices and its graph-timed call (median_us) (None before it exists)."""
    spans = newest(tag, data_dir, replicate, "_spans")
    calls = measured_grid(prediction, tag, "fmla_sparse", data_dir, replicate)
    if spans is None or calls is None:
        return None
    key = ["batch", "s_q", "heads", "topk", "context"]
    sp = pd.read_csv(spans)[key + ["sparse_us", "combine_tail_us", "call_us", "combine_lag_us"]]
    return calls.merge(sp, on=key)


def fit_span_tiles(hw: HardwareSpec) -> dict:
    """iter_us, fixed_us and sync_us of each tile kind by least squares on log time over the SPANS campaign's sparse
    kernel spans (the kernel alone, its combine apart; 64 heads: 42 shapes, 128: 14), priced through the product's
    attention op (dsa sparse_kernel flashmla, the combine as FlashMLA's combine kernel: COMBINE_CHAIN)."""
    from scipy.optimize import least_squares

    from simulator.kernels import flashmla_sparse as K

    m = measured_spans()
    out = {}
    with rule(K, "COMBINE_CHAIN", True):
        for kd, heads, tp in (("attn_flashmla_sparse", 64, 8), ("attn_flashmla_sparse_pair", 128, 1)):
            sub = m[m["heads"] == heads].reset_index(drop=True)
            y = np.log(sub["sparse_us"].to_numpy(float))

            def resid(x, sub=sub, kd=kd, y=y, tp=tp):
                h2 = hw.with_efficiency(tile_eff(hw, {kd: (x[0], x[1], x[2])}))
                p = [product_parts_us(h2, tp, b, sq, n, sparse_kernel="flashmla")["attention"]
                     for b, sq, n in zip(sub["batch"], sub["s_q"], sub["context"])]
                return np.log(np.maximum(p, 1e-3)) - y
            r = least_squares(resid, [2.5, 3.0, 5.0], bounds=([0.1, 0.0, 0.0], [20.0, 50.0, 50.0]))
            out[kd] = {"iter_us": round(float(r.x[0]), 4), "fixed_us": round(float(r.x[1]), 4),
                       "sync_us": round(float(r.x[2]), 4), "rows": len(sub),
                       "rms_log_error": round(float(np.sqrt(np.mean(r.fun ** 2))), 4)}
    return out


#: the fourth grid (new (batch, s_q) pairs at every head count; run with --spans, its kernels timed one by one too):
#: main = the DSA strategy as shipped (the tile chain on grid 1's terms, the combine as its partials' bytes), cand =
#: the combine as FlashMLA's combine kernel (flashmla_sparse.COMBINE_CHAIN, read from combine.cu, the dense family's
#: terms, nothing refitted) + the tile kinds' terms refitted on the SPANS campaign's kernel spans (fit_span_tiles);
#: built after the SPANS campaign (LOOKED-AT: on its 56 shapes the call 2.6 / 8.1 % against main's 4.3 / 17.4 %);
#: declared before the call: the candidate ships if it meets more regimes, a tie by the lower pooled median; the grid
#: holds FlashMLA sparse decode's H200 STANDING
SHAPES4 = ([(8, b, 1, n) for b, n in ((11, 40960), (13, 12288), (15, 73728))]
           + [(4, b, 2, n) for b, n in ((7, 28672), (9, 61440), (11, 6144), (14, 20480))]
           + [(8, b, 3, n) for b, n in ((1, 36864), (3, 53248), (4, 10240), (10, 24576))]
           + [(4, b, 4, n) for b, n in ((1, 45056), (2, 14336), (5, 30720))]
           + [(8, b, 1, n) for b, n in ((28, 20480), (44, 36864), (100, 10240), (144, 28672))]
           + [(4, b, 2, n) for b, n in ((20, 45056), (52, 12288))] + [(8, 30, 3, 16384), (4, 24, 4, 8192)]
           + [(2, b, 1, n) for b, n in ((18, 53248), (36, 14336), (250, 4096))]
           + [(2, b, 2, n) for b, n in ((10, 36864), (70, 8192))] + [(2, 16, 3, 20480)]
           + [(1, b, 1, n) for b, n in ((7, 24576), (10, 45056), (24, 12288), (48, 36864), (200, 6144))]
           + [(1, b, 2, n) for b, n in ((3, 61440), (12, 20480), (24, 28672))]
           + [(1, b, 3, n) for b, n in ((2, 12288), (8, 40960))] + [(1, 5, 4, 16384)])
PREDICTION4 = "flashmla_sparse_h200_grid4_prediction_2026-11-29.csv"


def predict4(hw: HardwareSpec) -> pd.DataFrame:
    """SHAPES4 priced by main (`pred_main_us`: the strategy as shipped) and the candidate (`pred_us`: COMBINE_CHAIN on
    fit_span_tiles' terms, which the frame records), each with its two ops (`*_attention_us`, `*_combine_us`)."""
    from simulator.kernels import flashmla_sparse as K

    x = fit_span_tiles(hw)
    h2 = hw.with_efficiency(tile_eff(hw, {k: (v["iter_us"], v["fixed_us"], v["sync_us"]) for k, v in x.items()}))
    rows = []
    for tp, b, sq, n in SHAPES4:
        main = product_parts_us(hw, tp, b, sq, n)
        with rule(K, "COMBINE_CHAIN", True):
            cand = product_parts_us(h2, tp, b, sq, n, sparse_kernel="flashmla")
        rows.append({"tp": tp, "batch": b, "s_q": sq, "heads": kernel_heads(tp), "heads_dev": 128 // tp, "topk": TOPK,
                     "context": n, "regime": regime2(tp, b).item(), "pred_main_us": sum(main.values()),
                     "pred_us": sum(cand.values()), "main_attention_us": main.get("attention", 0.0),
                     "main_combine_us": main.get("attention_combine", 0.0),
                     "cand_attention_us": cand.get("attention", 0.0),
                     "cand_combine_us": cand.get("attention_combine", 0.0)})
    t = pd.DataFrame(rows)
    t["terms"] = str(x)
    return t


def measured4(kernel: str = "fmla_sparse", data_dir: Path = F.DATA_DIR, replicate: bool = False
              ) -> pd.DataFrame | None:
    """Grid 4's committed prediction joined to its H200 measurement of `kernel` (None before it exists)."""
    return measured_grid(PREDICTION4, "grid4", kernel, data_dir, replicate)


def kernel_us(hw: HardwareSpec, heads: int, batch: int, s_q: int, topk: int = TOPK, unique_tokens=None) -> dict:
    """The product's price of one sparse decode call as the kernel sees it (simulator/kernels/flashmla_sparse.py
    add_ops at `batch` requests of `s_q` rows, `heads` the kernel's heads, DeepSeek-V3.2's 512 + 64 latent and the V3.2
    656-byte fp8 token), us by op name ({'attention': ..., 'attention_combine': ...}); graph launches, the node cost left
    out as product_parts_us leaves it. For layouts the DSA strategy's decode step does not build from (batch, s_q)
    itself: an engine's flattened rows (batch = rows, s_q 1) and one request of every row (batch 1, s_q = rows);
    `unique_tokens`: the distinct tokens the rows gather from where they share a sequence (add_ops)."""
    from simulator.kernels import flashmla_sparse as K
    from simulator.ops import OpBuilder

    b = OpBuilder(1)
    K.add_ops(b, np.array([float(batch)]), np.array([float(s_q)]), np.array([float(heads)]), float(topk), 576.0,
              512.0, 1.0, 2.0, "bf16", 1.0, hw.units,
              unique_tokens=None if unique_tokens is None else np.array([float(unique_tokens)]))
    ops = b.build()
    names = np.asarray(ops.names, dtype=object)[ops.name_id]
    sec = price(ops, hw, "graph") - hw.launch_graph_s * ops.count
    return {n: float(sec[names == n].sum() * 1e6) for n in ("attention", "attention_combine") if (names == n).any()}


#: the fifth grid: the kernel at the row layouts the engines use (read from their sources, 2026-11-29: SGLang's
#: nsa_backend flattens every query row of a decode, verification or prefill step into its own request of one row,
#: q.view(-1, 1, h, d), and prefills on Hopper with this decode kernel over the fp8 cache (flashmla_kv); vLLM's
#: flashmla_sparse backend with an fp8 cache and < 32 heads a device (DeepSeek-V3.2 at TP8) passes every token of the
#: step as ONE request, q.unsqueeze(0): s_q = the step's rows). (layout, heads, batch, s_q, context, shared): flattened
#: prompt rows index one sequence (shared 1). Priced by the product as committed (kernel_us: the shipped tile chain and
#: combine, no candidate), BLIND: the STANDING of the layouts' regimes
SHAPES5 = ([("flattened rows (SGLang prefill)", 64, b, 1, n, 1) for b, n in ((700, 4096), (1536, 8192), (3000, 16384),
                                                                         (6144, 32768))]
           + [("flattened rows (SGLang prefill)", 128, b, 1, n, 1) for b, n in ((1000, 8192), (2500, 20480))]
           + [("flattened rows (SGLang decode / verify)", 64, b, 1, n, 0) for b, n in ((268, 12288), (396, 24576),
                                                                                     (520, 8192))]
           + [("one request of every row (vLLM fp8, < 32 heads)", 64, 1, sq, n, 0) for sq, n in (
               (6, 16384), (24, 8192), (40, 32768), (70, 12288), (133, 20480), (150, 65536), (264, 16384),
               (300, 8192), (520, 24576), (1000, 40960), (2100, 16384), (4000, 32768))])
PREDICTION5 = "flashmla_sparse_h200_grid5_prediction_2026-11-29.csv"


def predict5(hw: HardwareSpec) -> pd.DataFrame:
    """SHAPES5 priced by the product as committed (`pred_us`, with its two ops)."""
    rows = []
    for lay, h, b, sq, n, sh in SHAPES5:
        d = kernel_us(hw, h, b, sq)
        rows.append({"regime": lay, "heads": h, "batch": b, "s_q": sq, "topk": TOPK, "context": n, "shared": sh,
                     "pred_us": sum(d.values()), "pred_attention_us": d.get("attention", 0.0),
                     "pred_combine_us": d.get("attention_combine", 0.0)})
    return pd.DataFrame(rows)


def measured5(kernel: str = "fmla_sparse", data_dir: Path = F.DATA_DIR, replicate: bool = False
              ) -> pd.DataFrame | None:
    """Grid 5's committed prediction joined to its H200 measurement of `kernel` (None before it exists)."""
    return measured_grid(PREDICTION5, "grid5", kernel, data_dir, replicate)


def measured5_spans(data_dir: Path = F.DATA_DIR) -> pd.DataFrame | None:
    """Grid 5's kernel spans joined to its prediction and its graph-timed calls (None before it exists)."""
    return measured_spans(data_dir, tag="grid5", prediction=PREDICTION5)


def with_iter_l2(hw: HardwareSpec, terms: dict) -> HardwareSpec:
    """hw with the tile kinds' iter_l2 {kind: us}."""
    from dataclasses import replace

    e = hw.efficiency
    return hw.with_efficiency(replace(e, iter_l2_s={**e.iter_l2_s, **{k: v * 1e-6 for k, v in terms.items()}}))


def fit_iter_l2(hw: HardwareSpec) -> dict:
    """iter_l2_us of each tile kind (a 64-token tile whose gathers hit in the L2) by least squares on log time over grid
    5's prefill rows (every row indexing one shared sequence of `context` tokens, well inside the L2: 64 heads 4 rows,
    128 heads 2), their sparse kernel spans priced through kernel_us with SHARED_ROWS_L2 (the kinds' other terms as
    shipped). LOOKED-AT: grid 5 had been measured and seen +30 % (64 heads) / +8.5 % (128) before this fit."""
    from scipy.optimize import least_squares

    from simulator.kernels import flashmla_sparse as K

    m = measured5_spans()
    m = m[m["shared"] == 1].reset_index(drop=True)
    out = {}
    with rule(K, "SHARED_ROWS_L2", True):
        for kd, heads in (("attn_flashmla_sparse", 64), ("attn_flashmla_sparse_pair", 128)):
            sub = m[m["heads"] == heads].reset_index(drop=True)
            y = np.log(sub["sparse_us"].to_numpy(float))

            def resid(x, sub=sub, kd=kd, y=y, heads=heads):
                h2 = with_iter_l2(hw, {kd: float(x[0])})
                p = [kernel_us(h2, heads, b, sq, unique_tokens=n)["attention"]
                     for b, sq, n in zip(sub["batch"], sub["s_q"], sub["context"])]
                return np.log(np.maximum(p, 1e-3)) - y
            r = least_squares(resid, [2.5], bounds=([0.1], [20.0]))
            out[kd] = {"iter_l2_us": round(float(r.x[0]), 4), "rows": len(sub),
                       "rms_log_error": round(float(np.sqrt(np.mean(r.fun ** 2))), 4)}
    return out


#: the sixth grid: rows sharing a sequence within and past the L2, and one request of rows from distinct sequences (a
#: vLLM decode step at < 32 heads) or from one sequence (its prompt's chunk). (regime, heads, batch, s_q, context,
#: shared): shared 1 = every row indexes one sequence of `context` tokens, 2 = every row its own. main = the product as
#: shipped (every gather from HBM), cand = flashmla_sparse.SHARED_ROWS_L2 with fit_iter_l2's terms (fitted on grid 5's
#: prefill rows, LOOKED-AT there); declared before the call: the candidate ships if it meets more regimes, a tie by the
#: lower pooled median; the grid holds the engine layouts' STANDING (grid 5's flattened decode rows keep theirs)
SHAPES6 = ([("rows of one sequence inside the L2 (prompt rows)", 64, b, 1, n, 1) for b, n in (
               (900, 2560), (5000, 12288), (2600, 24576), (1200, 49152))]
           + [("rows of one sequence inside the L2 (prompt rows)", 128, b, 1, n, 1) for b, n in ((1800, 40960),)]
           + [("rows of one sequence inside the L2 (prompt rows)", 64, 1, sq, n, 1) for sq, n in ((1500, 20480),
                                                                                                 (330, 6144))]
           + [("rows of one sequence past the L2 (prompt rows)", 64, b, 1, n, 1) for b, n in (
               (2048, 98304), (4096, 131072), (3072, 163840))]
           + [("rows of one sequence past the L2 (prompt rows)", 128, b, 1, n, 1) for b, n in ((3500, 114688),)]
           + [("rows of one sequence past the L2 (prompt rows)", 64, 1, sq, n, 1) for sq, n in ((600, 98304),
                                                                                               (2500, 147456))]
           + [("one request of distinct sequences' rows (vLLM decode, < 32 heads)", 64, 1, sq, n, 2) for sq, n in (
               (12, 16384), (45, 8192), (99, 12288), (140, 4096), (180, 8192), (400, 4096), (700, 4096))])
PREDICTION6 = "flashmla_sparse_h200_grid6_prediction_2026-11-29.csv"


def _unique_tokens(context, shared):
    """The distinct tokens a shape's rows gather from where they share a sequence (shared 1), None otherwise."""
    return context if shared == 1 else None


def predict6(hw: HardwareSpec) -> pd.DataFrame:
    """SHAPES6 priced by main (`pred_main_us`: as shipped) and the candidate (`pred_us`: SHARED_ROWS_L2 on
    fit_iter_l2's terms, recorded in `terms`), each with its two ops."""
    from simulator.kernels import flashmla_sparse as K

    x = fit_iter_l2(hw)
    h2 = with_iter_l2(hw, {k: v["iter_l2_us"] for k, v in x.items()})
    rows = []
    for lay, h, b, sq, n, sh in SHAPES6:
        main = kernel_us(hw, h, b, sq, unique_tokens=_unique_tokens(n, sh))
        with rule(K, "SHARED_ROWS_L2", True):
            cand = kernel_us(h2, h, b, sq, unique_tokens=_unique_tokens(n, sh))
        rows.append({"regime": lay, "heads": h, "batch": b, "s_q": sq, "topk": TOPK, "context": n, "shared": sh,
                     "pred_main_us": sum(main.values()), "pred_us": sum(cand.values()),
                     "cand_attention_us": cand.get("attention", 0.0), "cand_combine_us": cand.get("attention_combine", 0.0)})
    t = pd.DataFrame(rows)
    t["terms"] = str(x)
    return t


def measured6(kernel: str = "fmla_sparse", data_dir: Path = F.DATA_DIR, replicate: bool = False
              ) -> pd.DataFrame | None:
    """Grid 6's committed prediction joined to its H200 measurement of `kernel` (None before it exists)."""
    return measured_grid(PREDICTION6, "grid6", kernel, data_dir, replicate)


#: TensorRT-LLM's DSA generation on Hopper: every generation row a row of FlashMLA's sparse PREFILL kernel over the bf16
#: cache (dsa sparse_kernel prefill_kernel, read from tensorrt_llm/_torch/modules/attention.py @ 00547a25). The rows
#: grid: (tp, rows, context), each row its own sequence (shared 2: distinct requests' decode rows), the kernel at the
#: padded heads (TP8 -> 64, TP1 128). Priced as the product prices it today (the sparse prefill's op over the rows, the
#: generic attention kind's terms), no candidate: the FIRST LOOK of that path, committed before the call
ROWS_SHAPES = ([(8, r, n) for r, n in ((1, 32768), (3, 8192), (8, 65536), (24, 16384), (64, 12288), (100, 24576),
                                      (132, 8192), (133, 16384), (200, 8192), (264, 4096), (400, 8192), (700, 4096))]
               + [(1, r, n) for r, n in ((1, 16384), (5, 40960), (30, 8192), (66, 12288), (67, 8192), (132, 4096),
                                         (250, 8192))])
ROWS_PREDICTION = "flashmla_sparse_fwd_rows_h200_prediction_2026-11-29.csv"


def rows_regime(tp, rows) -> np.ndarray:
    """The rows grid's regimes: the kernel's heads x one wave of CTAs (rows x heads / 64 <= 132) or more."""
    tp, rows = np.asarray(tp), np.asarray(rows)
    one = rows * np.where(tp == 1, 2, 1) <= 132
    h = np.where(tp == 1, "128 heads (TP1)", "heads padded to 64 (TP8)")
    return np.array([f"{a}, {'one wave' if o else 'several waves'}" for a, o in zip(h, one)])


def predict_rows(hw: HardwareSpec) -> pd.DataFrame:
    """ROWS_SHAPES priced by the product as shipped with sparse_kernel prefill_kernel (`pred_us`, per layer)."""
    t = pd.DataFrame([{"tp": tp, "heads": kernel_heads(tp), "rows": r, "topk": TOPK, "context": n, "shared": 2}
                      for tp, r, n in ROWS_SHAPES])
    t["regime"] = rows_regime(t["tp"], t["rows"])
    t["pred_us"] = [product_us(hw, tp, r, 1, n, sparse_kernel="prefill_kernel")
                    for tp, r, n in zip(t["tp"], t["rows"], t["context"])]
    return t


def measured_rows(tag: str = "rows1", prediction: str = ROWS_PREDICTION, data_dir: Path = F.DATA_DIR,
                  replicate: bool = False) -> pd.DataFrame | None:
    """A rows grid's committed prediction joined to its H200 measurement (None before it exists)."""
    return joined(prediction, newest(tag, data_dir, replicate), ["heads", "rows", "topk", "context", "shared"],
                  data_dir=data_dir)


ROWS_KIND = "attn_flashmla_sparse_fwd"


def rows_eff(hw: HardwareSpec, compute: float, memory: float, rate_gbs: float):
    """hw's efficiency with the rows kind's terms: one resident CTA an SM (the kernel's ~200 KB of shared memory),
    its compute and memory efficiencies and its per-SM stream ceiling (GB/s)."""
    from dataclasses import replace

    e = hw.efficiency
    return replace(e, cta_slots={**e.cta_slots, ROWS_KIND: 1.0}, memory={**e.memory, ROWS_KIND: float(memory)},
                   compute={**e.compute, ROWS_KIND: float(compute)},
                   stream_per_sm_bytes_s={**e.stream_per_sm_bytes_s, ROWS_KIND: float(rate_gbs) * 1e9})


def fit_rows(hw: HardwareSpec) -> dict:
    """The rows kind's compute and memory efficiencies and per-SM stream rate by least squares on log time over the
    rows grid's 19 decode rows (LOOKED-AT: the first look had been seen), priced through the product (sparse_kernel
    prefill_kernel with dsa.SPARSE_FWD_ROWS_KIND)."""
    from scipy.optimize import least_squares

    from simulator.strategies import dsa

    m = measured_rows()
    y = np.log(m["median_us"].to_numpy(float))
    with rule(dsa, "SPARSE_FWD_ROWS_KIND", True):
        def resid(x):
            h2 = hw.with_efficiency(rows_eff(hw, x[0], x[1], x[2]))
            p = [product_us(h2, tp, r, 1, n, sparse_kernel="prefill_kernel")
                 for tp, r, n in zip(m["tp"], m["rows"], m["context"])]
            return np.log(np.maximum(p, 1e-3)) - y
        r = least_squares(resid, [0.6, 0.7, 45.0], bounds=([0.05, 0.05, 5.0], [1.5, 1.0, 2000.0]))
    return {"compute": round(float(r.x[0]), 4), "memory": round(float(r.x[1]), 4),
            "stream_per_sm_gbs": round(float(r.x[2]), 3), "rows": len(m),
            "rms_log_error": round(float(np.sqrt(np.mean(r.fun ** 2))), 4)}


#: the second rows grid (new (heads, rows) at TP 1 / 2 / 4 / 8): main = the first look's op (the sparse prefill's
#: generic op over the rows, as shipped), cand = dsa.SPARSE_FWD_ROWS_KIND on fit_rows' terms (fitted on the first rows
#: grid, LOOKED-AT there: 4 of 4 regimes, rms log error 0.041); declared before the call: the candidate ships if it
#: meets more regimes, a tie by the lower pooled median; the grid holds the path's STANDING
ROWS_SHAPES2 = ([(8, r, n) for r, n in ((2, 24576), (12, 8192), (40, 32768), (90, 16384), (120, 4096), (140, 12288),
                                       (180, 24576), (300, 8192), (520, 4096), (1000, 4096))]
                + [(4, r, n) for r, n in ((6, 49152), (77, 8192), (240, 12288))] + [(2, r, n) for r, n in ((50, 16384),
                                                                                                         (1500, 2560))]
                + [(1, r, n) for r, n in ((2, 65536), (20, 16384), (50, 8192), (80, 12288), (100, 4096), (180, 8192),
                                          (400, 4096))])
ROWS_PREDICTION2 = "flashmla_sparse_fwd_rows_h200_grid2_prediction_2026-11-29.csv"


def predict_rows2(hw: HardwareSpec) -> pd.DataFrame:
    """ROWS_SHAPES2 priced by main (`pred_main_us`: the first look's op) and the candidate (`pred_us`:
    SPARSE_FWD_ROWS_KIND on fit_rows' terms, recorded in `terms`)."""
    from simulator.strategies import dsa

    x = fit_rows(hw)
    h2 = hw.with_efficiency(rows_eff(hw, x["compute"], x["memory"], x["stream_per_sm_gbs"]))
    t = pd.DataFrame([{"tp": tp, "heads": kernel_heads(tp), "rows": r, "topk": TOPK, "context": n, "shared": 2}
                      for tp, r, n in ROWS_SHAPES2])
    t["regime"] = rows_regime(t["tp"], t["rows"])
    t["pred_main_us"] = [product_us(hw, tp, r, 1, n, sparse_kernel="prefill_kernel")
                         for tp, r, n in zip(t["tp"], t["rows"], t["context"])]
    with rule(dsa, "SPARSE_FWD_ROWS_KIND", True):
        t["pred_us"] = [product_us(h2, tp, r, 1, n, sparse_kernel="prefill_kernel")
                        for tp, r, n in zip(t["tp"], t["rows"], t["context"])]
    t["terms"] = str(x)
    return t


def write_rows(device: str = "H200", out_dir: Path | None = None) -> tuple[Path, dict]:
    """fit_rows' terms for the rows kind (attn_flashmla_sparse_fwd: cta_slots 1, compute, memory, stream_per_sm_gbs)
    merged into out_dir/<device>.yaml (default: the shipped fitted files), with the fit's record under
    production_kernels.flashmla_sparse_fwd_rows; for a device other than the H200 the same terms, marked as the
    H200's (ASSUMPTION: the same GH100 SM; the H100's HBM3 rate is lower, its memory share not measured)."""
    from hwmodels.spec import fitted_dirs, load_hardware
    from hwmodels.yamlio import load_yaml
    from simulator.calibration import checks as C

    x = fit_rows(load_hardware("H200"))
    rec = dict(x) | {
        "data": sorted(Path(F.DATA_DIR).glob("flashmla_sparse_nvidia-h200_*_rows1.csv"))[-1].name,
        "judged": ("the second rows grid (flashmla_sparse_fwd_rows_h200_grid2_prediction_2026-11-29.csv, 22 new "
                   "shapes, blind): 4 of 4 regimes, 3.8 / 9.9 %, against the first look's op 1 of 4, 16.9 / 26.7 %")}
    if device != "H200":
        rec["source"] = ("the H200's fit (ASSUMPTION: the same GH100 SM and clocks; the sparse prefill kernel's decode "
                         f"rows were not measured on the {device})")
    p = Path(out_dir or fitted_dirs()[0]) / f"{device}.yaml"
    old = (load_yaml(p, "fitted efficiency file") or {}).get("production_kernels", {}) if p.exists() else {}
    own = {"cta_slots": {ROWS_KIND: 1.0}, "compute": {ROWS_KIND: x["compute"]}, "memory": {ROWS_KIND: x["memory"]},
           "stream_per_sm_gbs": {ROWS_KIND: x["stream_per_sm_gbs"]},
           "production_kernels": dict(old) | {"flashmla_sparse_fwd_rows": rec}}
    doc = C.merge_into(p, own, {"cta_slots": (ROWS_KIND,), "compute": (ROWS_KIND,), "memory": (ROWS_KIND,),
                                "stream_per_sm_gbs": (ROWS_KIND,), "production_kernels": None})
    return C.write_checked(p, doc, ""), rec


#: the MTP rows grid: a request's consecutive query rows keep a share `overlap` of the previous row's selected keys
#: (the harness's indices_for overlap); (tp, batch, s_q, context, overlap), new (heads, batch, s_q). main = the product
#: as shipped (every row's gathers from HBM), cand = dsa row_overlap at the grid's overlap (the rows' re-reads priced by
#: SHARED_ROWS_L2 and grid 5's iter_l2, no term fitted); declared before the call: the candidate ships if it meets more
#: regimes, a tie by the lower pooled median
MTP_SHAPES = ([(8, b, 2, n, o) for b, n, o in ((18, 32768, 0.44), (36, 16384, 0.8), (60, 65536, 0.0), (88, 24576, 0.44))]
              + [(8, b, 3, n, o) for b, n, o in ((5, 49152, 0.8), (13, 16384, 0.44), (40, 32768, 0.8))]
              + [(8, b, 4, n, o) for b, n, o in ((7, 24576, 0.0), (20, 16384, 0.44), (33, 8192, 0.8))]
              + [(1, b, 2, n, o) for b, n, o in ((6, 32768, 0.8), (20, 16384, 0.44), (50, 8192, 0.0))]
              + [(1, b, 3, n, o) for b, n, o in ((5, 65536, 0.44), (26, 16384, 0.8))]
              + [(1, b, 4, n, o) for b, n, o in ((3, 32768, 0.8), (16, 12288, 0.44))])
MTP_PREDICTION = "flashmla_sparse_h200_mtp_prediction_2026-11-29.csv"


def predict_mtp(hw: HardwareSpec) -> pd.DataFrame:
    """MTP_SHAPES priced by main (`pred_main_us`) and the candidate (`pred_us`: row_overlap at each shape's overlap)."""
    from simulator.strategies.dsa import row_unique_tokens

    rows = []
    for tp, b, sq, n, o in MTP_SHAPES:
        h = kernel_heads(tp)
        u = row_unique_tokens(b, sq, n, TOPK, o)
        rows.append({"tp": tp, "batch": b, "s_q": sq, "heads": h, "topk": TOPK, "context": n, "overlap": o,
                     "regime": "no overlap (controls)" if o == 0 else f"rows keeping {o:.2f} of the previous row's keys",
                     "pred_main_us": sum(kernel_us(hw, h, b, sq).values()),
                     "pred_us": sum(kernel_us(hw, h, b, sq, unique_tokens=None if u is None else float(u)).values())})
    return pd.DataFrame(rows)


def measured_mtp(data_dir: Path = F.DATA_DIR, replicate: bool = False) -> pd.DataFrame | None:
    """The MTP rows grid's committed prediction joined to its H200 measurement (None before it exists)."""
    return measured_grid(MTP_PREDICTION, "mtp1", "fmla_sparse", data_dir, replicate)
