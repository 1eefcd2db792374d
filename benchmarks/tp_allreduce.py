"""Tensor-parallel all-reduce per decode step as the serving engines run it: Llama-3.1-70B and DeepSeek-V3.2-Exp
decode at TP 2 / 8 on the H100, per batch: the all-reduce milliseconds of one decode step (every layer's two
all-reduces) and the step, priced with

  before   NCCL's ring with the terms fit_links fitted on H200 eager calls (fixed 30.9 us, 0.756 of the link),
           which the H100 borrowed before its own all-reduce campaign
  nccl     NCCL's ring with the H100 terms fitted on the 2 x H100 campaign (graph-captured device time;
           simulator/calibration/fit_production_allreduce.py)
  vllm     vLLM's / SGLang's custom one-shot / two-shot kernel below 8 MiB, NCCL above (simulator/kernels/allreduce.py)
  trtllm   TensorRT-LLM's AUTO rule: its best-strategy table (one-shot / two-shot / NCCL by SM, TP, fusion, hidden,
           tokens; simulator/kernels/data/trtllm_allreduce_strategy.yaml), NCCL above the 16 MB (2 ranks) / 8 MB
           workspace; Llama-3.1-70B's all-reduces carry the residual add + RMSNorm (its norm kernels leave the step
           where a custom kernel runs); DeepSeek's use the plain (NONE) column

    python benchmarks/tp_allreduce.py
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from hwmodels.opkinds import KINDS
from hwmodels.roofline import price
from hwmodels.spec import load_hardware
from simulator.combo import make_combo
from simulator.pricing import decode_ops

BEFORE = {"fixed_us": 30.887, "link_eff": 0.7559}   # hwmodels/calibration/fitted/H100-SXM.yaml before the campaign
BATCHES = np.array([1.0, 8.0, 64.0, 256.0])
CONTEXT = 8192.0


def _before(hw):
    e = hw.efficiency
    return replace(hw, efficiency=replace(e, fixed_s={**e.fixed_s, "collective": BEFORE["fixed_us"] * 1e-6},
                                          memory={**e.memory, "collective": BEFORE["link_eff"]}))


def step(model: str, tp: int, how: str, attention: str, topk: str):
    hw = load_hardware("H100-SXM")
    if how == "before":
        hw = _before(hw)
    c = make_combo(hw, model, tp=tp, attention=attention, topk=topk)
    c = replace(c, allreduce="nccl" if how in ("before", "nccl") else how)
    ops, _ = decode_ops(c, BATCHES, np.full(len(BATCHES), CONTEXT))
    s = price(ops, hw, c.launch)   # seconds of each op row, its count included
    coll = np.isin(ops.kind, [i for i, k in enumerate(KINDS) if k in ("collective", "allreduce_1shot",
                                                                         "allreduce_1shot_lamport", "allreduce_2shot")])
    total = np.bincount(ops.setting, weights=s, minlength=len(BATCHES)) * 1e3
    ar = np.bincount(ops.setting, weights=np.where(coll, s, 0.0), minlength=len(BATCHES)) * 1e3
    return total, ar


def main() -> None:
    print(f"H100-SXM decode at context {CONTEXT:.0f}: all-reduce ms per step / step ms, by batch {BATCHES.astype(int).tolist()}")
    for model, attention, topk in (("Llama-3.1-70B", "dense", "none"), ("DeepSeek-V3.2-Exp", "dsa", "radix")):
        for tp in (2, 8):
            for how in ("before", "nccl", "vllm", "trtllm"):
                total, ar = step(model, tp, how, attention, topk)
                cells = "  ".join(f"{a:6.2f} / {t:7.2f}" for a, t in zip(ar, total))
                print(f"{model:18s} TP{tp} {how:7s} {cells}")


if __name__ == "__main__":
    main()
