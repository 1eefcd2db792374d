#!/bin/bash
# THE BLIND GRID OF TENSORRT-LLM'S LONE-CTA L2 ROUND on one H200 (simulator/calibration/topk_trtllm_lone.py; priced
# before the call by lab/kernels/predict_topk_trt_lone.py): run_topk_trt_h200_device.sh at its prediction, tag trt_lone
#   bash lab/kernels/run_topk_trt_lone_device.sh
exec bash "$(dirname "$0")/run_topk_trt_h200_device.sh" topk_trtllm_lone_prediction_2026-11-28.csv trt_lone
