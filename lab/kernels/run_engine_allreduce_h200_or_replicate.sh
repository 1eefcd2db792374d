#!/bin/bash
# Lead, session 13: ONE 4-GPU call asked for 4 x H200. On H200s it judges blind grid 12's H200 candidate
# (lab/kernels/run_engine_allreduce_blind12.sh); on H100s it measures blind grid 13 a second time (run_engine_allreduce_blind13.sh),
# a replicate of the family's STANDING grid on another host. Lab script version 10 (both grids), prebuilt modules.
export W=.dev/s24h2
G=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "host GPUs: $G" | tee $OUT/which.txt
if echo "$G" | grep -q H200; then bash $W/run12.sh; else bash $W/run13.sh; fi
