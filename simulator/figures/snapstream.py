"""SnapStream (SambaNova) on a SambaNova SN40L-16 node: DeepSeek-R1, TP16 projections / FFN + attention DP16.

Rows: Table 5 (maximum decode batch, throughput and gain with / without SnapStream), Table 4 (the fused
kernels' shares of a 128K MoE prefill layer), the '2-5 %' prefill overhead (sec. 5.2; abstract 'at most 5 %'),
the naive decode update's on-chip buffers (appendix A.1), the MTP multiplier (an input), Table 3's workloads;
beyond the paper: the same model on 8-GPU H100 / B200 nodes (predictions).

How the SN40L deployment of sec. 4 is modeled (paper values in snapstream.yaml; nothing is fitted):
  mapping        TP16 projections and FFN, attention DP16 (KV cache split by batch), experts TP-sharded.
  weights / KV   the released fp8 checkpoint on bf16 units (SN40L has no fp8 arithmetic); bf16 KV cache of MLA's
                 shared latent (the scenario's attention dense, mla_cache latent): sec. 6 "SnapStream already
                 accommodates MLA by compressing the smaller, low-rank latent vectors". The appendix listings'
                 separate key / value tensors (mla_cache separate_kv) are shown beside. (An earlier revision made
                 the separate layout primary in a commit titled "Table 5 batch sizes now exact": undone.)
  fused kernels  the decode graph is two fused kernels per layer (sec. 4.2, Fig. 7): an MLA section (norms,
                 projections, attention, the all-to-all reshards of DP16, output projection, TP all-reduce, router)
                 and an FFN section (shared + routed experts, combine, all-reduce); the prefill graph is the seven
                 fused kernels of Table 4 per MoE layer. A fused kernel is spatially pipelined (sec. 4.1 Fig. 6 and
                 sec. 4.2: 'both sections are implemented using fusion and spatial dataflow, as shown in Figure 6'):
                 its time is the largest of its summed demands on each resource - compute, HBM, P2P links - plus one
                 kernel call (PIPELINED); op by op in sequence is shown beside (SEQUENTIAL). This is op-level
                 arithmetic on the roofline's per-op terms (hwmodels.roofline.Priced); a roofline term for it is
                 a known gap (docs/KNOWN_GAPS.md).
  routed experts the SN40L runs a compiled static graph (sec. 2.3: fixed tensor shapes), so its fused FFN
                 streams every expert's 1/16 slice each step, once (sec. 4.2: batch-sample fusion, "the weights
                 for each expert are loaded only once"): a runtime property of the device in simulator.layers
                 (streams_all_experts). Reading only the experts the batch routes to (a dynamic graph) is shown
                 beside.
  MTP            throughput = batch x 2.4 / forward time: the paper's multiplier (sec. 5.2), an input.
  capacity       the largest batch whose KV fits 0.9 x 64 GiB per socket beside the weights (simulator.memory);
                 the static graph's compiled batch sizes are not published (16 x 2^k, which Table 5's batches are,
                 is shown beside).
Unpublished parameters varied in sensitivity lines: SnapKV's observation window (SnapKV default 32; Table 4
needs thousands), the SN40L kernel-call cost (spec placeholder), the P2P link bandwidth / latency (spec
placeholders).
"""
from __future__ import annotations

from dataclasses import replace
from functools import cached_property

import numpy as np

from hwmodels.roofline import price as price_ops
from simulator import memory
from simulator.figures import Plot, Quantity, Value, evaluate, load_paper, reproduction
from simulator.figures import common as C
from simulator.pricing import decode_ops, prefill_ops

HW, MODEL, DP = "SN40L-16", "DeepSeek-R1", 16
MTP_SCALE = 2.4                 # sec. 5.2 (also the YAML's identity row)
#: Table 5's configurations: prefill -> SnapStream budget, paper batches (full, SnapStream)
T5 = {"128k": (131072, 32768, 16, 64), "64k": (65536, 16384, 32, 128), "32k": (32768, 8192, 64, 256)}
MLA_SECTION = ("attn_norm", "qkv_a_proj", "qkv_a_norm", "q_b_proj", "q_absorb", "rope_kv_write", "attn_dp_reshard_in",
               "attention", "attention_combine", "attn_dp_reshard_out", "v_absorb", "o_proj", "allreduce_attn",
               "moe_norm", "moe_router", "moe_gating", "mlp_norm")
HEAD_OPS = ("embedding", "final_norm", "lm_head", "sampling")
TABLE4 = {
    "QKV": ("attn_norm", "qkv_a_proj", "qkv_a_norm", "q_b_proj", "kv_b_proj", "rope_kv_write"),
    "MHA": ("attention",),
    "Output Proj": ("o_proj", "allreduce_attn"),
    "Router": ("moe_norm", "moe_router", "moe_gating"),
    "MoE FFN": ("moe_experts_gate_up", "moe_experts_act", "moe_experts_down", "moe_shared_gate_up", "moe_shared_act",
                "moe_shared_down", "moe_combine", "allreduce_moe"),
    "SnapKV Compression": ("snapkv_scores", "snapkv_pool", "snapkv_topk", "snapkv_gather"),
    "Streaming Ring Buffer": ("ring_buffer",),
}


def needs(sc) -> str | None:
    hw, m = sc.hardware[0], sc.models[0]
    if hw.name != HW or m.name != MODEL:
        return f"{HW} with {MODEL} as its first hardware and model (it has {hw.name}, {m.name})"
    return None


# ---- fused-kernel pricing (op-level arithmetic on the roofline's per-op terms) -------------------------------
def fused_s(ops, hw, groups: dict[str, tuple[tuple, float]], mode: str = "pipelined",
            launch: str = "graph") -> dict[str, np.ndarray]:
    """Seconds per setting of each fused kernel: groups[name] = (op names, kernel calls per step). PIPELINED =
    max(sum of compute, sum of HBM, sum of link time) over the member ops + the calls; SEQUENTIAL = the members'
    device times summed + the calls."""
    from hwmodels.opkinds import KINDS

    pr = price_ops(ops, hw, launch, detail=True)
    names = np.asarray(ops.names, dtype=object)[ops.name_id]
    coll = np.isin(ops.kind, [k for k, n in enumerate(KINDS) if n in ("collective", "alltoall")])
    call = hw.launch_graph_s if launch == "graph" else hw.launch_eager_s
    out = {}
    for g, (members, calls) in groups.items():
        sel = np.isin(names, members)

        def per(v, sel=sel):
            return np.bincount(ops.setting, weights=np.where(sel, v, 0.0), minlength=ops.n_settings)
        if mode == "pipelined":
            t = np.maximum.reduce([per(np.where(coll, 0.0, pr.compute_s)), per(np.where(coll, 0.0, pr.memory_s)),
                                   per(np.where(coll, pr.memory_s, 0.0))])
        else:
            t = per(pr.time_s - pr.launch_s)
        out[g] = t + calls * call
    return out


def routed_only(ops, c, rows: np.ndarray):
    """The op table with only the routed experts' weight slices read (a dynamic graph; the static graph the
    SN40L runs streams all of them: simulator.layers.streams_all_experts)."""
    m = c.model
    e, f = m.moe, m.moe.expert_ffn / c.tp
    from simulator.layers import expected_distinct_experts

    missing = -(e.experts - expected_distinct_experts(e.experts, e.top_k, rows)) * m.hidden * c.wbytes
    names = np.asarray(ops.names, dtype=object)[ops.name_id]
    extra = np.where(names == "moe_experts_gate_up", (m.mlp_matrices - 1) * f, 0.0)
    extra = extra + np.where(names == "moe_experts_down", f, 0.0)
    return replace(ops, bytes_read=ops.bytes_read + extra * missing[ops.setting])


def decode_step_s(c, batch, kv, mode="pipelined", experts="all") -> np.ndarray:
    """Seconds of one decode forward (two fused kernels per layer + head kernels) per setting."""
    B, T = np.atleast_1d(np.asarray(batch, float)), np.atleast_1d(np.asarray(kv, float))
    n = max(len(B), len(T))
    B, T = np.broadcast_to(B, (n,)), np.broadcast_to(T, (n,))
    ops, _ = decode_ops(c, B.copy(), T.copy())
    if experts == "routed":
        ops = routed_only(ops, c, B)
    ffn = tuple(x for x in ops.names if x not in MLA_SECTION and x not in HEAD_OPS)
    L = float(c.model.layers)
    groups = {"mla": (MLA_SECTION, L), "ffn": (ffn, L), **{h: ((h,), 1.0) for h in HEAD_OPS}}
    return sum(fused_s(ops, c.hardware, groups, mode, c.launch).values())


def one_layer_kernels(c, prompt: float, mode="pipelined", launch="eager") -> dict[str, float]:
    """Table 4: seconds of each fused prefill kernel of ONE MoE layer (every op's count set to one call)."""
    ops = prefill_ops(c, np.array([float(prompt)]))
    ops = replace(ops, count=np.ones_like(ops.count))
    t = fused_s(ops, c.hardware, {g: (m, 1.0) for g, m in TABLE4.items()}, mode, launch)
    return {g: float(v[0]) for g, v in t.items()}


def prefill_overhead_pct(full, snap, prompt: float, mode="pipelined") -> float:
    """TTFT with SnapStream / without - 1, in %: every layer's ops in their fused kernels (Table 4's grouping;
    dense layers' MLP with the output projection), the prefill graph eager (one call per kernel per layer)."""
    def ttft(c):
        ops = prefill_ops(c, np.array([float(prompt)]))
        L = float(c.model.layers)
        rest = tuple(n for n in ops.names if not any(n in m for m in TABLE4.values()))
        groups = {g: (m, L) for g, m in TABLE4.items()}
        groups["rest"] = (rest, L)
        return sum(float(v[0]) for v in fused_s(ops, c.hardware, groups, mode, "eager").values())
    return 100.0 * (ttft(snap) / ttft(full) - 1.0)


# ---- the scenario's configurations ------------------------------------------------------------------------------
class Ctx:
    """Memoized pricing shared by the rows (one scenario)."""

    def __init__(self, sc):
        self.sc = sc
        self.att = C.scenario_value(sc, "attention", "dense")     # keeps the scenario's mla_cache layout

    def combo(self, policy="full", label=None, **kw):
        return C.combo(self.sc, label=label or f"kv_policy {policy}", attention=kw.pop("attention", self.att),
                       kv_policy=policy, **kw)

    def snap(self, budget: int, **params):
        return self.combo({"snapstream": {"budget_tokens": budget, **params}}, label=f"SnapStream {budget}")

    @cached_property
    def full(self):
        return self.combo()

    def max_batch(self, c, context: float, whole_sequences: bool = True) -> int:
        """Largest batch whose caches fit. Under attention DP a sequence's cache lives on ONE socket (sec. 4.2:
        'the KV-cache is partitioned across the 16 sockets'): whole sequences per socket x attn_dp (the
        project-wide simulator.memory.max_batch averages a sequence over the sockets: shown beside)."""
        cached = c.kv_policy.cached_tokens(c, c.attention.cached_tokens(c, np.array([context])))
        if not whole_sequences or c.attn_dp == 1:
            return int(memory.max_batch(c, cached)[0])
        ms = memory.memory_summary(c)
        free = ms["usable"] - ms["weights"] - ms["workspace"]
        per_seq = float(memory.kv_bytes_per_sequence(c, cached)[0]) * c.attn_dp + c.model.vocab / c.tp * 4.0
        return int(max(0.0, np.floor(free / per_seq))) * c.attn_dp

    def tok_s(self, c, batch, context, **kw) -> float:
        return float(batch * MTP_SCALE / decode_step_s(c, batch, context, **kw)[0])

    def gain(self, key: str, **kw) -> float:
        P, bud, bf, bs = T5[key]
        return self.tok_s(self.snap(bud), bs, P, **kw) / self.tok_s(self.full, bf, P, **kw)

    def alternatives(self, fn) -> dict[str, float]:
        """`fn(**kw)` under the readings the document leaves open (module docstring)."""
        return {"routed experts only (a dynamic graph)": fn(experts="routed"),
                "ops in sequence inside a fused kernel": fn(mode="sequential"),
                "routed only, sequential": fn(mode="sequential", experts="routed")}


def compiled_batch(max_batch: int, dp: int = DP) -> int:
    """Largest dp * 2^k not above `max_batch` (the compiled-size reading: Table 5's batches are such sizes)."""
    b = dp if max_batch >= dp else 0
    while b and b * 2 <= max_batch:
        b *= 2
    return b


def table5_rows(x: Ctx) -> list[Quantity]:
    rows = []
    cfg = "SN40L-16, DeepSeek-R1 fp8, TP16 + attention DP16, bf16 KV (shared MLA latent), x 2.4 MTP"
    read = ("sec. 2.3 / 4.2: a static graph streams every expert once per step; Figs. 6-7: fused kernels spatially "
            "pipelined")
    for key, (P, bud, bf, bs) in T5.items():
        for pol, b, tag in (("full", bf, "full"), (bud, bs, "snap")):
            c = x.full if pol == "full" else x.snap(bud)
            rows.append(Quantity(f"Table 5 max batch, {'full KV' if pol == 'full' else f'SnapStream {bud // 1024}K'}, "
                                 f"{key}", lambda c=c, P=P: _batch_value(x, c, P), paper=f"t5_batch_{tag}_{key}",
                                 unit="seqs", config="0.9 x 64 GiB per socket; attention DP16"))
            rows.append(Quantity(f"Table 5 throughput, {'full KV' if pol == 'full' else 'SnapStream'}, {key}, "
                                 f"batch {b}", lambda c=c, b=b, P=P: Value(x.tok_s(c, b, P), alternatives=x.alternatives(
                                     lambda **kw: x.tok_s(c, b, P, **kw)), reading=read),
                                 paper=f"t5_tps_{tag}_{key}", unit="tok/s", config=cfg + f", the paper's batch {b}"))
        rows.append(Quantity(f"Table 5 throughput gain, {key}", lambda key=key: Value(
            x.gain(key), alternatives=x.alternatives(lambda **kw: x.gain(key, **kw)), reading=read),
            paper=f"t5_gain_{key}", unit="x", config=cfg + ", the paper's batches"))
    return rows


def _batch_value(x: Ctx, c, P: float) -> Value:
    mb = x.max_batch(c, P)
    sep = replace(c, attention=C.with_params(c.attention, mla_cache="separate_kv"))
    return Value(float(mb), alternatives={"averaged over sockets (simulator.memory)": float(x.max_batch(c, P, False)),
                                          "compiled sizes 16 x 2^k": float(compiled_batch(mb)),
                                          "separate key / value latents (the listings)": float(x.max_batch(sep, P))},
                 reading="whole sequences per socket under DP16 (sec. 4.2); MLA's shared latent is what sec. 6 says "
                         "is compressed; the compiled batch sizes are not published")


# ---- Table 4, prefill overhead, on-chip buffers --------------------------------------------------------------------
T4_PROMPT, T4_BUDGET = 131072, 32768
WINDOWS = (32, 512, 2048, 4096)          # SnapKV observation windows for the sensitivity lines
CALL_US = (1.0, 100.0, 500.0)            # SN40L kernel-call cost for the sensitivity lines (priced: the H100 host's)


LINK_GBPS = (50.0, 400.0)                # P2P bandwidth for the sensitivity lines (spec placeholder 100 GB/s)


def table4_shares(x: Ctx, window: int | None = None, call_us: float | None = None, mode="pipelined",
                  link_gbps: float | None = None) -> dict:
    """Shares (%) of Table 4's seven fused kernels in one 128K MoE prefill layer with SnapStream-32K."""
    c = x.snap(T4_BUDGET, **({} if window is None else {"window": window}))
    if call_us is not None:
        c = replace(c, hardware=c.hardware.scaled(launch_eager_s=call_us * 1e-6))
    if link_gbps is not None:
        c = replace(c, hardware=c.hardware.scaled(link_bw_bytes_s=link_gbps * 1e9))
    t = one_layer_kernels(c, T4_PROMPT - 1, mode)
    tot = sum(t.values())
    return {g: 100.0 * v / tot for g, v in t.items()}


def table4_rows(x: Ctx) -> list[Quantity]:
    rows = []
    for g in TABLE4:
        key = "t4_" + g.lower().replace(" ", "_")

        def m(g=g):
            sens = {"ASSUMPTION SnapKV observation window (SnapKV default 32; not published)":
                    {f"window {w}": table4_shares(x, window=w)[g] for w in WINDOWS},
                    "ASSUMPTION SN40L kernel-call cost (no source; priced with the H100 host's eager launch)":
                    {f"{u:g} us": table4_shares(x, call_us=u)[g] for u in CALL_US},
                    "ASSUMPTION SN40L P2P bandwidth (spec placeholder 100 GB/s)":
                    {f"{b:g} GB/s": table4_shares(x, link_gbps=b)[g] for b in LINK_GBPS}}
            return Value(table4_shares(x)[g], sensitivity=sens,
                         alternatives={"ops in sequence inside each kernel": table4_shares(x, mode="sequential")[g]},
                         reading="Fig. 6: the fused kernels are spatially pipelined, P2P overlapped with compute")
        rows.append(Quantity(f"Table 4 share of a 128K MoE prefill layer: {g}", m, paper=key, unit="%",
                             config="SN40L-16 TP16, SnapStream-32K (sink 4, recent 4096, window 32), one MoE layer"))
    for key, (P, bud, _, _) in T5.items():
        rows.append(Quantity(f"prefill latency overhead of SnapStream, {key}", lambda P=P, bud=bud: Value(
            prefill_overhead_pct(x.full, x.snap(bud), P),
            sensitivity={"ASSUMPTION SnapKV observation window": {f"window {w}": prefill_overhead_pct(
                x.full, x.snap(bud, window=w), P) for w in WINDOWS}}),
            paper="prefill_overhead_pct", unit="%", config=f"TTFT of one {key} prompt, every layer's fused kernels"))
    return rows


def onchip_rows(x: Ctx) -> list[Quantity]:
    naive = x.snap(32768, decode_update="naive")

    def mb(c) -> float:
        return float(c.kv_policy.onchip_bytes(c, np.array([64.0]), np.array([131072.0]))[0]) / 1e6
    sep = replace(naive, attention=C.with_params(naive.attention, mla_cache="separate_kv"))
    return [
        Quantity("naive update: Listing 2 lines 24-29 buffers, 32K budget, batch 64 (4 per socket)", lambda: Value(
            mb(naive), alternatives={"separate key / value latents (the listings' two tensors)": mb(sep)},
            reading="the scenario's cache layout (sec. 6: the shared latent is what is compressed)"),
                 paper="naive_lines_24_29_mb", unit="MB",
                 config="the socket's compressed latents (the scenario's layout), bf16; 4 sequences per socket"),
        Quantity("naive update: on-chip memory vs the standard decoding kernel", None, paper="naive_ratio"),
        Quantity("MTP tokens per forward (the paper's multiplier)", lambda: MTP_SCALE, paper="mtp_tokens",
                 unit="tokens", note="an input: DeepSeek-R1 ships one MTP module (1 + 0.8 = 1.8 at 80 %); "
                                     "1 + 0.8 + 0.64 = 2.44 needs two drafts"),
    ]


# ---- workloads, traces, beyond the paper -----------------------------------------------------------------------------
#: Table 3: mean input / output tokens of the accuracy benchmarks (DeepSeek-R1-0528)
T3 = {"LongBench-v2": (84762, 1296), "AIME24": (140, 15424), "LiveCodeBench": (476, 10634)}


def workload_rows(x: Ctx) -> list[Quantity]:
    rows = []
    for name, (inp, out) in T3.items():
        def m(inp=inp, out=out):
            tot = inp + out
            return Value(100.0 * max(0.0, 1.0 - 32768.0 / tot), note=f"mean sequence {tot:,} tokens vs the 32K budget",
                         inputs="Table 3 means (not distributions)")
        rows.append(Quantity(f"Table 3 {name}: share of the mean sequence evicted by SnapStream-32K", m, unit="%",
                             kind="prediction", config="a mean request; SnapStream compresses only beyond its budget"))
    return rows


def trace_rows(x: Ctx) -> list[Quantity]:
    ts = x.sc.trace
    if ts is None or not ts.has("snapkv.recall"):
        return []
    src = (f"trace {ts.name} ({ts.source}; {ts.meta.get('model', {}).get('name', '?')}, mean context "
           f"{ts.meta.get('mean_context', float('nan')):.0f} tokens, budgets {ts.coords.get('budget')} tokens): "
           "not DeepSeek-R1 at 32K-of-128K")
    rows = []
    for bud in ts.coords.get("budget", ()):
        rows.append(Quantity(f"trace: SnapKV recall of decode attention mass, budget {int(bud)}", lambda bud=bud: Value(
            float(np.nanmean(ts.select("snapkv.recall", budget=bud))), inputs=src,
            note="accuracy proxy; the trace's model and context, not DeepSeek-R1 at 128K"), kind="prediction"))
    if ts.has("streaming.mass"):
        rows.append(Quantity("trace: StreamingLLM (sinks + recent) attention mass", lambda: Value(
            ts.summary("streaming.mass"), inputs=src), kind="prediction"))
    return rows


def beyond_rows(x: Ctx) -> list[Quantity]:
    rows = []
    for hw in ("H100-SXM", "B200"):
        full = x.combo(label=f"full {hw}", hardware=hw, tp=8, attn_dp=8)
        w = memory.memory_summary(full)
        if w["weights"] + w["workspace"] >= w["usable"]:
            rows.append(Quantity(f"beyond: {hw} x8 fits DeepSeek-R1 fp8 weights", lambda w=w: Value(
                0.0, note=f"{w['weights'] / 1e9:.0f} GB of weights per GPU > {w['usable'] / 1e9:.0f} GB usable"),
                kind="prediction", unit="batches"))
            continue
        for key, (P, bud, _, _) in T5.items():
            def m(full=full, hw=hw, P=P, bud=bud):
                snap = x.combo({"snapstream": {"budget_tokens": bud}}, label=f"snap {hw}", hardware=hw, tp=8, attn_dp=8)
                bf, bs = max(1, x.max_batch(full, P)), max(1, x.max_batch(snap, P))
                tf = bf * MTP_SCALE / float(C.price(full, bf, P + 1, 1)["step_ms"][0])
                ts = bs * MTP_SCALE / float(C.price(snap, bs, P + 1, 1)["step_ms"][0])
                return Value(ts / tf, note=f"max batch {bs} / {bf}; the paper's budget-to-context ratio (accuracy "
                                           "measured by the paper at 32K-of-128K only)")
            rows.append(Quantity(f"beyond: {hw} x8 {key}: SnapStream {bud // 1024}K / full throughput at max batch", m,
                                 unit="x", config="TP8 + attention DP8, CUDA graphs, op by op"))
    return rows


def notes(x: Ctx) -> list:
    def implied():
        base = table4_shares(x)
        t = one_layer_kernels(x.snap(T4_BUDGET), T4_PROMPT - 1)
        P = load_paper("snapstream")
        ring = P.value("t4_streaming_ring_buffer") / 100.0
        # ring share r = (t_ring + K) / (T + 7 K)  ->  K = (r T - t_ring) / (1 - 7 r)   (K beyond the priced call)
        T = sum(t.values())
        K = (ring * T - t["Streaming Ring Buffer"]) / (1.0 - 7.0 * ring)
        return (f"inverse, not used: Table 4's ring-buffer share ({ring * 100:.2f} %) would need {K * 1e3:.2f} ms more per "
                f"kernel call (the model's ring kernel is {base['Streaming Ring Buffer']:.3f} % of the layer); that call "
                f"cost would add {2 * 61 * K * 1e3:.0f} ms to each decode forward of 2 x 61 fused kernels")
    def flat():
        s = [decode_step_s(x.full if k == "f" else x.snap(T5[key][1]), T5[key][2 if k == "f" else 3], T5[key][0])[0]
             for key in T5 for k in "fs"]
        P = load_paper("snapstream")
        paper = [T5[key][2 if k == "f" else 3] * MTP_SCALE / P.value(f"t5_tps_{'full' if k == 'f' else 'snap'}_{key}")
                 for key in T5 for k in "fs"]
        return ("forward time at equal total KV (batch x KV = 2M tokens), paper -> model: "
                + ", ".join(f"{p * 1e3:.0f} -> {m * 1e3:.0f} ms" for p, m in zip(paper, s))
                + " (the static graph streams every expert each step, so the weight part is flat in batch)")
    return [flat, implied,
            "the P2P link bandwidth (100 GB/s) and latency (3 us) are spec placeholders: inside a pipelined kernel a "
            "collective costs only where its link time exceeds the kernel's compute and HBM time (Table 4's Output Proj "
            "all-reduce does: its sensitivity line varies the bandwidth)"]


def _plot_steps(x: Ctx):
    def draw(path):
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        P = load_paper("snapstream")
        labels, paper, sims = [], [], {"all experts, pipelined": [], "routed only, pipelined": [],
                                       "all experts, sequential": []}
        for key, (ctx, bud, bf, bs) in T5.items():
            for tag, c, b in (("full", x.full, bf), ("snap", x.snap(bud), bs)):
                labels.append(f"{key} {tag}\nB={b}")
                paper.append(b * MTP_SCALE / P.value(f"t5_tps_{tag}_{key}") * 1e3)
                for name, kw in (("all experts, pipelined", {}), ("routed only, pipelined", {"experts": "routed"}),
                                 ("all experts, sequential", {"mode": "sequential"})):
                    sims[name].append(decode_step_s(c, b, ctx, **kw)[0] * 1e3)
        fig, ax = plt.subplots(figsize=(9, 4.8))
        i = np.arange(len(labels))
        ax.bar(i - 0.3, paper, 0.2, color="#999", label="paper (batch x 2.4 / throughput)")
        for j, (name, v) in enumerate(sims.items()):
            ax.bar(i - 0.1 + 0.2 * j, v, 0.2, label=f"model: {name}")
        ax.set_xticks(i, labels, fontsize=8)
        ax.set_ylabel("decode forward (ms)")
        ax.set_title("SnapStream Table 5: forward time at equal total KV (SN40L-16, DeepSeek-R1)")
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3, axis="y")
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
    return Plot("table5_forward_time", draw)


@reproduction("snapstream_sn40l", needs=needs)
def snapstream_sn40l(sc):
    """SnapStream (SambaNova) on SN40L-16: Tables 3-5, prefill overhead, naive on-chip buffers; H100/B200 nodes."""
    x = Ctx(sc)
    rows = table5_rows(x) + table4_rows(x) + onchip_rows(x) + workload_rows(x) + trace_rows(x) + beyond_rows(x)
    return evaluate("snapstream_sn40l", "SnapStream (SambaNova) on SN40L-16: DeepSeek-R1, TP16 + attention DP16, "
                    "bf16 latent KV, static graph", rows, load_paper("snapstream"), notes(x), plots=[_plot_steps(x)])
