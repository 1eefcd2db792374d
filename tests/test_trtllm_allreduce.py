"""TensorRT-LLM's all-reduce strategy table (kernels/data/trtllm_allreduce_strategy.yaml, read from
customAllReduceUtils.h) and its residual-add + RMSNorm fusion in the layer model (modeling_llama.py)."""
import numpy as np

from simulator.kernels import allreduce as A


def test_strategy_table_points_as_the_source_reads_them():
    tok = [1, 16, 32, 48, 512]
    # SM 90, TP8, NONE, hidden 8192: one-shot to 16 tokens, two-shot from 32, NCCL (0) at 512; 48 reads 32's column
    assert list(A.trtllm_choose(8, tok, 8192, "none", 90)) == ["oneshot", "oneshot", "twoshot", "twoshot", "nccl"]
    # the same with RESIDUAL_RMS_NORM: one-shot to 32 tokens, NCCL from 64
    assert list(A.trtllm_choose(8, [32, 64], 8192, "residual_rms_norm", 90)) == ["oneshot", "nccl"]
    # SM 100 keeps one-shot at TP8 / hidden 8192 to 64 tokens
    assert list(A.trtllm_choose(8, [32, 128], 8192, "none", 100)) == ["oneshot", "twoshot"]
    # TP2 / hidden 8192 / NONE alternates at 4 tokens (two-shot) and 16 (one-shot); hidden 5120 reads the 4096 row
    assert list(A.trtllm_choose(2, [4, 16], 8192, "none", 90)) == ["twoshot", "oneshot"]
    assert list(A.trtllm_choose(2, [2, 4], 5120, "none", 90)) == ["twoshot", "oneshot"]
    # past the table (hidden 16384, TP16) -> NCCL_SYMMETRIC, priced as NCCL
    assert A.trtllm_choose(8, 1, 16384)[()] == "nccl" and A.trtllm_choose(16, 1, 4096)[()] == "nccl"
    assert A.trtllm_sm("blackwell") == 100 and A.trtllm_sm("hopper") == 90 and A.trtllm_sm("ampere") == 90


def _norm_counts(engine, model, tp, batch):
    from simulator.combo import make_combo
    from simulator.engine.runtime import load_profile
    from simulator.pricing import decode_ops

    c = load_profile(engine).apply_collectives(make_combo("H100-SXM", model, tp=tp, attention="dense"))
    ops, _ = decode_ops(c, np.array([float(batch)]), np.array([4096.0]))
    names = np.asarray(ops.names)[ops.name_id]
    cnt = {n: float(ops.count[names == n].sum()) for n in ("attn_norm", "mlp_norm", "final_norm")}
    ar = np.char.startswith(names.astype(str), "allreduce")
    return cnt, ops.bytes_written[ar], ops.bytes_read[ar]


def test_trtllm_fuses_the_norms_into_the_allreduce_where_the_source_does():
    layers = 80
    cnt, wr, rd = _norm_counts("trtllm", "Llama-3.1-70B", 8, 1)
    # one token: the fused call is one-shot; only layer 0's input norm runs on its own
    assert cnt == {"attn_norm": 1.0, "mlp_norm": 0.0, "final_norm": 0.0}
    assert np.allclose(wr, 2.0 * rd)          # the epilogue's extra read + write
    cnt, wr, _ = _norm_counts("vllm-v1", "Llama-3.1-70B", 8, 1)
    assert cnt == {"attn_norm": layers, "mlp_norm": layers, "final_norm": 1.0} and not wr.any()
    # 64 tokens at TP8: the table's RESIDUAL_RMS_NORM entry is NCCL, whose norm runs as its own kernel
    cnt, wr, _ = _norm_counts("trtllm", "Llama-3.1-70B", 8, 64)
    assert cnt == {"attn_norm": layers, "mlp_norm": layers, "final_norm": 1.0} and not wr.any()
    # hidden 4096 (Llama-3.1-8B): no fusion ("accuracy issues" of small models)
    cnt, wr, _ = _norm_counts("trtllm", "Llama-3.1-8B", 2, 1)
    assert cnt == {"attn_norm": 32.0, "mlp_norm": 32.0, "final_norm": 1.0} and not wr.any()
