"""Fit and check the kernel model outside the bandwidth regime on measure_regimes.py CSVs.

Every measured row is turned into the Op rows the simulator itself emits for that kernel (decode attention
through `attention: dense` with `kernel: <family>`, GEMMs and quantization through simulator.layers, torch.topk
through the topk strategy's dispatch-following ops, the indexer through the DSA strategy's indexer op, eager
PyTorch kernels and HF modules through simulator.layers, the HF step through simulator.pricing with `kernels:
hf`), priced by hwmodels.roofline under CUDA-graph launches (`timing=graph` rows: device time + the graph's gap,
which is what they measure) and compared with the measured median (the median over passes where the campaign
measured a shape several times, script version 3).

Measured, not fitted: the resident CTAs per SM of every kernel (Efficiency.cta_slots) come from the launched
kernel's registers, threads and shared memory in the campaign's launch-grid profile (regimes_grids_*.csv beside
the CSV; `occupancy`, CUDA's per-SM limits); the per-split load of the FlashAttention-2 / cuDNN combine kernels
starts at the measured L2 latency.

Fitted per op kind on its fit rows only; WHOLE shape families are held out of every fit and reported:
  decode attention (attn_<family>)  fitted on head configs 32/8, 8/1, 32/32, 1/1 (and our Triton kernel with
                                    forced split counts at 32/8); held out: 16/2 and 64/8 (every corner: short
                                    contexts, large batch x heads, few heads over long contexts, the bandwidth-bound
                                    middle); verification rows (q_rows 2-16) fitted on 32/8, held out on 64/8;
                                    fp8-KV rows are never fitted (the bf16 kernel's terms predict them)
  combine kernels                   our Triton combine timed alone (family combine); FlashAttention-2's and cuDNN's
                                    from their profiled durations at the fit head configs (regimes_grids_*.csv)
  cast / copy_strided / reduce      single eager kernels (family ew_kernel); checked on what is built of them and
                                    never fitted: HF RMSNorm / rotary modules, eager fp8 quantization, fp8-KV
                                    dequantization, the HF step
  gemm fp8                          fitted on the qkv / gate_up / down shapes; held out: o (4096 x 4096) and
                                    70b_tp8_qkv (8192 x 1280)
  torch.topk                        kind topk (its one owner): fitted on rows 1 / 8 / 32 / 512;
                                    held out: rows 2 and 128; measure.py's topk rows are an independent check
  indexer                           fitted on 16 and 64 heads (fp8 keys); held out: 32 heads
  hf_step                           never fitted: the HF Llama step is priced from the other kinds' terms
Parameters per attention family: memory efficiency, iteration time of one CTA's K/V tile (`iter_us`), per-wave CTA
fixed time (`cta_fixed_us`), per-kernel fixed time; compute efficiency from the verification rows.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from hwmodels import datafiles as DF
from hwmodels.errors import SparsesimError
from hwmodels.roofline import price
from hwmodels.spec import Efficiency, HardwareSpec
from simulator.calibration import checks as C
from simulator.calibration.checks import efficiency_with
from simulator.combo import AttentionLayout, TargetFacts
from simulator.ops import MaskedBuilder
from simulator.strategies.base import StepShape
from simulator.strategies.dense import DenseAttention

#: measured kernel -> dense `kernel` family
KERNEL_FAMILY = {"cudnn": "cudnn", "flash": "fa2", "efficient": "memeff", "triton_splitkv": "triton_splitkv",
                 "flex": "flex"}
HELD_OUT_HEADS = {(16, 2), (64, 8)}
REQUIRED = ("device", "family", "kernel", "timing", "median_us")
NUMERIC = ("batch", "heads", "kv_heads", "head_dim", "context", "q_rows", "m", "n", "k", "rows", "row_len",
           "topk_k", "splits", "n_kernels", "calls", "pass")
#: the columns that name one measured shape (rows of several passes are merged: their median)
SHAPE_KEYS = ("family", "corner", "kernel", "timing", "dtype", "batch", "heads", "kv_heads", "head_dim", "context",
              "q_rows", "m", "n", "k", "rows", "row_len", "topk_k", "splits", "note")


def load(path: str | Path) -> pd.DataFrame:
    """Read a measure_regimes.py CSV strictly; rows without a time (unavailable kernels, with a note) dropped; a
    shape measured in several passes (column `pass`, script version 3) becomes one row: the median of its passes."""
    df, untimed = C.read_csv(path, REQUIRED, "a measure_regimes.py CSV")
    df = C.numeric(df, NUMERIC)
    for c in ("family", "kernel", "timing", "corner", "dtype", "note"):
        if c in df.columns:
            df[c] = df[c].astype(object).fillna("").astype(str)
        else:
            df[c] = ""
    if "pass" in df.columns and (df["pass"].fillna(0) > 0).any():
        keys = [c for c in SHAPE_KEYS if c in df.columns]
        med = df.groupby(keys, dropna=False, sort=False)["median_us"].transform("median")
        n = df.groupby(keys, dropna=False, sort=False)["median_us"].transform("size")
        df = df.assign(median_us=med, passes=n)
        df = df[df["pass"].fillna(0) == 0].reset_index(drop=True)
    df.attrs["file"] = str(path)
    df.attrs["untimed"] = untimed
    return with_repeat_kv_grid(with_in_step_quant(with_remeasured_hf_step(df, path), path), path)


#: measure_graph_chains.py (v2) re-timed the HF step after spins of 150, 2,000 and 20,000 us. The host spends 0.8-1.5 ms
#: in cudaGraphLaunch for the step's ~1,750-node graph, so after measure_regimes.py's 150-us spin the start event fires
#: before the graph reaches the GPU and up to 1.3 ms of host time lands in the sample (B 1, T 2048: 11.70 ms after
#: 150 us, 10.43 / 10.46 ms after 2 / 20 ms); graphs of <= 1,024 small-kernel nodes show no such dependence (v3
#: --spin-check: identical to 0.1 %). The spins of at least HF_MIN_SPIN_US bracket device time only; their mean is used.
HF_MIN_SPIN_US = 2000.0


def remeasured_hf_step(path: str | Path) -> pd.DataFrame | None:
    """(batch, context, median_us, source) of the HF step re-timed by measure_graph_chains.py beside a
    measure_regimes.py CSV of the same device (graph_chains_<device-slug>_*.csv), or None."""
    import re

    rows = []
    for f in _chains_beside(path):
        g = pd.read_csv(f)
        for chain, us in zip(g["chain"].astype(str), pd.to_numeric(g["graph_us"], errors="coerce")):
            c = re.fullmatch(r"hf_llama8b_B(\d+)_T(\d+):spin(\d+)", chain)
            if c and int(c.group(3)) >= HF_MIN_SPIN_US and np.isfinite(us):
                rows.append((float(c.group(1)), float(c.group(2)), float(us), f.name))
    if not rows:
        return None
    d = pd.DataFrame(rows, columns=["batch", "context", "us", "source"])
    return d.groupby(["batch", "context"], as_index=False).agg(median_us=("us", "mean"),
                                                               source=("source", lambda x: ", ".join(sorted(set(x)))))


def with_remeasured_hf_step(df: pd.DataFrame, path: str | Path) -> pd.DataFrame:
    """The HF step's graph rows timed again where measure_graph_chains.py re-timed them (remeasured_hf_step); the
    replaced times are kept in `median_us_v4` and df.attrs['hf_step_remeasured'] names the file."""
    r = remeasured_hf_step(path)
    sel = _sel(df, "hf_step", "hf_llama")
    if r is None or not sel.any():
        return df
    df = _replace_times(df, sel, r, ("batch", "context"), "median_us_v4",
                        f"re-timed after a >= {HF_MIN_SPIN_US:g}-us spin ({r['source'].iloc[0]})")
    df.attrs["hf_step_remeasured"] = str(r["source"].iloc[0])
    return df


def _replace_times(df: pd.DataFrame, sel: np.ndarray, r: pd.DataFrame, cols: tuple[str, str], keep: str,
                   note: str) -> pd.DataFrame:
    """A copy of `df` whose `sel` rows take r's median_us where r has their `cols` values; the replaced times go to
    column `keep` (NaN elsewhere) and `note` is appended to the row's note."""
    df = df.copy()
    df[keep] = np.nan
    key = dict(zip(zip(r[cols[0]], r[cols[1]]), r["median_us"]))
    for i in np.flatnonzero(sel):
        k = (float(df.at[i, cols[0]]), float(df.at[i, cols[1]]))
        if k in key:
            df.at[i, keep] = df.at[i, "median_us"]
            df.at[i, "median_us"] = key[k]
            df.at[i, "note"] = (str(df.at[i, "note"]) + f"; {note}").lstrip("; ")
    return df


def _chains_beside(path: str | Path) -> list[Path]:
    """measure_graph_chains.py CSVs of the same device beside a measure_regimes.py CSV (graph_chains_<slug>_*.csv)."""
    import re

    p = Path(path)
    m = re.match(r"regimes_(.+?)_(\d{4}-\d{2}-\d{2})", p.name)
    return sorted(DF.glob(p.parent, f"graph_chains_{m.group(1)}_*.csv")) if m else []


def in_step_quant(path: str | Path) -> pd.DataFrame | None:
    """(k, m, median_us, source) of the eager fp8 quantization timed where a decode step runs it (measure_graph_chains.py
    v5 quant_step rows: after a GEMM that sweeps the L2, minus that GEMM alone), or None."""
    import re

    rows = []
    for f in _chains_beside(path):
        g = pd.read_csv(f)
        for chain, us in zip(g["chain"].astype(str), pd.to_numeric(g["graph_us"], errors="coerce")):
            c = re.fullmatch(r"quant_step:K(\d+):M(\d+)", chain)
            if c and np.isfinite(us):
                rows.append((float(c.group(1)), float(c.group(2)), float(us), f.name))
    return pd.DataFrame(rows, columns=["k", "m", "median_us", "source"]) if rows else None


def with_in_step_quant(df: pd.DataFrame, path: str | Path) -> pd.DataFrame:
    """The eager quantization rows (gemm / quant_eager) timed in a step's context where measure_graph_chains.py v5
    measured their (K, M): measure_regimes.py timed the 8 kernels as a graph of nothing else, where their code stays
    warm (graph chains v1 / v4 traces: 0.26-0.29 us between kernels, against 0.42-0.45 us once a kernel streaming
    >= 32 MiB runs between two repeats, as a step's weights do), while the kernel model prices every kernel as a step
    runs it. The micro-benchmark times are kept in `median_us_warm` (benchmarks/calibration_accuracy.py reports
    them too); df.attrs['quant_in_step'] names the file. Rows of a K not re-timed keep their micro-benchmark time."""
    r = in_step_quant(path)
    sel = _sel(df, "gemm", "quant_eager")
    if r is None or not sel.any():
        return df
    df = _replace_times(df, sel, r, ("k", "m"), "median_us_warm", f"in-step time ({r['source'].iloc[0]})")
    df.attrs["quant_in_step"] = str(r["source"].iloc[0])
    return df


def repeat_kv_grid(path: str | Path) -> pd.DataFrame | None:
    """transformers' repeat_kv timed alone by measure_graph_chains.py beside a measure_regimes.py CSV: v6 grid rows
    rkv:B:T:kv:rep:hd:hf (the `copy` rows, the same kernel into buffers at other byte offsets, were a placement check:
    within 0.1 %) and v5 rows repeat_kv:B:T (8 KV heads, 4 copies, head dim 128); their tensors hold T + 16 tokens
    (the HF step's StaticCache). One row per shape: the mean of its repeats. None when there are none."""
    import re

    rows = []
    for f in _chains_beside(path):
        g = pd.read_csv(f)
        for chain, us in zip(g["chain"].astype(str), pd.to_numeric(g["graph_us"], errors="coerce")):
            c = re.fullmatch(r"rkv:B(\d+):T(\d+):kv(\d+):rep(\d+):hd(\d+):hf:off0-0", chain)
            v = c.groups() if c else None
            c5 = re.fullmatch(r"repeat_kv:B(\d+):T(\d+)", chain)
            if c5:
                v = (c5.group(1), c5.group(2), "8", "4", "128")
            if v is not None and np.isfinite(us):
                B, T, kv, rep, hd = map(float, v)
                rows.append((B, T + 16.0, kv * rep, kv, hd, T, float(us), f.name))
    if not rows:
        return None
    d = pd.DataFrame(rows, columns=["batch", "context", "heads", "kv_heads", "head_dim", "tokens", "us", "source"])
    return d.groupby(["batch", "context", "heads", "kv_heads", "head_dim", "tokens"], as_index=False).agg(
        median_us=("us", "mean"), repeats=("us", "size"), source=("source", lambda x: ", ".join(sorted(set(x)))))


def with_repeat_kv_grid(df: pd.DataFrame, path: str | Path) -> pd.DataFrame:
    """`df` with the repeat_kv grid rows (repeat_kv_grid) appended as graph-timed ew_kernel rows, corner 'grid', or
    'grid_hf' for the shapes whose (B, T) is one of the HF step's (held out: the step prices its repeat_kv there);
    df.attrs['repeat_kv_grid'] names the files."""
    r = repeat_kv_grid(path)
    if r is None:
        return df
    hf = {(float(b), float(t)) for b, t in zip(df.loc[_sel(df, "hf_step", "hf_llama"), "batch"],
                                               df.loc[_sel(df, "hf_step", "hf_llama"), "context"])}
    add = pd.DataFrame({"family": "ew_kernel", "kernel": "repeat_kv", "timing": "graph", "dtype": "bf16",
                        "corner": ["grid_hf" if (b, t) in hf else "grid" for b, t in zip(r["batch"], r["tokens"])],
                        "batch": r["batch"], "heads": r["heads"], "kv_heads": r["kv_heads"],
                        "head_dim": r["head_dim"], "context": r["context"], "median_us": r["median_us"],
                        "repeats": r["repeats"], "n_kernels": 1.0,
                        "note": "measure_graph_chains.py: " + r["source"]})
    out = pd.concat([df, add], ignore_index=True)
    for c in ("family", "kernel", "timing", "corner", "dtype", "note"):
        out[c] = out[c].astype(object).fillna("").astype(str)
    out.attrs.update(df.attrs)
    out.attrs["repeat_kv_grid"] = ", ".join(sorted({f for src in r["source"] for f in src.split(", ")}))
    return out


# ---------------------------------------------------------------------------------------------------
# resident CTAs per SM, from the launch-grid profile (measured, not fitted)
# ---------------------------------------------------------------------------------------------------
#: CUDA's per-SM limits of compute capability 9.0 (CUDA C++ Programming Guide, "Technical Specifications per
#: Compute Capability"): 64 K 32-bit registers, allocated per warp in units of 256; 2048 threads; 32 blocks; 1 KB
#: of shared memory reserved per block. Shared memory per SM: the spec's smem_per_unit_kib (228 KB on H100 / H200).
REGS_PER_SM, REG_UNIT, THREADS_PER_SM, BLOCKS_PER_SM, SMEM_RESERVED = 65536, 256, 2048, 32, 1024


def grids_for(path: str | Path) -> Path | None:
    """The launch-grid profile written beside a measure_regimes.py CSV (regimes_grids_<rest of its name>)."""
    p = Path(path)
    g = DF.resolve(p.with_name(DF.name(p).replace("regimes_", "regimes_grids_", 1)))
    return g if g.is_file() and DF.name(g) != DF.name(p) else None


def load_grids(path: str | Path) -> pd.DataFrame:
    g, _ = C.read_csv(path, ("family", "kernel", "kernel_name", "dur_us", "regs", "smem", "block_x"),
                      "a measure_regimes.py launch-grid CSV", time_col="dur_us")
    g = C.numeric(g, ("batch", "heads", "kv_heads", "head_dim", "context", "q_rows", "m", "n", "k", "regs", "smem",
                      "block_x", "block_y", "block_z", "grid_x", "grid_y", "grid_z"))
    for c in ("family", "kernel", "kernel_name", "corner"):
        g[c] = g[c].fillna("").astype(str) if c in g.columns else ""
    return g


def occupancy(regs, smem, threads, smem_per_sm: float) -> np.ndarray:
    """Resident CTAs per SM of a kernel: the least of the register, shared-memory, thread and block limits."""
    regs, smem, threads = (np.asarray(x, dtype=np.float64) for x in (regs, smem, threads))
    warps = np.ceil(threads / 32.0)
    per_warp = np.ceil(np.maximum(regs, 1.0) * 32.0 / REG_UNIT) * REG_UNIT
    by_regs = np.floor(REGS_PER_SM / (per_warp * warps))
    by_smem = np.floor(smem_per_sm / (smem + SMEM_RESERVED))
    by_threads = np.floor(THREADS_PER_SM / threads)
    return np.minimum(np.minimum(by_regs, by_smem), np.minimum(by_threads, BLOCKS_PER_SM))


def _grid_kind(g: pd.DataFrame) -> np.ndarray:
    """The op kind whose kernel each launch-grid record is ('' for the others)."""
    name, fam, kern = g["kernel_name"].to_numpy(str), g["family"].to_numpy(str), g["kernel"].to_numpy(str)
    q1 = g["q_rows"].fillna(1).to_numpy() <= 1
    has = lambda t: np.char.find(name.astype(str), t) >= 0  # noqa: E731
    dec = fam == "decode_grid"
    out = np.full(len(g), "", dtype=object)
    out[dec & (kern == "cudnn") & has("cudnn_generated") & q1] = "attn_cudnn"
    out[dec & (kern == "cudnn") & has("cudnn_generated") & ~q1] = "attn_cudnn_rows"
    out[dec & (kern == "cudnn") & has("lean_reduction")] = "attn_combine_cudnn"
    out[dec & (kern == "flash") & (has("flash_fwd_splitkv_kernel") | has("flash_fwd_kernel"))] = "attn_fa2"
    out[dec & (kern == "flash") & has("splitkv_combine")] = "attn_combine_fa2"
    out[dec & (kern == "triton_splitkv") & has("_splitkv_fwd") & q1] = "attn_triton"
    out[(fam == "fp8kv_grid") & (kern == "triton_splitkv") & has("_splitkv_fwd")] = "attn_triton_fp8kv"   # v4
    out[dec & (kern == "triton_splitkv") & has("_splitkv_combine")] = "attn_combine_triton"
    out[dec & (kern == "efficient") & has("fmha_cutlassF")] = "attn_memeff"
    out[(fam == "gemm_grid") & (kern == "fp8_rowwise")] = "gemm_fp8_rowwise"
    out[(fam == "gemm_grid") & (kern == "quant_triton") & has("_quant_rowwise")] = "quant"   # v4
    out[(fam == "indexer_grid") & has("_indexer_fwd")] = "indexer"                           # v4
    out[(fam == "reduce_grid") & has("reduce_kernel")] = "reduce"                            # v4
    out[(fam == "reduce_grid") & has("reduce_kernel") & has("MaxNan")] = "reduce_max"        # v4
    return out


def measured_slots(grids: pd.DataFrame, hw: HardwareSpec) -> dict[str, tuple[float, str]]:
    """op kind -> (resident CTAs per SM, how it was found): the most common occupancy over the kind's records."""
    smem = float(hw.smem_per_unit_bytes or 228 * 1024)
    kinds = _grid_kind(grids)
    threads = grids["block_x"].fillna(1).to_numpy() * grids["block_y"].fillna(1).to_numpy() * \
        grids["block_z"].fillna(1).to_numpy()
    occ = occupancy(grids["regs"].fillna(0), grids["smem"].fillna(0), threads, smem)
    out = {}
    for k in sorted(set(kinds) - {""}):
        m = kinds == k
        vals, counts = np.unique(occ[m], return_counts=True)
        v = float(vals[np.argmax(counts)])
        r = grids[m].iloc[int(np.flatnonzero(occ[m] == v)[0])]
        out[k] = (v, f"{int(m.sum())} launches; {int(r['regs'])} registers x {int(threads[m][0])} threads, "
                     f"{int(r['smem'])} B shared memory -> {v:g} per SM")
    return out


def attention_ops(b, df: pd.DataFrame, sel: np.ndarray, family: str | None, sms: int) -> None:
    """Decode / verification attention rows `sel` through `attention: dense` (`kernel: family`, or the
    generic model when family is None), one attention layout per (heads, kv heads, head dim, kv bytes) group."""
    if not sel.any():
        return
    kern = DenseAttention(kernel=family or "generic", gqa_packing="decode_only")
    kvb = np.where(df["dtype"].to_numpy() == "fp8", 1.0, 2.0)
    keys = sorted({(h, k, d, kb) for h, k, d, kb, s in zip(df["heads"], df["kv_heads"], df["head_dim"], kvb, sel)
                   if s})
    for h, k, d, kb in keys:
        g = sel & (df["heads"].to_numpy() == h) & (df["kv_heads"].to_numpy() == k) & (df["head_dim"].to_numpy() == d) \
            & (kvb == kb)
        shape = StepShape(batch=np.where(g, df["batch"], 1.0), query_rows=np.where(g, df["q_rows"].fillna(1), 1.0),
                          context=np.where(g, df["context"], 1.0), layers=1.0)
        lay = AttentionLayout.one_device(float(h), float(k), float(d), float(kb),
                                         TargetFacts(architecture="hopper", sm_count=sms, l2_bytes=None))
        kern.layout_decode_ops(MaskedBuilder(b, g), lay, shape)


def predict_us(ops, hw: HardwareSpec, eff: Efficiency) -> np.ndarray:
    t = price(ops, hw.with_efficiency(eff), "graph")
    return np.bincount(ops.setting, weights=t, minlength=ops.n_settings) * 1e6


def family_rows(df: pd.DataFrame) -> dict[str, np.ndarray]:
    fam, kern, timing = df["family"].to_numpy(), df["kernel"].to_numpy(), df["timing"].to_numpy()
    graph = timing == "graph"
    out = {}
    for k, f in KERNEL_FAMILY.items():
        out[f"decode:{f}"] = graph & (fam == "decode_attn") & (kern == k)
        out[f"verify:{f}"] = graph & (fam == "verify_attn") & (kern == k)
    out["fp8kv:triton_splitkv"] = graph & (fam == "fp8kv_attn") & (kern == "triton_splitkv")
    out["split_sweep"] = graph & (fam == "split_sweep") & (kern == "triton_splitkv")
    out["combine"] = graph & (fam == "combine") & (kern == "triton_combine")
    return out


def _heads_out(df: pd.DataFrame) -> np.ndarray:
    hk = zip(df["heads"].fillna(0).astype(int), df["kv_heads"].fillna(0).astype(int))
    return np.array([x in HELD_OUT_HEADS for x in hk], dtype=bool)


def fp8kv_fit_rows(df: pd.DataFrame) -> np.ndarray:
    """Our Triton kernel on fp8 K/V at the fit head configs: the fit rows of kind attn_triton_fp8kv."""
    return (_sel(df, "fp8kv_attn", "triton_splitkv") & (df["dtype"].to_numpy() == "fp8")) & ~_heads_out(df)


def held_out(df: pd.DataFrame) -> np.ndarray:
    """Attention rows of the held-out head configs (every corner), verification rows of 64 heads, fp8-KV rows (but
    those attn_triton_fp8kv is fitted on)."""
    fam = df["family"].to_numpy()
    att = np.isin(fam, ["decode_attn", "verify_attn", "split_sweep"])
    verify_out = (fam == "verify_attn") & (df["heads"].to_numpy() == 64)
    return (att & _heads_out(df)) | verify_out | ((fam == "fp8kv_attn") & ~fp8kv_fit_rows(df))


def _sel(df, fam, kern=None, timing="graph"):
    m = (df["family"].to_numpy() == fam) & (df["timing"].to_numpy() == timing)
    if kern is not None:
        m &= df["kernel"].to_numpy() == kern
    return m


def forced_split_ops(b, df: pd.DataFrame, sel: np.ndarray) -> None:
    """Our Triton split-KV kernel with its split count forced (family split_sweep: `splits` as launched): the
    attention op as dense.py builds it for triton_splitkv, with S given instead of FA2's rule."""
    from simulator.kernels.decode_attention import FAMILIES, combine_layout
    from simulator.precision import ACT_BYTES

    if not sel.any():
        return
    B, Hq, Hkv, T, d, S = (np.where(sel, df[c].fillna(1).to_numpy(float), 1.0)
                           for c in ("batch", "heads", "kv_heads", "context", "head_dim", "splits"))
    kind, tile, _ = FAMILIES["triton_splitkv"]
    out = B * Hq * d
    split = S > 1
    partials = S * (out + B * Hq) * 4.0
    b.add("attention", kind, flops=4.0 * B * Hq * T * d, bytes_read=B * T * 2.0 * Hkv * d * 2.0 + S * out * ACT_BYTES,
          bytes_written=np.where(split, partials, out * ACT_BYTES), parallel_units=B * Hkv * np.ceil(Hq / Hkv / 64.0) * S,
          serial_iters=np.ceil(np.ceil(T / S) / tile), dtype="bf16", where=sel)
    ctas, iters = combine_layout("triton_splitkv", B, 1.0, Hq, S)
    b.add("attention_combine", "attn_combine_triton", flops=3.0 * out * S, bytes_read=partials,
          bytes_written=out * ACT_BYTES, parallel_units=ctas, serial_iters=iters, dtype="fp32", where=sel & split)


def combine_ops(b, df: pd.DataFrame, sel: np.ndarray) -> None:
    """Our Triton combine kernel alone (family combine: `batch` = B x Hq programs merging `splits` partials)."""
    from simulator.kernels.decode_attention import combine_layout

    if not sel.any():
        return
    BH, S, d = (np.where(sel, df[c].fillna(1).to_numpy(float), 1.0) for c in ("batch", "splits", "head_dim"))
    ctas, iters = combine_layout("triton_splitkv", BH, 1.0, 1.0, S)
    b.add("attention_combine", "attn_combine_triton", flops=3.0 * BH * d * S, bytes_read=S * BH * (d + 1.0) * 4.0,
          bytes_written=BH * d * 2.0, parallel_units=ctas, serial_iters=iters, dtype="fp32", where=sel)


#: ew_kernel -> (op kind, bytes read / element, bytes written / element, flop-equivalents / element); measured on
#: [M, 4096] (repeat_kv: per element written); bcast_weight_bf16 at one row is a same-shape product (vectorized)
EW_KERNELS = {"vec_mul_bf16": ("elementwise", 4, 2, 1), "cast_bf16_fp32": ("cast", 2, 4, 1),
              "cast_fp8_bf16": ("cast", 1, 2, 1), "cast_fp32_bf16": ("elementwise", 4, 2, 1),
              "cast_bf16_fp8": ("elementwise", 2, 1, 1), "cast_fp32_fp8": ("elementwise", 4, 1, 1),
              "bcast_rowscale_bf16_fp32": ("cast", 2, 4, 1.5), "bcast_rowscale_fp32": ("copy_strided", 4, 4, 1),
              "bcast_weight_bf16": ("copy_strided", 2, 2, 1), "reduce_amax_bf16": ("reduce_max", 2, 0, 1),
              "reduce_mean_fp32": ("reduce", 4, 0, 1), "neg_slice_bf16": ("copy_strided", 1, 1, 0.5),
              "cat_halves_bf16": ("copy_strided", 2, 2, 1), "repeat_kv": ("copy_broadcast", 0.5, 2, 1)}


#: measure_regimes.py (ew_kernel, reduce_grid): an input set of at most this many bytes is not rotated (every call
#: reads the same one, from L2); larger ones rotate over >= 256 MiB (from HBM)
ROTATE_ABOVE = float(1 << 20)


def ew_ops(b, df: pd.DataFrame, sel: np.ndarray, sms: int = 132) -> None:
    """Single eager kernels (family ew_kernel) as simulator.layers prices them (EW_KERNELS; the reductions through
    simulator.layers.torch_row_reduce: reduce_kernel's launch configuration, L2-resident inputs of <= 1 MiB)."""
    from simulator.layers import repeat_kv_ops, torch_row_reduce

    kern = df["kernel"].to_numpy()
    M, K = df["m"].fillna(1).to_numpy(float), df["n"].fillna(1).to_numpy(float)
    e = M * K
    rkv = sel & (kern == "repeat_kv")
    if rkv.any():   # one broadcast copy (simulator.layers.repeat_kv_ops), as the HF step prices it
        B, Hq, Hkv, T, d = (df[c].fillna(1).to_numpy(float) for c in ("batch", "heads", "kv_heads", "context",
                                                                       "head_dim"))
        repeat_kv_ops(b, "ew", B, T, Hq, np.where(rkv, Hkv, Hq), d, 2.0, 1.0, where=rkv, tensors=1.0)
    for name, (kind, r, w, f) in EW_KERNELS.items():
        if name == "repeat_kv":
            continue
        m = sel & (kern == name)
        if kind in ("reduce", "reduce_max"):   # the L2-resident sizes (one input set) read their input from L2
            for l2 in (False, True):
                mm = m & ((M * K * r <= ROTATE_ABOVE) == l2)
                if mm.any():
                    torch_row_reduce(MaskedBuilder(b, mm), "ew", np.where(mm, M, 1.0), K, float(r), 1.0, sms,
                                     l2_input=l2, flops_per_elem=f, kind=kind)
            continue
        if name == "bcast_weight_bf16":
            b.add("ew", "elementwise", flops=f * e, bytes_read=r * e, bytes_written=w * e, dtype="fp32", where=m & (M <= 1))
            m = m & (M > 1)
        if m.any():
            b.add("ew", kind, flops=f * e, bytes_read=r * e, bytes_written=np.maximum(w * e, M * 4.0), dtype="fp32",
                  where=m)


def reduce_grid_ops(b, df: pd.DataFrame, sel: np.ndarray, sms: int = 132) -> None:
    """Row reductions of the reduce_grid family (v4): x.amax(-1) on bf16 (kind reduce_max), x.mean(-1) on fp32 (kind
    reduce), over [rows, row_len] (simulator.layers.torch_row_reduce); inputs of <= 1 MiB are L2-resident (not
    rotated)."""
    from simulator.layers import torch_row_reduce

    if not sel.any():
        return
    R, L = (df[c].fillna(1).to_numpy(float) for c in ("rows", "row_len"))
    esz = np.where(df["dtype"].to_numpy() == "bf16", 2.0, 4.0)
    amax = df["kernel"].to_numpy() == "amax_bf16"
    for e in (2.0, 4.0):
        for l2 in (False, True):
            for mx in (False, True):
                m = sel & (esz == e) & ((R * L * e <= ROTATE_ABOVE) == l2) & (amax == mx)
                if m.any():
                    torch_row_reduce(MaskedBuilder(b, m), "reduce", np.where(m, R, 1.0), np.where(m, L, 1.0), e, 1.0,
                                     sms, l2_input=l2, kind="reduce_max" if mx else "reduce")


def build(df: pd.DataFrame, model: str = "after", sms: int = 132):
    """The Op table (one setting per row) of this module's kernel model (`model` is kept for callers; only
    'after' exists: the first kernel model's accuracy is a stored table, regimes_round1_accuracy_*.csv, which
    benchmarks/calibration_accuracy.py prints)."""
    from simulator.layers import act_quant, fp8_gemm, hf_rmsnorm_ops
    from simulator.ops import OpBuilder
    from simulator.precision import ACT_BYTES, FP8_ACT_QUANT_KERNELS

    n = len(df)
    b = OpBuilder(n)
    fam = df["family"].to_numpy()
    kern = df["kernel"].to_numpy()
    graph = df["timing"].to_numpy() == "graph"
    # --- attention ---------------------------------------------------------------------------------------
    for k, family in KERNEL_FAMILY.items():
        sel = (_sel(df, "decode_attn", k) | _sel(df, "verify_attn", k)
               | (_sel(df, "fp8kv_attn", k) if k == "triton_splitkv" else False))
        attention_ops(b, df, sel, family, sms)
    forced_split_ops(b, df, _sel(df, "split_sweep", "triton_splitkv"))
    combine_ops(b, df, _sel(df, "combine", "triton_combine"))
    deq = _sel(df, "fp8kv_attn", "dequant+cudnn")
    if deq.any():
        # per tensor (K, V): k8.to(bf16) (an up-cast: kind cast), then * scale (vectorized, reading what the cast
        # just wrote: from L2 while it fits), then SDPA cuDNN on the bf16 cache
        e = np.where(deq, df["batch"] * df["kv_heads"] * df["context"] * df["head_dim"], 0.0)
        b.add("kv_dequant_cast", "cast", flops=e, bytes_read=e, bytes_written=e * 2, count=2.0, dtype="fp32", where=deq)
        b.add("kv_dequant_scale", "elementwise", flops=e, bytes_read=e * 2, bytes_written=e * 2, reread_bytes=e * 2,
              working_set=e * 2, count=2.0, dtype="fp32", where=deq)
        attention_ops(b, df.assign(dtype=np.where(deq, "bf16", df["dtype"])), deq, "cudnn", sms)
    # --- GEMMs (simulator.layers: gemm, act_quant, fp8_gemm) ----------------------------------------------
    M, N, K = (df[c].fillna(1).to_numpy(float) for c in ("m", "n", "k"))
    g = fam == "gemm"
    sel = g & (kern == "bf16") & graph
    b.add("gemm", "gemm", flops=2 * M * N * K, bytes_read=K * N * 2 + M * K * ACT_BYTES, bytes_written=M * N * 2,
          dtype="bf16", where=sel)
    fp8_paths = {"fp8_tensorwise": ("gemm_fp8", 0), "fp8_rowwise": ("gemm_fp8_rowwise", 0),
                 "quant+fp8_rowwise_eager": ("gemm_fp8_rowwise", FP8_ACT_QUANT_KERNELS["unfused"]),
                 "quant+fp8_rowwise_triton": ("gemm_fp8_rowwise", FP8_ACT_QUANT_KERNELS["fused"]),
                 "quant_eager": (None, FP8_ACT_QUANT_KERNELS["unfused"]),
                 "quant_triton": (None, FP8_ACT_QUANT_KERNELS["fused"])}
    # v4: small-M GEMMs over more projection shapes (F.linear for bf16: the same op accounting)
    gs = fam == "gemm_small"
    sel = gs & (kern == "bf16_linear") & graph
    b.add("gemm", "gemm", flops=2 * M * N * K, bytes_read=K * N * 2 + M * K * ACT_BYTES, bytes_written=M * N * 2,
          dtype="bf16", where=sel)
    for name, kind in (("fp8_tensorwise", "gemm_fp8"), ("fp8_rowwise", "gemm_fp8_rowwise")):
        sel = gs & (kern == name) & graph
        if sel.any():
            fp8_gemm(MaskedBuilder(b, sel), "gemm", M, K, N, 1.0, 1.0, kind=kind)
    for name, (kind, quant) in fp8_paths.items():
        sel = g & (kern == name) & graph
        if not sel.any():
            continue
        if quant:
            act_quant(MaskedBuilder(b, sel), M, K, 1.0, kernels=quant, sms=sms)
        if kind:
            fp8_gemm(MaskedBuilder(b, sel), "gemm", M, K, N, 1.0, 1.0, kind=kind)
    # --- torch.topk ---------------------------------------------------------------------------------------
    sel = _sel(df, "topk")
    if sel.any():
        from simulator.strategies.topk import torch_topk_dispatch_ops

        rows, L, k = (df[c].fillna(1).to_numpy(float) for c in ("rows", "row_len", "topk_k"))
        torch_topk_dispatch_ops(b, rows, L, 4.0, k, sel)
    # --- indexer: our Triton kernel computes in bf16 (fp8 keys are converted in registers), keys of 1 or 2 B ---
    sel = _sel(df, "indexer", "triton_indexer")
    if sel.any():
        from simulator.strategies.dsa import add_indexer_logits

        R, Nk, H, D = (df[c].fillna(1).to_numpy(float) for c in ("rows", "row_len", "heads", "head_dim"))
        kb = np.where(df["dtype"].to_numpy() == "fp8", 1.0, 2.0) * D
        add_indexer_logits(MaskedBuilder(b, sel), R, 1.0, Nk, H, D, "bf16", 1.0, key_bytes=kb)
    # --- single eager kernels and HF modules ---------------------------------------------------------------
    ew_ops(b, df, _sel(df, "ew_kernel"), sms)
    reduce_grid_ops(b, df, _sel(df, "reduce_grid"), sms)
    B_, H_ = df["batch"].fillna(1).to_numpy(float), df["n"].fillna(1).to_numpy(float)
    sel = _sel(df, "elementwise", "hf_rmsnorm")
    if sel.any():
        hf_rmsnorm_ops(MaskedBuilder(b, sel), "hf_rmsnorm", B_, H_, 1.0, sms=sms)
    sel = _sel(df, "elementwise", "F.rms_norm")
    b.add("rms_norm", "elementwise", flops=4 * B_ * H_, bytes_read=2 * B_ * H_, bytes_written=2 * B_ * H_, dtype="fp32",
          where=sel)
    sel = _sel(df, "elementwise", "hf_rope")
    if sel.any():
        hf_rope_module_ops(MaskedBuilder(b, sel), B_, df["heads"].fillna(1).to_numpy(float),
                           df["kv_heads"].fillna(1).to_numpy(float), df["head_dim"].fillna(1).to_numpy(float))
    return b.build() if b._blocks else None


def hf_rope_module_ops(b, rows, hq, hkv, d) -> None:
    """apply_rotary_pos_emb alone (family elementwise, hf_rope: 10 kernels, no cache update): simulator.layers
    hf_rope_ops without its two index_copy kernels."""
    for heads in (hq, hkv):
        e = rows * heads * d
        b.add("rope", "copy_strided", flops=e, bytes_read=2.0 * e, bytes_written=2.0 * e, dtype="fp32", count=2.0)
        b.add("rope", "copy_strided", flops=e / 2, bytes_read=e, bytes_written=e, dtype="fp32")
        b.add("rope", "copy_strided", flops=e, bytes_read=2.0 * e, bytes_written=2.0 * e, dtype="fp32")
        b.add("rope", "elementwise", flops=e, bytes_read=4.0 * e, bytes_written=2.0 * e, dtype="fp32")


def grid_combine_rows(grids: pd.DataFrame) -> pd.DataFrame:
    """The FlashAttention-2 and cuDNN combine kernels' profiled durations (launch-grid CSV) with their split count
    (the main kernel's grid: FA2 gridDim.y, cuDNN gridDim.x, at the same label)."""
    kinds = _grid_kind(grids)
    g = grids.assign(kind=kinds)
    main = g[np.isin(kinds, ["attn_fa2", "attn_cudnn"])]
    split = {lab: (r["grid_y"] if r["kind"] == "attn_fa2" else r["grid_x"]) for lab, r in
             zip(main["label"], main.to_dict("records"))} if "label" in g.columns else {}
    c = g[np.isin(kinds, ["attn_combine_fa2", "attn_combine_cudnn"])].copy()
    c["splits"] = [float(split.get(lab, np.nan)) for lab in c["label"]]
    return c[np.isfinite(c["splits"])].reset_index(drop=True)


def grid_combine_ops(c: pd.DataFrame):
    """Op table of grid_combine_rows (one setting per row), as dense.py adds the combine kernel."""
    from simulator.kernels.decode_attention import combine_layout
    from simulator.ops import OpBuilder

    b = OpBuilder(len(c))
    B, q, Hq, S, d = (c[x].fillna(1).to_numpy(float) for x in ("batch", "q_rows", "heads", "splits", "head_dim"))
    out = B * q * Hq * d
    for kind, fam in (("attn_combine_fa2", "fa2"), ("attn_combine_cudnn", "cudnn")):
        m = c["kind"].to_numpy() == kind
        ctas, iters = combine_layout(fam, B, q, Hq, S)
        b.add("attention_combine", kind, flops=3.0 * out * S, bytes_read=S * (out + B * q * Hq) * 4.0,
              bytes_written=out * 2.0, parallel_units=ctas, serial_iters=iters, dtype="fp32", where=m)
    return b.build()


def hf_step_ms(df: pd.DataFrame, hw: HardwareSpec, model: str = "after") -> np.ndarray:
    """The HF LlamaForCausalLM step (graph rows) priced by simulator.pricing with `kernels: hf` and the cuDNN decode
    kernel over HF's StaticCache (max_cache_len = T + 16 tokens, repeat_kv: the mask stops SDPA's native GQA)."""
    from simulator.combo import make_combo
    from simulator.pricing import decode_ops

    sel = _sel(df, "hf_step", "hf_llama")
    out = np.full(len(df), np.nan)
    if not sel.any():
        return out
    combo = make_combo(hw, "Llama-3.1-8B", kv_dtype="bf16", weight_dtype="bf16", launch="graph", kernels="hf",
                       attention={"dense": {"gqa_expand": "repeat_kv", "kernel": "cudnn"}})
    B = df["batch"].to_numpy(float)[sel]
    T = df["context"].to_numpy(float)[sel] + 16.0
    ops, _ = decode_ops(combo, B, T)
    t = price(ops, hw, "graph")
    # HF's forward returns logits: no sampling kernel
    t = np.where(np.asarray(ops.names, dtype=object)[ops.name_id] == "sampling", 0.0, t)
    out[sel] = np.bincount(ops.setting, weights=t, minlength=len(B)) * 1e3
    return out


# ---------------------------------------------------------------------------------------------------
# fitting
# ---------------------------------------------------------------------------------------------------
def _wave_params(kind: str, mem_lo: float = 0.7) -> list[tuple]:
    """(name, start, low, high) of a wave-model kind (its cta_slots are measured, not fitted). memory efficiency
    >= 0.7: ASSUMPTION (prior) that a streaming kernel saturating HBM reaches at least 70 % of it (our fitted
    bandwidth-bound kinds: 0.83-0.96); without it a kernel whose chain explains its time equally well is mis-fitted
    as a slow bandwidth one."""
    return [(f"memory.{kind}", 0.9, mem_lo, 1.0), (f"iter_us.{kind}", 0.5, 0.01, 20.0),
            (f"cta_fixed_us.{kind}", 1.0, 0.0, 30.0), (f"fixed_us.{kind}", 3.0, 0.0, 30.0),
            (f"compute.{kind}", 0.3, 0.01, 1.0)]


def _ew_params(kind: str) -> list[tuple]:
    return [(f"compute.{kind}", 0.01, 1e-4, 1.0), (f"memory.{kind}", 0.8, 0.2, 1.0), (f"fixed_us.{kind}", 1.5, 0.0, 20.0)]


#: the broadcast copy's terms (hwmodels.roofline broadcast_s; Efficiency.broadcast_copy), fitted with the eager kinds
#: on the repeat_kv rows (regimes v4 and the measure_graph_chains.py v6 grid; the HF step's (B, T) held out). Starts
#: from a first look at the grid: ~0.26 ps per source byte, ~0.03 ps per byte written near the in-flight window
BROADCAST_PARAMS = [("broadcast_copy.lead_ps_per_byte", 0.25, 0.0, 5.0),
                    ("broadcast_copy.near_ps_per_byte", 0.03, 0.0, 2.0),
                    ("broadcast_copy.near_slope_ps_per_byte", 0.02, 0.0, 2.0),
                    ("broadcast_copy.far_ps_per_byte", 0.02, 0.0, 2.0),
                    ("broadcast_copy.far_l2_scale", 0.25, 0.02, 4.0)]


#: op kinds fitted here, in fit order (a later kind's rows may contain an earlier one's ops, priced with its terms)
FIT_ORDER = ("reduce", "reduce_max", "eager", "copy_broadcast", "attn_combine_triton", "attn_triton", "attn_triton_fp8kv", "attn_fa2",
             "attn_cudnn", "attn_cudnn_rows", "attn_memeff", "attn_flex", "gemm_fp8_rowwise", "gemm_fp8", "quant", "indexer", "topk")


def fit_sets(df: pd.DataFrame) -> dict[str, tuple[np.ndarray, list[tuple]]]:
    """op kind -> (fit rows, parameters): only non-held-out rows."""
    rows = family_rows(df)
    q1 = df["q_rows"].fillna(1).to_numpy() <= 1
    kern = df["kernel"].to_numpy()
    ew = _sel(df, "ew_kernel")
    ewk = np.array([EW_KERNELS.get(k, ("",))[0] for k in kern], dtype=object)
    bcast1 = (kern == "bcast_weight_bf16") & (df["m"].fillna(1).to_numpy() <= 1)
    modules = _sel(df, "elementwise", "hf_rmsnorm") | _sel(df, "elementwise", "hf_rope")
    out = {
        # torch's row reductions (reduce_kernel, v4): the wave model over reduce_kernel's launch configuration, with
        # an iteration time for loads that hit in L2 (reduce_grid at row lengths 1024 / 4096 and the single mean
        # kernels of ew_kernel; length 14336 held out)
        "reduce": (_sel(df, "reduce_grid", "mean_fp32") | (ew & (ewk == "reduce")),
                   _wave_params("reduce", 0.5) + [("iter_l2_us.reduce", 0.2, 0.01, 20.0)]),
        # the maxima, the same way on their own rows (a kind of their own: the same reduce_kernel launch with more ALU
        # work per value, MaxOps)
        "reduce_max": (_sel(df, "reduce_grid", "amax_bf16") | (ew & (ewk == "reduce_max")),
                       _wave_params("reduce_max", 0.5) + [("iter_l2_us.reduce_max", 0.2, 0.01, 20.0)]),
        # the two other eager kinds jointly: their single kernels and the HF modules built of them (the HF step,
        # eager quantization and fp8-KV dequantization stay held out)
        "eager": (ew & np.isin(ewk, ["cast", "copy_strided"]) & ~bcast1 & ~beyond_32bit_indexing(df) | modules,
                  _ew_params("cast") + _ew_params("copy_strided")),
        # repeat_kv alone (regimes v4 and the graph_chains v6 grid): its own kind and broadcast terms
        "copy_broadcast": (ew & (ewk == "copy_broadcast") & ~beyond_32bit_indexing(df),
                           _ew_params("copy_broadcast") + BROADCAST_PARAMS),
        "attn_combine_triton": (rows["combine"], [("memory.attn_combine_triton", 0.8, 0.2, 1.0),
                                                  ("cta_fixed_us.attn_combine_triton", 0.5, 0.0, 20.0),
                                                  ("fixed_us.attn_combine_triton", 1.0, 0.0, 20.0)]),
        "attn_triton": (rows["decode:triton_splitkv"] | rows["verify:triton_splitkv"] | rows["split_sweep"],
                        _wave_params("attn_triton") + [("cta_serial_us.attn_triton", 0.5, 0.0, 10.0)]),
        # the fp8-KV kernel (a kind of its own: another compiled kernel): its bandwidth, iteration and fixed times on the fp8 rows of
        # heads 32/8 and 8/1 (64/8 held out); its tile arithmetic is the bf16 kernel's (compute copied from attn_triton)
        "attn_triton_fp8kv": (fp8kv_fit_rows(df), [p for p in _wave_params("attn_triton_fp8kv")
                                                   if not p[0].startswith("compute.")]),
        "attn_fa2": (rows["decode:fa2"] | rows["verify:fa2"], _wave_params("attn_fa2")),
        "attn_cudnn": (rows["decode:cudnn"] & q1, _wave_params("attn_cudnn")),
        "attn_cudnn_rows": (rows["verify:cudnn"], _wave_params("attn_cudnn_rows")),
        "attn_memeff": (rows["decode:memeff"], _wave_params("attn_memeff")),
        "attn_flex": (rows["decode:flex"], _wave_params("attn_flex") + [("cta_slots.attn_flex", 2.0, 0.5, 8.0)]),
        # the rowwise fp8 GEMM: its CTAs' chain is their tile arithmetic (tile flops at the compute efficiency, in
        # waves of one CTA per SM: simulator.layers.fp8_gemm), so no separate iteration time (one would
        # duplicate the tile arithmetic)
        "gemm_fp8_rowwise": (_sel(df, "gemm", "fp8_rowwise") | _sel(df, "gemm_small", "fp8_rowwise"),
                             [p for p in _wave_params("gemm_fp8_rowwise", 0.5)
                                                               if not p[0].startswith("iter_us.")]),
        # the per-tensor fp8 GEMM (cuBLASLt: terms of its own, fitted on whole calls with the split-K reduce
        # priced as its own kernel where simulator.layers.splitk_reduce says cuBLASLt splits)
        "gemm_fp8": (_sel(df, "gemm", "fp8_tensorwise") | _sel(df, "gemm_small", "fp8_tensorwise"),
                     [("compute.gemm_fp8", 0.6, 0.05, 1.0), ("memory.gemm_fp8", 0.8, 0.3, 1.0),
                      ("fixed_us.gemm_fp8", 3.0, 0.0, 30.0)]),
        "quant": (_sel(df, "gemm", "quant_triton"), _wave_params("quant", 0.3) + [("cta_slots.quant", 4.0, 1.0, 16.0)]),
        "indexer": (_sel(df, "indexer", "triton_indexer") & (df["dtype"].to_numpy() == "fp8"),
                    _wave_params("indexer", 0.3) + [("cta_slots.indexer", 2.0, 0.5, 8.0)]),
    }
    # torch.topk's kind 'topk': this fit owns it (rows 1 / 8 / 32 / 512; rows 2 and 128 held out); measure.py's
    # topk rows are its independent check (benchmarks/calibration_accuracy.py)
    out["topk"] = (_sel(df, "topk"), [("memory.topk", 0.8, 0.05, 1.0), ("compute.topk", 0.3, 0.01, 1.0),
                                      ("fixed_us.topk", 5.0, 0.0, 100.0), ("sync_us.topk", 2.0, 0.0, 50.0)])
    hold = held_out(df) | held_out_extra(df)
    return {k: (out[k][0] & ~hold, out[k][1]) for k in FIT_ORDER}


#: PyTorch's TensorIterator indexes with 32-bit offsets only while every operand's largest byte offset fits an int32
#: (aten/src/ATen/TensorIterator.cpp can_use_32bit_indexing); beyond it gpu_kernel runs the op as several
#: sub-iterators (aten/src/ATen/native/cuda/Loops.cuh: with_32bit_indexing), another launch structure
INT32_MAX = float(2**31 - 1)


def beyond_32bit_indexing(df: pd.DataFrame) -> np.ndarray:
    """Single eager kernels (ew_kernel) with an operand of more than INT32_MAX bytes: PyTorch splits them into several
    kernels, which the one-kernel accounting of EW_KERNELS does not describe; they are checked, never fitted
    (repeat_kv at T 262144 writes exactly 2^31 bytes and ran 11 % slower than the fit of the other sizes, pulling the
    copy_strided bandwidth down by ~5 % and the HF step at B 8, T 8192 up)."""
    kern = df["kernel"].to_numpy()
    e = np.where(kern == "repeat_kv", df["batch"].fillna(1) * df["heads"].fillna(1) * df["context"].fillna(1)
                 * df["head_dim"].fillna(1), df["m"].fillna(1) * df["n"].fillna(1))
    per_elem = np.array([max(EW_KERNELS.get(k, ("", 0, 0, 0))[1:3]) for k in kern], dtype=float)
    return _sel(df, "ew_kernel") & (e * per_elem > INT32_MAX)


def held_out_extra(df: pd.DataFrame) -> np.ndarray:
    """Held-out shape families outside attention: GEMM shapes o and 70b_tp8_qkv, top-k rows 2 and 128, indexer 32
    heads, row reductions of length 14336, repeat_kv at the HF step's (B, T) (every group size and head dim); never
    fitted: HF modules (elementwise family), the HF step."""
    fam = df["family"].to_numpy()
    corner = df["corner"].to_numpy()
    m = np.isin(fam, ["gemm", "gemm_small"]) & np.isin(corner, ["o", "70b_tp8_qkv"])
    m |= (fam == "topk") & np.isin(df["rows"].to_numpy(), [2, 128])
    m |= (fam == "indexer") & (df["heads"].to_numpy() == 32)
    m |= fam == "hf_step"
    m |= (fam == "reduce_grid") & (df["row_len"].to_numpy() == 14336)
    m |= (fam == "ew_kernel") & (corner == "grid_hf")
    return m


#: kinds fitted with a robust loss (soft L1 on log errors beyond 10 %): single eager kernels, where a few rows
#: (one repeat_kv size 2.6 MB at 51.6 us between 4.2 us and 40 us neighbours) would otherwise pull the fit
ROBUST = ("eager", "quant", "copy_broadcast")


def _lsq(resid, params, robust=False):
    x0 = np.array([p[1] for p in params])
    lo, hi = np.array([p[2] for p in params]), np.array([p[3] for p in params])
    if robust:
        return least_squares(resid, x0, bounds=(lo, hi), x_scale="jac", loss="soft_l1", f_scale=0.1)
    return least_squares(resid, x0, bounds=(lo, hi), x_scale="jac")


def fit(df: pd.DataFrame, hw: HardwareSpec, base: Efficiency, grids: pd.DataFrame | str | Path | None = None
        ) -> tuple[Efficiency, dict]:
    """Fit every kind of fit_sets on its fit rows (scipy least squares on log(predicted / measured)), on top of
    `base` (the device's other terms: GEMM / elementwise efficiencies, overlap exponent, launch, L2 latency). With
    the launch-grid profile (`grids`, or the regimes_grids_*.csv beside the CSV when `grids` is not a frame): the
    cta_slots of every kind it recorded (measured_slots) and the FlashAttention-2 / cuDNN combine kernels fitted to
    their profiled durations."""
    if not isinstance(grids, pd.DataFrame):
        g = grids_for(df.attrs.get("file", "")) if df.attrs.get("file") else None
        grids = load_grids(g) if g is not None else None

    ops = build(df, "after", hw.units)
    meas = df["median_us"].to_numpy(float)
    has = np.bincount(ops.setting, minlength=len(df)) > 0
    eff, meta = base, {}
    l2 = (base.l2_latency_s or 0.15e-6) * 1e6
    fixed = {f"iter_us.{k}": l2 for k in ("attn_combine_triton", "attn_combine_fa2", "attn_combine_cudnn")}
    fixed.update({f"cta_slots.{k}": 8.0 for k in ("attn_combine_triton", "attn_combine_fa2", "attn_combine_cudnn")})
    src = {"iter_us.attn_combine_*": f"the measured L2 latency {l2:.3f} us (latency block of the device's fitted file)"}
    if grids is not None and len(grids):
        for k, (v, how) in measured_slots(grids, hw).items():
            fixed[f"cta_slots.{k}"] = v
            src[f"cta_slots.{k}"] = how
    l2bw = measured_l2_bw(df, hw)
    if l2bw is not None:
        fixed["l2_bw_tbs"], src["l2_bw_tbs"] = l2bw
    eff = efficiency_with(eff, fixed)
    meta["measured"] = {"params": dict(fixed), "source": src}
    if grids is not None and len(grids):
        c = grid_combine_rows(grids)
        c = c[~_heads_out(c)].reset_index(drop=True)
        if len(c) >= 4:
            cops = grid_combine_ops(c)
            dur = c["dur_us"].to_numpy(float)
            for kind in ("attn_combine_fa2", "attn_combine_cudnn"):
                m = c["kind"].to_numpy() == kind
                if m.sum() < 3:
                    continue
                params = [(f"iter_us.{kind}", l2, 0.01, 5.0), (f"fixed_us.{kind}", 1.0, 0.0, 20.0)]
                names = [p[0] for p in params]

                def resid(x, m=m, names=names):
                    e = efficiency_with(eff, {**dict(zip(names, x)), f"cta_fixed_us.{kind}": 0.0})
                    t = price(cops, hw.with_efficiency(e), "graph") - hw.launch_graph_s
                    return np.log(np.bincount(cops.setting, weights=t, minlength=len(c))[m] * 1e6 / dur[m])

                r = _lsq(resid, params)
                eff = efficiency_with(eff, {**dict(zip(names, r.x)), f"cta_fixed_us.{kind}": 0.0})
                meta[kind] = {"rows": int(m.sum()), "params": {**dict(zip(names, map(float, r.x))),
                                                               f"cta_fixed_us.{kind}": 0.0},
                              "rms_log_error": float(np.sqrt(np.mean(r.fun ** 2))),
                              "source": "profiled durations of the combine kernel (regimes_grids_*.csv, fit heads)"}
    wave = ("attn_triton", "attn_fa2", "attn_cudnn", "attn_cudnn_rows", "attn_memeff", "gemm_fp8_rowwise", "reduce",
            "reduce_max", "attn_triton_fp8kv")
    for kind, (rows, params) in fit_sets(df).items():
        if kind in wave and f"cta_slots.{kind}" not in fixed:   # no launch-grid profile: fitted
            params = params + [(f"cta_slots.{kind}", 2.0, 0.5, 8.0)]
        copied = {}
        if kind == "attn_triton_fp8kv":   # the same tile arithmetic as the bf16 kernel
            copied = {"compute.attn_triton_fp8kv": float(eff.compute["attn_triton"])}
            eff = efficiency_with(eff, copied)
        rows = rows & has
        need = 2 * len(params)
        if rows.sum() < need:
            meta[kind] = {"rows": int(rows.sum()), "skipped": f"fewer than {need} fit rows"}
            continue
        names = [p[0] for p in params]

        def resid(x, rows=rows, names=names):
            return np.log(predict_us(ops, hw, efficiency_with(eff, dict(zip(names, x))))[rows] / meas[rows])

        r = _lsq(resid, params, kind in ROBUST)
        eff = efficiency_with(eff, dict(zip(names, r.x)))
        meta[kind] = {"rows": int(rows.sum()), "params": {**copied, **{n: float(v) for n, v in zip(names, r.x)}},
                      "rms_log_error": float(np.sqrt(np.mean(r.fun ** 2)))}
    return eff, meta


#: the L2-resident sizes the L2 bandwidth is measured over: from 4 MiB (the sum's fixed cost no longer dominates) to
#: 0.8 x the L2 (the H100 / H200's L2 is two partitions; a buffer near the whole L2 partly falls to HBM: MEASURED, the
#: resident and rotated sums take the same time from 48 MiB on, regimes_*_v4.csv l2_bw)
L2_BW_MIN_BYTES, L2_BW_MAX_FRACTION = 4.0 * (1 << 20), 0.8


def measured_l2_bw(df: pd.DataFrame, hw: HardwareSpec) -> tuple[float, str] | None:
    """(TB/s, how) of the L2 read bandwidth: the slope of x.sum() over one L2-resident fp32 buffer (family l2_bw,
    sum_resident) against its bytes, between L2_BW_MIN_BYTES and L2_BW_MAX_FRACTION x the L2 (least squares: time =
    fixed + bytes / bw); None without such rows."""
    l2 = float(hw.l2_bytes or 0.0)
    m = _sel(df, "l2_bw", "sum_resident")
    if not m.any() or l2 <= 0:
        return None
    by = pd.to_numeric(df["bytes_moved"], errors="coerce").to_numpy(float) if "bytes_moved" in df.columns else \
        df["n"].fillna(0).to_numpy(float) * 4.0
    m &= (by >= L2_BW_MIN_BYTES) & (by <= L2_BW_MAX_FRACTION * l2)
    if m.sum() < 3:
        return None
    slope, icpt = np.polyfit(by[m], df["median_us"].to_numpy(float)[m], 1)
    if not slope > 0:
        return None
    tbs = 1e-6 / slope   # us per byte -> TB/s
    return float(tbs), (f"slope of x.sum() over {int(m.sum())} L2-resident fp32 buffers of {by[m].min() / 2**20:g}-"
                        f"{by[m].max() / 2**20:g} MiB (l2_bw sum_resident): {tbs:.2f} TB/s, {icpt:.2f} us fixed")


# ---------------------------------------------------------------------------------------------------
# the accuracy table: per op kind and regime, on held-out shape families
# ---------------------------------------------------------------------------------------------------
def regime(r) -> str:
    f, k = r["family"], r["kernel"]
    if f == "decode_attn":
        return f"decode attention {KERNEL_FAMILY.get(k, k)}: {r['corner']}"
    if f == "verify_attn":
        return f"verification rows {KERNEL_FAMILY.get(k, k)}"
    if f == "fp8kv_attn":
        return f"fp8-KV attention: {k} ({r['dtype']} KV)"
    if f == "gemm":
        return "GEMM bf16" if k == "bf16" else f"fp8 GEMM: {k}"
    if f == "gemm_small":
        return f"small-M GEMM: {k}"
    if f == "topk":
        return "top-k: torch.topk"
    if f == "indexer":
        return f"indexer ({r['dtype']} keys)"
    if f == "hf_step":
        return "HF Llama-3.1-8B step (CUDA graph)"
    if f == "split_sweep":
        return "split cost: triton_splitkv, forced splits"
    if f == "combine":
        return "split cost: triton combine alone"
    if f == "ew_kernel" and str(r["corner"]).startswith("grid"):
        return "broadcast copy: repeat_kv at the HF step's (B, T)" if r["corner"] == "grid_hf" else \
            "broadcast copy: repeat_kv grid"
    if f == "ew_kernel":
        return f"eager kernel: {EW_KERNELS.get(k, ('?',))[0]} ({k})"
    if f == "elementwise":
        return f"HF module: {k}"
    if f == "reduce_grid":
        return f"torch row reduction ({k})"
    return f"{f}: {k}"


def part_of(df: pd.DataFrame) -> np.ndarray:
    fitted = np.zeros(len(df), dtype=bool)
    for rows, _ in fit_sets(df).values():
        fitted |= rows
    fitted |= fp8kv_fit_rows(df)
    hold = held_out(df) | held_out_extra(df)
    return np.where(fitted, "fit", np.where(hold, "held-out", "check"))


def evaluate(df: pd.DataFrame, hw: HardwareSpec, eff: Efficiency, _unused: Efficiency | None = None) -> pd.DataFrame:
    """Predicted vs measured per timed graph row, with regime, part (fit / held-out / check) and op kind (the
    fourth argument is unused: the first kernel model's table is stored, regimes_round1_accuracy_*.csv)."""
    out = df.copy()
    hw_m = replace(hw.with_efficiency(eff), launch_graph_s=eff.launch_graph_s or hw.launch_graph_s)
    ops = build(df, "after", hw.units)
    pred = predict_us(ops, hw_m, eff) if ops is not None else np.zeros(len(df))
    has = np.bincount(ops.setting, minlength=len(df)) > 0 if ops is not None else np.zeros(len(df), bool)
    pred = np.where(has, pred, np.nan)
    hf = hf_step_ms(df, hw_m) * 1e3
    pred = np.where(np.isfinite(hf), hf, pred)
    out["after_us"] = pred
    out["after_err_pct"] = (pred / out["median_us"] - 1) * 100
    out["regime"] = out.apply(regime, axis=1)
    out["part"] = part_of(df)
    out["kind"] = kind_of_row(df)
    return out[(out["timing"] == "graph") & np.isfinite(out["after_us"])].reset_index(drop=True)


def accuracy_table(ev: pd.DataFrame, parts=("held-out",)) -> pd.DataFrame:
    rows = []
    for (reg, part), g in ev[ev["part"].isin(parts)].groupby(["regime", "part"]):
        e = g["after_err_pct"].abs().dropna()
        r = {"regime": reg, "part": part, "n": len(g), "med": e.median() if len(e) else np.nan,
             "p90": np.percentile(e, 90) if len(e) else np.nan, "max": e.max() if len(e) else np.nan}
        target = 3.0 if reg.startswith("HF Llama") else 10.0
        ok = (r["med"] <= target) and (reg.startswith("HF Llama") or r["p90"] <= 25.0)
        r["goal"] = "met" if ok else "MISSED"
        rows.append(r)
    return pd.DataFrame(rows)


#: Refusal bounds of `calibrate fit-regimes` on each fitted kind's held-out rows: (median %, p90 %). The H100 fit
#: reaches 1-20 % held-out medians per kind and regime (calibration_accuracy.py); the bounds (about 1.5-2 x the worst
#: corner) pass a fit the model describes as well on another GPU and refuse data it does not (wrong units, another
#: kernel: a x1000 CSV gives ~100 %). The combine kinds are checked on their family's held-out decode rows, the
#: eager kinds on the HF modules, eager quantization and fp8-KV dequantization built of them.
REFUSAL_BOUNDS = {kind: (35.0, 80.0) for kind in ("attn_triton", "attn_triton_fp8kv", "attn_fa2", "attn_cudnn",
                                                   "attn_cudnn_rows",
                                                   "attn_memeff", "attn_flex", "gemm_fp8_rowwise", "gemm_fp8",
                                                   "indexer",
                                                   "attn_combine_triton", "attn_combine_fa2", "attn_combine_cudnn",
                                                   "eager", "quant", "topk", "reduce", "reduce_max",
                                                   "copy_broadcast")}
OWN_KINDS = tuple(k for k in REFUSAL_BOUNDS if k != "eager") + ("cast", "copy_strided")
WAVE_PARTS = ("memory", "compute", "fixed_us", "sync_us", "cta_slots", "iter_us", "cta_fixed_us", "iter_l2_us",
              "cta_serial_us")
#: device-wide terms this fit owns (measured, not fitted): the L2 bandwidth (measured_l2_bw)
SCALARS = ("l2_bw_tbs",)
#: the kinds whose held-out check rows are another kind's (combine kernels: their family's decode rows; eager
#: kernels: the modules built of them)
CHECKED_AS = {"attn_combine_triton": ("attn_triton",), "attn_combine_fa2": ("attn_fa2",),
              "attn_combine_cudnn": ("attn_cudnn",)}


def kind_of_row(df: pd.DataFrame) -> np.ndarray:
    """The op kind whose terms a row's fit / check concerns ('' when none of this module's kinds; 'eager' for the
    HF modules, eager quantization and fp8-KV dequantization, built of the eager kinds)."""
    out = np.full(len(df), "", dtype=object)
    q1 = df["q_rows"].fillna(1).to_numpy() <= 1
    fam, kern = df["family"].to_numpy(), df["kernel"].to_numpy()
    att = np.isin(fam, ["decode_attn", "verify_attn", "fp8kv_attn", "split_sweep"])
    from simulator.kernels.decode_attention import FAMILIES, ROWS_KIND

    for k, f in KERNEL_FAMILY.items():
        kind = FAMILIES[f][0]
        out[att & (kern == k)] = kind
        if f in ROWS_KIND:
            out[att & (kern == k) & ~q1] = ROWS_KIND[f]
    out[(fam == "combine")] = "attn_combine_triton"
    out[(fam == "fp8kv_attn") & (kern == "triton_splitkv") & (df["dtype"].to_numpy() == "fp8")] = "attn_triton_fp8kv"
    out[np.isin(fam, ["gemm", "gemm_small"]) & np.array(["rowwise" in str(k) for k in kern])] = "gemm_fp8_rowwise"
    out[np.isin(fam, ["gemm", "gemm_small"]) & (kern == "fp8_tensorwise")] = "gemm_fp8"
    out[(fam == "gemm") & (kern == "quant_triton")] = "quant"
    out[(fam == "indexer") & (kern == "triton_indexer")] = "indexer"
    out[fam == "topk"] = "topk"
    out[fam == "reduce_grid"] = np.where(kern[fam == "reduce_grid"] == "amax_bf16", "reduce_max", "reduce")
    out[(fam == "ew_kernel")] = [EW_KERNELS.get(k, ("",))[0] for k in kern[fam == "ew_kernel"]]
    out[((fam == "elementwise") & (kern != "F.rms_norm")) | ((fam == "gemm") & (kern == "quant_eager"))
        | (kern == "dequant+cudnn") | (fam == "hf_step")] = "eager"
    return out


def check_result(eff: Efficiency, meta: dict, ev: pd.DataFrame, file: str) -> list[str]:
    """Physical ranges of every fitted term and the held-out bounds of every fitted kind (refuses otherwise)."""
    params = {}
    for kind, m in meta.items():
        params.update(m.get("params", {}))
    C.check_physical(params, file)
    lines = []
    for kind, (med_b, p90_b) in REFUSAL_BOUNDS.items():
        if "params" not in meta.get(kind, {}):
            continue
        on = CHECKED_AS.get(kind, (kind,))
        e = ev[ev["kind"].isin(on) & (ev["part"] == "held-out")]["after_err_pct"].abs().dropna().to_numpy()
        if len(e) == 0:
            raise C.CalibrationError(f"the {kind} fit cannot be checked: no held-out rows", file=file)
        med, p90 = float(np.median(e)), float(np.percentile(e, 90))
        if not (med <= med_b and p90 <= p90_b):
            raise C.CalibrationError(f"the {kind} fit misses its bound on held-out rows: median |error| {med:.3g} % "
                                     f"(bound {med_b:g} %), p90 {p90:.3g} % (bound {p90_b:g} %); nothing was written",
                                     file=file)
        lines.append(f"{kind} {med:.1f}/{p90:.1f} %")
    if not lines:
        raise C.CalibrationError(f"holds no fit rows of any kind this fit sets ({', '.join(REFUSAL_BOUNDS)}); nothing "
                                 "was written", file=file)
    return lines


def write(eff: Efficiency, meta: dict, target: str, data_file: str, measured_on: str, table: pd.DataFrame,
          out_dir: Path) -> Path:
    """Merge the kinds this fit owns into out_dir/<target>.yaml (other terms kept)."""
    p = Path(out_dir) / f"{target}.yaml"
    own: dict = {part: {} for part in WAVE_PARTS}
    for kind, m in meta.items():
        for name, v in m.get("params", {}).items():
            part, _, k = name.partition(".")
            if part in own:
                own[part][k] = round(float(v), 4)
            elif part == "broadcast_copy":
                own.setdefault(part, {})[k] = round(float(v), 5)
            elif part in SCALARS:
                own[part] = round(float(v), 4)
    borrowed = "" if measured_on == target else f" (measured on {measured_on}: borrowed)"
    own["regimes"] = {
        "source": f"simulator/calibration/fit_regimes.py on {DF.name(data_file)}{borrowed}: decode attention per "
                  "kernel family and its combine kernel (wave model, resident CTAs from the launch-grid profile), fp8 "
                  "rowwise GEMM, indexer, eager casts / broadcast copies / reductions",
        "fit": {k: {kk: (round(vv, 4) if isinstance(vv, float) else vv) for kk, vv in m.items() if kk != "params"}
                for k, m in meta.items()},
        "accuracy_held_out": C.plain(table.round(2).to_dict("records")),
    }
    owned = {part: OWN_KINDS for part in WAVE_PARTS}
    owned.update({k: None for k in SCALARS})
    owned["regimes"] = None
    owned["broadcast_copy"] = None
    return C.write_checked(p, C.merge_into(p, own, owned), "")


def table_text(table: pd.DataFrame) -> str:
    t = table.copy()
    for c in t.columns:
        if c.endswith(("med", "p90", "max")):
            t[c] = t[c].map(lambda v: "" if not np.isfinite(v) else f"{v:.1f}")
    return t.to_string(index=False)


def hw_for(df: pd.DataFrame, device: str | None) -> HardwareSpec:
    from hwmodels.calibration import DEVICE_SPECS

    name = device or DEVICE_SPECS.get(str(df["device"].iloc[0]))
    if name is None:
        raise SparsesimError(f"measured device {df['device'].iloc[0]!r} has no spec mapping; pass --device NAME",
                             file=df.attrs.get("file"))
    return C.datasheet_spec(name)


