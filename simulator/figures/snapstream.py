"""SnapStream (seeds/003) on a SambaNova SN40L-16 node: DeepSeek-R1, TP16 projections/FFN + attention DP16.

Reproduces Table 5 (maximum decode batch and throughput with / without SnapStream), Table 4 (the SnapStream
kernels' share of a 128K MoE prefill layer), the "at most 5 % higher prefill latency" bound and the on-chip
footprint of the naive decode update (appendix A.1); then goes beyond the paper: the same model on 8-GPU
H100 and B200 nodes and the context where SnapStream starts to pay off.

How the SN40L deployment of sec. 4.2 is modeled (paper values in snapstream.yaml; nothing here is fitted):
  mapping        TP16 for projections and FFN, attention DP16 (Combo.attn_dp: the MLA kernel and its KV cache
                 split by batch), experts TP-sharded (ep = 1: 'each socket ... 1/16th of the routed expert slice').
  weights        the released fp8 checkpoint, stored fp8 and multiplied on the bf16 units (SN40L has no fp8
                 arithmetic; hwmodels.opkinds.DTYPE_FALLBACK) — bf16 weights (1.34 TB) would not fit the node's
                 1 TB of HBM, and sec. 5.2 assumes 'the model runs entirely in HBM'. KV cache bf16.
  static graphs  a decode graph is compiled for fixed batch sizes (sec. 2.3): the largest batch that runs is
                 the largest compiled size that fits. ASSUMPTION: compiled sizes are attn_dp x 2^k (every batch
                 of Table 5 is one; the paper does not list the compiled sizes).
  fused kernels  the decode graph is two fused kernels per layer (sec. 4.2, Fig. 7: MLA section and FFN
                 section): the step's per-op launch overheads are replaced by 2 x layers + 2 launches (the +2,
                 embedding and LM head/sampling outside the layers, is an ASSUMPTION). The fused kernels' HBM
                 traffic is taken as the sum of their ops' traffic (no cross-op reuse credited).
  MTP            throughput is scaled by the paper's 2.4 tokens per forward (sec. 5.2; the chain formula
                 1 + 0.8 + 0.8^2 = 2.44 for two MTP drafts at 80 % acceptance is printed beside it), i.e. the
                 plain decode step is priced and multiplied, exactly the paper's method.
  interconnect   SN40L's P2P bandwidth / latency are ASSUMPTIONS (hwmodels/specs/SN40L-16.yaml): the output
                 notes how much the step moves when the latency placeholder is doubled.
Throughput is compared at the paper's batch sizes (isolating the step-time model from the capacity model)
and end to end at the simulator's own maximum batch.
"""
from __future__ import annotations

import numpy as np

from hwmodels.roofline import price
from hwmodels.spec import load_hardware
from simulator import memory
from simulator.acceptance import chain_tokens_per_round
from simulator.combo import Combo, make_combo
from simulator.figures import Reproduction, paper_values, reproduction
from simulator.model import load_model
from simulator.ops import OpBuilder
from simulator.planner import onchip_overflow
from simulator.pricing import prefill_ops, price_combo

MIB = 2**20


# ---- helpers (also used by simulator/figures/lserve.py) ----------------------------------------------
def make(hw, model, *, attention="dense", kv_policy="full", speculation="none", kv_dtype="bf16",
         weight_dtype=None, tp=1, attn_dp=1, ep=1, launch="graph") -> Combo:
    """A Combo from names (or loaded specs) and axis values written as in a scenario."""
    return make_combo(hw, model, attention=attention, kv_policy=kv_policy, speculation=speculation,
                      kv_dtype=kv_dtype, weight_dtype=weight_dtype, tp=tp, attn_dp=attn_dp, ep=ep, launch=launch)


def op_time_per_call(ops, hw, name, launch="graph") -> np.ndarray:
    """Seconds of one call of op `name` (its time / its count) per setting; 0 where the op is absent."""
    if name not in ops.names:
        return np.zeros(ops.n_settings)
    t = price(ops, hw, launch)
    sel = ops.name_id == ops.names.index(name)
    per = np.where(sel, t / np.maximum(ops.count, 1e-30), 0.0)
    return np.bincount(ops.setting, weights=per, minlength=ops.n_settings)


def first_crossing(xs, gains, threshold=1.0):
    """The first x whose gain exceeds `threshold`, or None."""
    for x, g in zip(xs, gains):
        if g > threshold:
            return x
    return None


def compiled_batch(max_batch: int, dp: int) -> int:
    """Largest compiled static-graph batch dp * 2^k that fits under `max_batch` (0 if none does)."""
    if max_batch < dp:
        return 0
    b = dp
    while b * 2 <= max_batch:
        b *= 2
    return b


def fused_launch_s(combo: Combo, kernels: float) -> float:
    """Launch time of `kernels` graph kernels on the combo's hardware, priced by the roofline."""
    b = OpBuilder(1)
    b.add("fused_kernel", "elementwise", count=kernels)
    return float(price(b.build(), combo.hardware, combo.launch)[0])


def fused_step_s(combo: Combo, batch: float, context: float) -> tuple[float, float]:
    """(decode step seconds with two fused kernels per layer, step seconds as priced op by op)."""
    cols, _ = price_combo(combo, [batch], [context], [1])
    step = cols["step_ms"][0] * 1e-3
    overheads = (cols["launch_ms"][0] + cols["fixed_ms"][0]) * 1e-3   # launches + per-kernel fixed time
    fused = step - overheads + fused_launch_s(combo, 2 * combo.model.layers + 2)
    return fused, step


def max_batch(combo: Combo, context: float) -> int:
    cached = combo.kv_policy.cached_tokens(combo, combo.attention.cached_tokens(combo, np.array([context])))
    return int(memory.max_batch(combo, cached)[0])


# ---- the reproduction -----------------------------------------------------------------------------------
@reproduction("snapstream_sn40l")
def snapstream_sn40l(sc) -> Reproduction:
    """SnapStream Tables 4-5 on SN40L-16 (DeepSeek-R1), the naive update's on-chip footprint, H100/B200 nodes."""
    pv = paper_values("snapstream")
    hw = next((h for h in sc.hardware if h.name == "SN40L-16"), None) or load_hardware("SN40L-16")
    model = next((m for m in sc.models if m.name == "DeepSeek-R1"), None) or load_model("DeepSeek-R1")
    rep = Reproduction("SnapStream (seeds/003) on SN40L-16: DeepSeek-R1, TP16 + attention DP16, bf16 KV")
    scale = pv["mtp_tokens_per_forward"]["value"]
    dp = 16

    # the scenario's attention value (its MLA cache layout) is used for every combo
    att = sc.doc.get("strategies", {}).get("attention", ["dense"])[0] if sc.doc else "dense"

    def combo(policy="full", h=hw, tp=16, d=dp):
        return make(h, model, attention=att, kv_policy=policy, tp=tp, attn_dp=d)

    base = combo()
    mtp = chain_tokens_per_round(pv["mtp_acceptance"]["value"], 2)
    rep.add("MTP tokens per forward (80 % acceptance, 2 drafts)", scale, mtp, "tokens",
            "chain formula 1 + a + a^2; throughput below uses the paper's 2.4", 0.15)
    for row in pv["table5"]["rows"]:
        P, bud = float(row["prefill"]), row["budget"]
        snap = combo({"snapstream": {"budget_tokens": bud}})
        tag = f"{int(P) // 1024}K"
        mb_f, mb_s = max_batch(base, P), max_batch(snap, P)
        cb_f, cb_s = compiled_batch(mb_f, dp), compiled_batch(mb_s, dp)
        rep.add(f"max batch, full KV, {tag}", row["batch_full"], cb_f, "seqs",
                f"memory allows {mb_f}; compiled sizes 16*2^k", 0.0)
        rep.add(f"max batch, SnapStream {bud // 1024}K, {tag}", row["batch_snap"], cb_s, "seqs",
                f"memory allows {mb_s}", 0.0)
        tf = row["batch_full"] / fused_step_s(base, row["batch_full"], P)[0] * scale
        ts = row["batch_snap"] / fused_step_s(snap, row["batch_snap"], P)[0] * scale
        rep.add(f"throughput, full KV, {tag}, paper batch {row['batch_full']}", row["tps_full"], tf, "tok/s",
                "x 2.4 (MTP)", 0.15)
        rep.add(f"throughput, SnapStream, {tag}, paper batch {row['batch_snap']}", row["tps_snap"], ts, "tok/s",
                "x 2.4 (MTP)", 0.15)
        rep.add(f"throughput gain, {tag}, paper batches", row["gain"], ts / tf, "x", "", 0.15)
        ef = cb_f / fused_step_s(base, cb_f, P)[0] * scale if cb_f else 0.0
        es = cb_s / fused_step_s(snap, cb_s, P)[0] * scale if cb_s else 0.0
        rep.add(f"throughput, full KV, {tag}, own max batch {cb_f}", row["tps_full"], ef, "tok/s", "end to end", 0.15)
        rep.add(f"throughput, SnapStream, {tag}, own max batch {cb_s}", row["tps_snap"], es, "tok/s", "end to end", 0.15)

    # Table 4: one MoE prefill layer at 128K with SnapStream (budget 32K)
    t4 = pv["table4"]
    snap = combo({"snapstream": {"budget_tokens": 32768}})
    ops = prefill_ops(snap, np.array([float(t4["prefill"]) - 1]))
    t = price(ops, hw, "eager")
    per_call = t / ops.count
    names = np.asarray(ops.names, dtype=object)[ops.name_id]
    groups = {
        "QKV": ("attn_norm", "qkv_a_proj", "qkv_a_norm", "q_b_proj", "kv_b_proj", "rope_kv_write"),
        "MHA": ("attention",),
        "Output Proj": ("o_proj", "allreduce_attn"),
        "Router": ("moe_norm", "moe_router", "moe_gating"),
        "MoE FFN": ("moe_experts_gate_up", "moe_experts_act", "moe_experts_down", "moe_shared_gate_up",
                    "moe_shared_act", "moe_shared_down", "moe_combine", "allreduce_moe"),
        "SnapKV Compression": ("snapkv_scores", "snapkv_pool", "snapkv_topk", "snapkv_gather"),
        "Streaming Ring Buffer": ("ring_buffer",),
    }
    g_time = {g: float(per_call[np.isin(names, ops_)].sum()) for g, ops_ in groups.items()}
    total = sum(g_time.values())
    for g, paper in t4["shares_pct"].items():
        snapk = g in ("SnapKV Compression", "Streaming Ring Buffer")
        rep.add(f"128K MoE prefill layer share: {g}", paper, 100 * g_time[g] / total, "%",
                "Table 4" + ("" if snapk else " (context)"), 0.15 if snapk else None)
    rep.notes.append("Table 4: the prefill TP16 all-reduces are priced unoverlapped over the assumed 100 GB/s P2P "
                     "links (Output Proj, MoE FFN); the paper overlaps them with compute (sec. 4.1, Fig. 6), and its "
                     "MHA runs below the 638 TFLOP/s peak (scaled only by the borrowed GPU attention efficiency)")

    # prefill overhead of SnapStream (TTFT with / without), one prompt
    bound = pv["prefill_overhead_max_pct"]["value"]
    for row in pv["table5"]["rows"]:
        P = float(row["prefill"])
        s = combo({"snapstream": {"budget_tokens": row["budget"]}})
        t_s = price_combo(s, [1], [P], [1])[0]["ttft_ms"][0]
        t_f = price_combo(base, [1], [P], [1])[0]["ttft_ms"][0]
        over = 100 * (t_s / t_f - 1)
        rep.add(f"prefill latency overhead, {int(P) // 1024}K", bound, over, "%",
                f"paper: at most {bound:g} % -> {'within' if over <= bound else 'ABOVE'} the bound", None)

    # the naive decode update's on-chip buffers (appendix A.1)
    no = pv["naive_onchip"]
    naive = combo({"snapstream": {"budget_tokens": no["budget"], "decode_update": "naive"}})
    b_at = 64.0  # SnapStream-32K's maximum batch in Table 5 -> 4 sequences per socket under DP16
    need = float(naive.kv_policy.onchip_bytes(naive, np.array([b_at]), np.array([131072.0]))[0])
    rep.add("naive update: Listing 2 lines 24-29 buffers, 32K budget, batch 64 (4/socket)", no["lines_24_29_mb"],
            need / 1e6, "MB", "K (576) + V (512) latent slices of the socket's sequences", 0.15)
    feas = []
    for b in (16, 32, 64, 128, 256):
        over, why = onchip_overflow(naive, np.array([float(b)]), np.array([131072.0]))
        feas.append(f"B={b}:{'refused' if over[0] else 'ok'}")
    rep.notes.append(f"on-chip rule (SN40L-16, {hw.sram_total_bytes / MIB:.0f} MiB/socket), naive SnapStream-32K: "
                     + ", ".join(feas) + "; the ring-buffer update adds no on-chip buffer and is never refused")

    # sensitivity to the assumed P2P latency
    h2 = hw.scaled(link_latency_s=hw.link_latency_s * 2)
    s1 = fused_step_s(base, 16, 131072.0)[0]
    s2 = fused_step_s(combo(h=h2), 16, 131072.0)[0]
    rep.notes.append(f"P2P latency placeholder x2 (3 -> 6 us per ring step): full-KV 128K batch-16 step "
                     f"{s1 * 1e3:.1f} -> {s2 * 1e3:.1f} ms")
    ms = memory.memory_summary(base)
    free = ms["usable"] - ms["weights"] - ms["workspace"]
    per_seq = float(memory.kv_bytes_per_sequence(base, np.array([131072.0]))[0]) * dp
    rep.notes.append(f"max batch: usable HBM = 0.9 x 64 GiB per socket (the project's convention); free KV memory "
                     f"per socket {free / 1e9:.1f} GB vs {per_seq / 1e9:.1f} GB per 128K sequence with the "
                     f"scenario's cache layout ({att}); with the shared-latent layout "
                     f"({model.kv_bytes_per_token('bf16'):,.0f} B/token) the 128K full-KV batch would be "
                     f"{compiled_batch(max_batch(make(hw, model, tp=16, attn_dp=dp), 131072.0), dp)} instead")

    # beyond the paper: 8-GPU nodes
    for name in ("H100-SXM", "B200"):
        h = load_hardware(name)
        full8 = combo(h=h, tp=8, d=8)
        w = memory.memory_summary(full8)
        if w["weights"] + w["workspace"] >= w["usable"]:
            rep.notes.append(f"{name} x8: DeepSeek-R1 fp8 weights ({w['weights'] / 1e9:.0f} GB per GPU) do not fit in "
                             f"{w['usable'] / 1e9:.0f} GB usable: no batch runs, with or without SnapStream")
            continue
        xs = [8192, 12288, 16384, 24576, 32768, 65536, 131072]
        gains = []
        for c in xs:
            s8 = combo({"snapstream": {"budget_tokens": 8192}}, h=h, tp=8, d=8)
            bf, bs = max(1, max_batch(full8, c)), max(1, max_batch(s8, c))
            tf = bf / fused_step_s(full8, bf, c)[1]
            ts = bs / fused_step_s(s8, bs, c)[1]
            gains.append(ts / tf)
        for row in pv["table5"]["rows"]:
            P, bud = float(row["prefill"]), row["budget"]
            s8 = combo({"snapstream": {"budget_tokens": bud}}, h=h, tp=8, d=8)
            bf, bs = max_batch(full8, P), max_batch(s8, P)
            tf = bf / fused_step_s(full8, max(bf, 1), P)[1] * scale if bf else 0.0
            ts = bs / fused_step_s(s8, max(bs, 1), P)[1] * scale if bs else 0.0
            rep.add(f"beyond: {name} x8 {int(P) // 1024}K: throughput SnapStream {bud // 1024}K / full "
                    f"(max batch {bs} / {bf})", None, ts / tf if tf else float("nan"), "x",
                    f"{tf:,.0f} -> {ts:,.0f} tok/s (x2.4 MTP)", None)
        pay = first_crossing(xs, gains, 1.05)
        rep.notes.append(f"beyond: {name} x8, SnapStream 8K budget: decode throughput gain at max batch by context "
                         + ", ".join(f"{c // 1024}K {g:.2f}x" for c, g in zip(xs, gains))
                         + f"; pays off (gain > 1.05, above the <= 5 % prefill cost) from {pay // 1024 if pay else '-'}K")
    return rep
