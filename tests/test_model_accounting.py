"""Op accounting against hand-computed values (the arithmetic is written next to each number)."""
import pytest

from simulator.layers import expected_distinct_experts
from simulator.memory import max_batch, weight_bytes, workspace_bytes
from simulator.model import load_model
from simulator.pricing import decode_ops, prefill_ops
from tests.conftest import arr, make_combo


def op(table, name, setting=0):
    df = table.to_frame()
    row = df[(df["name"] == name) & (df["setting"] == setting)]
    assert len(row) == 1, f"{name}: {len(row)} rows"
    return row.iloc[0]


def test_llama31_8b_parameters_and_weight_bytes():
    m = load_model("Llama-3.1-8B")
    # embedding and untied LM head: 128256 * 4096 = 525,336,576 each
    # per layer: q 4096*4096 + k,v 2*4096*1024 + o 4096*4096 = 41,943,040; MLP 3*4096*14336 = 176,160,768;
    #            2 RMSNorm vectors 2*4096 = 8,192  -> 218,112,000; x 32 layers = 6,979,584,000
    # + final norm 4096 -> 6,979,584,000 + 2*525,336,576 + 4,096 = 8,030,261,248
    assert m.total_params() == 8_030_261_248
    c = make_combo(model=m)
    assert weight_bytes(c) == 2 * 8_030_261_248  # bf16: 16,060,522,496 bytes


def test_kv_bytes_per_token():
    # Llama-3.1-8B: K and V (2) x 8 KV heads x 128 dims x 2 bytes x 32 layers = 131,072 bytes
    assert load_model("Llama-3.1-8B").kv_bytes_per_token("bf16") == 131_072
    # Llama-2-7B (MHA): 2 x 32 x 128 x 2 x 32 = 524,288
    assert load_model("Llama-2-7B").kv_bytes_per_token("bf16") == 524_288
    # DeepSeek-V3 MLA latent cache: (kv_lora_rank 512 + rope key 64) x 2 bytes x 61 layers = 70,272
    assert load_model("DeepSeek-V3").kv_bytes_per_token("bf16") == 70_272
    # fp8 latent: 576 x 1 byte x 61 = 35,136 (+ a per-tensor scale, negligible)
    assert load_model("DeepSeek-V3").kv_bytes_per_token("fp8") == pytest.approx(35_136, rel=1e-3)
    # V3.2-Exp adds the indexer's fp8 keys: (128 + 4-byte scale) x 61 = 8,052 -> 78,324
    assert load_model("DeepSeek-V3.2-Exp").kv_bytes_per_token("bf16") == 70_272 + 8_052
    # int4 KV with an fp16 scale + zero per 128 values: 2*8*128*32 = 65,536 values x (0.5 + 4/128) = 34,816
    assert load_model("Llama-3.1-8B").kv_bytes_per_token("int4") == pytest.approx(34_816)


def test_deepseek_v3_total_parameters():
    # DeepSeek-V3 report: 671B total parameters (MTP module excluded)
    assert load_model("DeepSeek-V3").total_params() / 1e9 == pytest.approx(671, abs=1)


def test_decode_projection_and_attention_ops_llama8b():
    c = make_combo()
    ops, plan = decode_ops(c, arr(1, 4), arr(8192, 8192))
    assert plan.query_rows == 1 and plan.tokens_per_round == 1
    q = op(ops, "qkv_proj", 0)
    # [1, 4096] @ [4096, (32 + 2*8) * 128 = 6144]: flops 2*1*4096*6144 = 50,331,648
    assert q.flops == 50_331_648
    # reads 4096*6144*2 weight bytes + 4096*2 activation bytes; writes 6144*2
    assert q.bytes_read == 4096 * 6144 * 2 + 4096 * 2
    assert q.bytes_written == 6144 * 2
    assert q["count"] == 32
    a = op(ops, "attention", 1)
    # B=4 sequences x 8192 tokens x K,V x 8 heads x 128 x 2 bytes = 67,108,864 bytes of KV per layer
    # + the queries (4 x 32 heads x 128 x 2 bytes), read by each of the 8192/256 = 32 split-KV chunks
    assert a.bytes_read == 4 * 8192 * 2 * 8 * 128 * 2 + 32 * 4 * 32 * 128 * 2
    # each split writes fp32 partial outputs + one fp32 log-sum-exp per (sequence, head)
    assert a.bytes_written == 32 * (4 * 32 * 128 + 4 * 32) * 4
    # 4 flops per (query head, key, dim): 4 * 4 * 32 * 8192 * 128
    assert a.flops == 4 * 4 * 32 * 8192 * 128
    # weight traffic of a batch-1 step ~ all weights once: total bytes within 1% of weights + KV
    total = ops.total("bytes_read")[0] + ops.total("bytes_written")[0]
    expected = 2 * 8_030_261_248 - 2 * 525_336_576 + 8192 * 131_072  # embedding table is gathered, not read
    assert total == pytest.approx(expected, rel=0.01)


def test_tensor_parallel_splits_and_adds_allreduce():
    c1, c2 = make_combo(tp=1), make_combo(tp=2)
    o1, _ = decode_ops(c1, arr(8), arr(4096))
    o2, _ = decode_ops(c2, arr(8), arr(4096))
    assert op(o2, "qkv_proj").flops == op(o1, "qkv_proj").flops / 2
    assert op(o2, "mlp_down").bytes_read == pytest.approx(op(o1, "mlp_down").bytes_read / 2, rel=1e-3)
    ar = op(o2, "allreduce_attn")
    assert ar.kind == "collective" and ar.devices == 2 and ar.bytes_read == 8 * 4096 * 2
    assert "allreduce_attn" not in set(o1.to_frame()["name"])


def test_mla_decode_reads_the_latent_once_for_all_heads():
    c = make_combo(model="DeepSeek-V3", tp=8)
    ops, _ = decode_ops(c, arr(2), arr(32768))
    a = op(ops, "attention")
    # latent (512 + 64) x 2 bytes x 32768 tokens x 2 sequences, replicated on every TP rank
    # (+ 2 sequences x 16 heads x 576-wide latent queries x 2 bytes, read by each of 32768/256 splits)
    assert a.bytes_read - 128 * 2 * 16 * 576 * 2 == 2 * 32768 * 576 * 2
    # 16 heads per rank: scores over 576 dims + values over 512 dims, 2 flops per MAC
    assert a.flops == 2 * 2 * 16 * 32768 * (576 + 512)
    # absorbed W_UK: one batched GEMM per layer over the 16 heads of the rank (torch.bmm), not 16 kernels
    qa = op(ops, "q_absorb")
    assert qa["count"] == 61
    assert qa.flops == 2 * 2 * 128 * 512 * 16                        # 2 rows x [128] @ [128, 512] per head
    # fp8 W_UK of every head (1 B + a 4-B scale per 128 x 128 block: c.wbytes) + the queries
    assert c.wbytes == pytest.approx(1 + 4 / (128 * 128))
    assert qa.bytes_read == pytest.approx(16 * (128 * 512 * c.wbytes + 2 * 128 * 2))


def test_moe_expected_distinct_experts():
    # one token touches exactly top_k experts; many tokens touch almost all
    assert expected_distinct_experts(256, 8, 1) == pytest.approx(8)
    assert expected_distinct_experts(256, 8, 2) == pytest.approx(256 * (1 - (1 - 8 / 256) ** 2))
    assert expected_distinct_experts(256, 8, 4096) == pytest.approx(256, rel=1e-6)


def test_moe_layer_counts_deepseek():
    c = make_combo(model="DeepSeek-V3", tp=8)
    ops, _ = decode_ops(c, arr(1), arr(4096))
    assert op(ops, "mlp_gate_up")["count"] == 3  # first_k_dense_replace
    assert op(ops, "moe_experts_gate_up")["count"] == 58
    # batch 1: 8 experts x (7168 x 2*2048/8) fp8 weights per rank
    g = op(ops, "moe_experts_gate_up")
    assert g.bytes_read == pytest.approx(8 * 7168 * 512 * (1 + 4 / 16384) + 8 * 7168 * 2)


def test_prefill_attention_is_causal():
    c = make_combo()
    ops = prefill_ops(c, arr(1000))
    a = op(ops, "attention")
    assert a.flops == 4 * 32 * 128 * (1000 * 1001 / 2)


def test_max_batch_llama8b_h100():
    c = make_combo()
    # usable 0.9 * 80 GiB = 77,309,411,328; weights 16,060,522,496;
    # workspace 8192 tokens * (2*4096 + 2*14336) * 2 bytes = 603,979,776
    assert workspace_bytes(c) == 8192 * (2 * 4096 + 2 * 14336) * 2
    free = 0.9 * 80 * 2**30 - 16_060_522_496 - 603_979_776
    # per sequence at 32K: 32768 * 131072 KV bytes + 128256 * 4 logit bytes
    per_seq = 32768 * 131072 + 128256 * 4
    assert max_batch(c, arr(32768))[0] == int(free // per_seq) == 14


def test_expert_parallel_moves_whole_experts():
    tp8 = make_combo(model="DeepSeek-V3", tp=8, hw="H200")
    tep8 = make_combo(model="DeepSeek-V3", tp=8, ep=8, hw="H200")
    o_tp, _ = decode_ops(tp8, arr(1), arr(4096))
    o_ep, _ = decode_ops(tep8, arr(1), arr(4096))
    g_tp, g_ep = op(o_tp, "moe_experts_gate_up"), op(o_ep, "moe_experts_gate_up")
    # batch 1 touches 8 experts: TP8 reads 1/8 of each of the 8 (7168 x 512); EP8 reads on average one
    # whole expert (7168 x 4096) per device — the same mean bytes, over 8x fewer token-expert pairs
    assert g_ep.bytes_read - 1 * 7168 * 2 == pytest.approx(g_tp.bytes_read - 8 * 7168 * 2)
    assert g_ep.flops == pytest.approx(g_tp.flops)   # 8 pairs x 4096 cols / 8 devices = 8 pairs x 512 cols


def test_attention_data_parallel_splits_the_batch():
    tp = make_combo(model="DeepSeek-V3", tp=8, hw="H200")
    dp = make_combo(model="DeepSeek-V3", tp=8, attn_dp=8, hw="H200")
    o_tp, _ = decode_ops(tp, arr(64), arr(32768))
    o_dp, _ = decode_ops(dp, arr(64), arr(32768))
    # TP8: every device reads the latent of all 64 sequences (replicated); DP8: 8 sequences each, all heads
    # (+ the 576-wide latent queries, re-read by each of the 32768 / 256 = 128 splits)
    kv_tp = 64 * 32768 * 576 * 2 + 128 * 64 * 16 * 576 * 2
    kv_dp = 8 * 32768 * 576 * 2 + 128 * 8 * 128 * 576 * 2
    assert op(o_tp, "attention").bytes_read == kv_tp
    assert op(o_dp, "attention").bytes_read == kv_dp
    assert op(o_dp, "attention").flops == pytest.approx(op(o_tp, "attention").flops)
    assert op(o_dp, "attn_dp_reshard_in").kind == "alltoall"
    assert max_batch(dp, arr(32768))[0] > 7 * max_batch(tp, arr(32768))[0]


def test_dense_repeat_kv_expands_gqa_to_every_query_head():
    from simulator.strategies.base import registry

    c = make_combo(model="Llama-3.1-8B")
    hf = c.__class__(**{**c.__dict__, "attention": registry()["attention"]["dense"](gqa_expand="repeat_kv")})
    native, _ = decode_ops(c, arr(1), arr(65536))
    rep, _ = decode_ops(hf, arr(1), arr(65536))
    kv = 65536 * 2 * 8 * 128 * 2                     # one layer's K and V: 8 KV heads, bf16
    cp = op(rep, "attention_repeat_kv")
    # one broadcast copy of K and one of V per layer (issue 15 round 7: kind copy_broadcast); every element written
    # is one load, 3 of 4 of them re-read a source row (4 query heads per KV head); the working set is one row
    assert cp.kind == "copy_broadcast" and cp["count"] == 64
    assert cp.bytes_written == 4 * kv / 2 and cp.bytes_read == 4 * kv / 2 and cp.reread_bytes == 3 * kv / 2
    assert cp.working_set == 65536 * 128 * 2
    assert cp.bytes_read - cp.reread_bytes == kv / 2               # each source byte from HBM once
    # the kernel then streams all 32 heads: 4x the K/V bytes of the native GQA kernel
    assert op(rep, "attention").bytes_read - op(native, "attention").bytes_read == pytest.approx(3 * kv)
    # the expanded layer is a transient per token: 2 x 32 heads x 128 x 2 B
    assert hf.attention.extra_kv_bytes_per_token(hf) == 2 * 32 * 128 * 2
    assert c.attention.extra_kv_bytes_per_token(c) == 0.0
