#!/bin/bash
# TENSORRT-LLM'S TORCH-OP TOP-K GRIDS on one H200 (simulator/calibration/topk_trtllm_op.py; priced before each call by
# lab/kernels/predict_topk_trt_op.py [--split | --lead]): run_topk_trt_h200_device.sh at the op grid's prediction,
# tag trt_op (the first grid: the engine's dispatch and the kernel's at 31 shapes), or the arguments given:
#   bash lab/kernels/run_topk_trt_op_device.sh [PREDICTION_CSV TAG]
# (topk_trtllm_op_split_prediction_2026-11-28.csv trt_opsplit; topk_trtllm_op_lead_prediction_2026-11-28.csv trt_oplead)
exec bash "$(dirname "$0")/run_topk_trt_h200_device.sh" "${1:-topk_trtllm_op_prediction_2026-11-28.csv}" "${2:-trt_op}"
