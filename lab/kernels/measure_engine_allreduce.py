"""Multi-GPU campaign: the engines' OWN custom all-reduce kernels at decode sizes, as flashinfer-python 0.6.4 ships them
(JIT-built on the device): vLLM's custom all-reduce (flashinfer/data/include/flashinfer/comm/vllm_custom_all_reduce.cuh,
"refer to vllm v0.8.2 csrc/custom_all_reduce.cuh": cross_device_reduce_1stage / _2stage, 36 blocks x 512 threads, the
kernel's own one-/two-shot choice) and TensorRT-LLM's all-reduce fusion (include/flashinfer/comm/
trtllm_allreduce_fusion.cuh: allreduce_fusion_kernel_oneshot_lamport / _twoshot_sync, plain all-reduce and all-reduce +
residual add + RMSNorm, one-shot and two-shot forced).

    python lab/kernels/measure_engine_allreduce.py --out DIR [--worlds 4,2] [--impls vllm,trtllm] [--timeout 100]
                                                   [--grid campaign|blind4|...|blind24|blind25]
                                                   [--protocol A|B|AB] [--smoke]

Process setup and timing follow lab/kernels/measure_allreduce.py: one process per GPU (torch.distributed NCCL group for
the IPC handle exchange and the barriers), every call captured `calls` times back to back in one CUDA graph, each of
REPS timed replays (one more discarded) starts behind a host barrier and a spin kernel, CUDA events bracket it, the time
per call is the MAX over the ranks; rows are appended to the CSV as soon as they are measured. A world of g ranks runs
on GPUs 0..g-1. NVLink multicast stays off (NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1,
NVSHMEM_DISABLE_NVLS=1 forced here and inherited by every worker); the workspaces are plain cudaMalloc + CUDA IPC.

vLLM rows: the input tensor is registered the way vLLM's CUDA-graph path does it (captured unregistered, then
get_graph_buffer_ipc_meta / all-gather / register_graph_buffers), so no staging copy is in the graph. TensorRT-LLM rows:
the workspace is laid out as flashinfer's trtllm_create_ipc_workspace_for_all_reduce_fusion lays it out ([comm buffer,
barrier flags, 3 Lamport buffers] per rank + 5 local ints), built here so that only trtllm_allreduce_fusion.cu is
compiled (the Lamport buffers are filled with -0.0, as trtllm_lamport_initialize does); launch_with_pdl off,
trigger_completion_at_end on, fp32 accumulation on.

Writes DIR/engine_allreduce_<device>_<date>.csv: impl (vllm_oneshot / vllm_twoshot as the kernel picks,
trtllm_ar_oneshot / trtllm_ar_twoshot / trtllm_arnorm_oneshot / trtllm_arnorm_twoshot), world, tokens, hidden, bytes
(= tokens x hidden x 2, bf16), median / p20 / p80 microseconds per call, calls per replay, a note (WRONG when the
result was checked and was not right), versions. --smoke (no CUDA) only checks the grid and the CSV writer.

--protocol (script version 18, grid 21): A = the timing every earlier grid used (REPS 7 replays, _calls: 40 calls a
replay at <= 1 MiB, 10 up to 16 MiB, 4 above); B = REPS_B 21 replays of 40 calls a replay up to 16 MiB (4 above, as A);
AB = both on every row in the same process, back to back (A first on even rows, B first on odd ones), each protocol to
its own CSV (engine_allreduce_<grid><protocol>_<device>_<date>.csv). Same statistic (median over the replays of the max
over the ranks of the time per call). Default A up to script version 18 (the CSV name then has no protocol letter, as
before); from version 19 (grid 22 on) the default is B (the CSV then named engine_allreduce_<grid>B_*): protocol A's rows
carry the ranks' start skew / calls (simulator/calibration/engine_allreduce_grid21.py, _grid22.py); pass --protocol A for
the earlier grids' timing.
"""
from __future__ import annotations

import argparse
import csv
import ctypes
import datetime as dt
import faulthandler
import os
import statistics
import sys
import time
import traceback
from pathlib import Path

MULTICAST_OFF = (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"), ("NVSHMEM_DISABLE_NVLS", "1"))
for _k, _v in MULTICAST_OFF:
    os.environ[_k] = _v

SCRIPT_VERSION = 22                           # 2: --grid blind4 (the shapes only); 3: --grid blind6, grid-named CSV;
#                                               4: --grid blind7; 5: --grid blind8 (shapes per rank count); 6: --grid blind9
#                                               7: --grid blind10; 8: --grid blind11; 9: --grid blind12
#                                               10: --grid blind13; 11: --grid blind14; 12: --grid blind15
#                                               13: --grid blind16; 14: --grid blind17 (2 ranks only)
#                                               15: --grid blind18; 16: --grid blind19
#                                               17: --grid blind20 (2 ranks only)
#                                               18: --grid blind21 (2 ranks only), --protocol A|B|AB
#                                               19: --grid blind22 (4 and 2 ranks), default --protocol B
#                                               20: --grid blind23 (4 and 2 ranks; + a 2-rank 12-30 MiB diagnostic)
#                                               21: --grid blind24 (4 and 2 ranks; H100 or H200)
#                                               22: --grid blind25 (4 and 2 ranks; H200; six other models' hiddens)
TOKENS = (1, 4, 16, 64, 128, 256, 512)
HIDDENS = (4096, 8192)
LARGE = ((1024, 8192), (2048, 8192))          # 16 and 32 MiB: past vLLM's 8 MiB cap, measured anyway
REPS = 7
#: --protocol B: replays and calls a replay (lab/kernels/measure_engine_allreduce.py --protocol; grid 21)
REPS_B = 21
CALLS_B = 40
PROTOCOL_ENV = "ENGINE_AR_PROTOCOL"
VLLM_CTAS = 36                                # vLLM CustomAllreduce default block_limit (kMaxBlocks)
MAX_BYTES = 2048 * 8192 * 2
FIELDS = ["impl", "world", "tokens", "hidden", "bytes", "median_us", "p20_us", "p80_us", "calls", "note", "device",
          "torch", "cuda", "flashinfer", "driver", "date", "script_version"]


#: --grid blind4: shapes in none of the earlier campaigns (token counts and hidden sizes not measured before), for the
#: blind test of the engines' fitted terms at 4 ranks (simulator/calibration/engine_allreduce_grid4.py blind4_grid)
BLIND4_TOKENS = (2, 8, 32, 96, 192, 384, 768)
BLIND4_HIDDENS = (5120, 7168)
GRID_ENV = "ENGINE_AR_GRID"
#: --grid blind6: 2 and 4 ranks, token counts and hidden sizes in none of the earlier campaigns (the campaign's 1-2048 x
#: 4096 / 8192, blind4's 2-768 x 5120 / 7168), for the blind test of the per-kernel structure (no flag barrier in the
#: Lamport one-shot, the fused RMSNorm's serialized reductions; simulator/calibration/engine_allreduce_grid6.py blind6_grid)
BLIND6_TOKENS = (3, 6, 10, 24, 48, 80, 160, 320, 640)
BLIND6_HIDDENS = (3072, 6144)
BLIND6_EXTRA = ((1280, 6144),)                # 15 MiB: past vLLM's 8 MiB cap, a large-message control


#: --grid blind7: 2 and 4 ranks, hidden 4096 / 5120 / 7168 / 8192 at token counts in none of the earlier grids (campaign,
#: blind4, blind6), 18.75 MiB past vLLM's cap as a control (simulator/calibration/engine_allreduce_grid7.py BLIND7_SHAPES)
BLIND7_SHAPES = ((5, 4096), (7, 4096), (40, 4096), (112, 4096), (448, 4096),
                 (5, 5120), (20, 5120), (56, 5120), (224, 5120),
                 (12, 7168), (28, 7168), (88, 7168), (176, 7168),
                 (14, 8192), (44, 8192), (300, 8192), (1200, 8192))

#: --grid blind8: 4 ranks (BLIND8_SHAPES) with a few 2-rank controls (BLIND8_CONTROL), token counts in none of the earlier
#: grids; the 4-rank messages sit just below and just above whole waves of vLLM's two-shot (36 x 512 threads x 16 B x 4
#: ranks = 1.125 MiB per wave; simulator/calibration/engine_allreduce_grid8.py BLIND8_SHAPES)
BLIND8_SHAPES = ((9, 4096), (36, 4096), (66, 4096), (140, 4096), (150, 4096), (280, 4096), (296, 4096), (440, 4096),
                 (570, 4096),
                 (11, 8192), (30, 8192), (76, 8192), (136, 8192), (150, 8192), (220, 8192), (356, 8192), (600, 8192),
                 (13, 3584), (52, 3584), (168, 3584), (330, 3584), (900, 3584),
                 (17, 5120), (120, 5120), (230, 5120), (240, 5120))
BLIND8_CONTROL = ((36, 4096), (150, 8192), (330, 3584), (900, 3584))

#: --grid blind9: 4 ranks (BLIND9_SHAPES: messages of 14-64 KiB for TensorRT-LLM's one- and two-shot, plain and + RMSNorm;
#: vLLM's two-shot at several fills of a loop step, steps 1-7, incl. exactly whole steps; TensorRT-LLM's two-shot at
#: 2-8 MiB) with 2-rank controls (BLIND9_CONTROL, the Lamport one-shot at 2 ranks, 48 KiB - 7.8 MiB), (tokens, hidden)
#: in none of the earlier grids (simulator/calibration/engine_allreduce_grid9.py BLIND9_SHAPES)
BLIND9_SHAPES = ((2, 4096), (6, 4096), (5, 3584), (8, 3584), (12, 2560), (4, 5120), (3, 8192), (1, 7168), (6, 5120),
                 (20, 4096), (48, 4096), (90, 4096), (130, 4096), (144, 4096), (160, 3584), (110, 5120), (72, 8192),
                 (74, 7168), (40, 7168),
                 (200, 4096), (216, 4096), (260, 4096), (288, 4096), (112, 8192), (130, 8192), (225, 5120), (320, 3584),
                 (420, 4096), (432, 4096), (200, 8192), (340, 5120), (280, 8192), (500, 4096), (360, 8192), (700, 4096),
                 (1000, 4096), (512, 7168))
BLIND9_CONTROL = ((6, 4096), (48, 4096), (130, 4096), (288, 4096), (500, 4096), (1000, 4096))


#: --grid blind10: 4 ranks (BLIND10_SHAPES: TensorRT-LLM's two-shot at every launch config of the fusion kernel, 1-8 MiB
#: above all, and <= 64 KiB for the fused one-shot) with 2-rank controls (BLIND10_CONTROL), (tokens, hidden) in none of
#: the earlier grids (simulator/calibration/engine_allreduce_grid10.py BLIND10_SHAPES)
BLIND10_SHAPES = ((2, 8192), (7, 2048), (13, 2048), (9, 2560), (7, 3584), (5, 6144), (3, 5120),
                  (18, 4096), (33, 5120), (60, 4096), (52, 7168), (84, 4096), (100, 4096),
                  (124, 4096), (132, 4096), (136, 4096), (170, 4096), (96, 8192), (120, 7168), (180, 5120),
                  (250, 4096), (272, 4096), (300, 4096), (350, 4096), (264, 8192), (460, 4096), (400, 5120),
                  (530, 4096), (640, 4096), (600, 5120), (450, 7168), (800, 4096), (480, 8192), (960, 4096),
                  (140, 8192), (196, 7168), (520, 6144))
BLIND10_CONTROL = ((7, 3584), (132, 4096), (300, 4096), (800, 4096))


#: --grid blind11: 4 ranks (BLIND11_SHAPES) and 2 ranks (BLIND11_CONTROL), >= 4 rows in every (implementation, ranks, size
#: regime) cell, token counts in none of the earlier grids (simulator/calibration/engine_allreduce_grid11.py BLIND11_SHAPES)
BLIND11_SHAPES = ((19, 1536), (21, 1536), (23, 1024), (27, 1024), (29, 1024), (15, 2048),
                  (25, 4096), (37, 4096), (45, 4096), (61, 4096), (39, 5120),
                  (67, 4096), (93, 4096), (115, 4096), (75, 6144), (47, 8192),
                  (131, 4096), (155, 4096), (211, 5120), (247, 4096), (333, 4096), (371, 5120), (505, 4096),
                  (745, 4096), (1023, 4096), (277, 8192), (163, 7168))
BLIND11_CONTROL = ((19, 1536), (23, 1024), (15, 2048), (27, 1024),
                   (31, 2048), (25, 4096), (45, 4096), (93, 4096), (47, 8192), (67, 4096),
                   (131, 4096), (247, 4096), (505, 4096), (1023, 4096), (163, 7168))


#: --grid blind12: 4 x H200 (the H200's own terms judged), 4 ranks (BLIND12_SHAPES) and 2 ranks (BLIND12_CONTROL), >= 4 rows
#: in every (implementation, ranks, size regime) cell, token counts in none of the earlier grids
#: (simulator/calibration/engine_allreduce_grid12.py BLIND12_SHAPES)
BLIND12_SHAPES = ((22, 1024), (26, 1024), (22, 1280),
                  (35, 4096), (43, 4096), (50, 4096), (54, 4096), (57, 3584),
                  (70, 4096), (86, 4096), (99, 4096), (121, 4096), (126, 4096), (58, 8192), (62, 8192),
                  (129, 4096), (189, 4096), (265, 4096), (385, 4096), (550, 4096), (690, 4096), (930, 4096),
                  (123, 7168), (197, 5120), (410, 8192),
                  (34, 768), (38, 768), (41, 768))
BLIND12_CONTROL = ((22, 1024), (26, 1024), (22, 1280),
                   (35, 4096), (50, 4096), (70, 4096), (99, 4096), (58, 8192),
                   (129, 4096), (189, 4096), (265, 4096), (385, 4096), (690, 4096),
                   (34, 768), (38, 768))


#: --grid blind13: 4 x H100, 4 ranks (BLIND13_SHAPES) and 2 ranks (BLIND13_CONTROL), >= 4 rows in every (implementation,
#: ranks, size regime) cell, (tokens, hidden) in no earlier grid (simulator/calibration/engine_allreduce_grid13.py BLIND13_SHAPES)
BLIND13_SHAPES = ((9, 3072), (11, 2048), (14, 1024), (18, 1536), (10, 2560), (12, 2048),
                  (20, 3072), (37, 2048), (44, 3584), (29, 5120), (52, 4096),
                  (68, 4096), (78, 4096), (46, 7168), (100, 5120), (59, 6144),
                  (142, 4096), (184, 4096), (226, 5120), (316, 4096), (260, 6144), (390, 5120), (470, 4096),
                  (330, 7168), (620, 4096), (430, 8192), (500, 7168))
BLIND13_CONTROL = ((9, 3072), (11, 2048), (14, 1024), (18, 1536),
                   (20, 3072), (44, 3584), (52, 4096), (78, 4096), (100, 5120),
                   (142, 4096), (226, 5120), (316, 4096), (390, 5120), (430, 8192), (620, 4096))

#: --grid blind14: 4 x H100, 4 ranks (BLIND14_SHAPES) and 2 ranks (BLIND14_CONTROL), >= 4 rows in every (implementation,
#: ranks, size regime) cell, >= 5 in the Lamport one-shot at 2 ranks, 64 KiB-1 MiB, and vLLM's two-shot at 4 ranks,
#: 512 KiB-1 MiB; (tokens, hidden) in no earlier grid (simulator/calibration/engine_allreduce_grid14.py BLIND14_SHAPES)
BLIND14_SHAPES = ((7, 2560), (13, 1536), (19, 1024), (9, 2048), (6, 3584), (15, 1280),
                  (17, 4096), (27, 3584), (33, 4096), (23, 7168), (41, 5120), (26, 8192),
                  (65, 4096), (36, 7168), (74, 4096), (51, 6144), (45, 8192), (106, 4096), (118, 4096),
                  (133, 4096), (158, 4096), (205, 4096), (117, 8192), (245, 5120), (365, 4096), (282, 6144), (415, 5120),
                  (455, 8192))
BLIND14_CONTROL = ((7, 2560), (13, 1536), (19, 1024), (6, 3584),
                   (17, 4096), (27, 3584), (33, 4096), (23, 7168), (41, 5120), (65, 4096), (51, 6144), (45, 8192),
                   (106, 4096), (118, 4096),
                   (158, 4096), (245, 5120), (365, 4096), (415, 5120), (455, 8192))

#: --grid blind15: 4 x H200 (the H200's refitted terms judged), 4 ranks (BLIND15_SHAPES) and 2 ranks (BLIND15_CONTROL),
#: >= 4 rows in every (implementation, ranks, size regime) cell; (tokens, hidden) in no earlier grid
#: (simulator/calibration/engine_allreduce_grid15.py BLIND15_SHAPES)
BLIND15_SHAPES = ((5, 3072), (11, 1536), (3, 7168), (21, 1280), (25, 1024), (9, 3584),
                  (31, 3072), (47, 4096), (29, 7168), (57, 2048),
                  (75, 4096), (85, 4096), (55, 6144), (95, 5120), (62, 7168), (49, 8192),
                  (145, 5120), (190, 5120), (270, 6144), (350, 5120), (480, 4096), (310, 7168), (400, 8192), (510, 6144))
BLIND15_CONTROL = ((5, 3072), (11, 1536), (3, 7168), (21, 1280), (25, 1024), (9, 3584),
                   (31, 3072), (47, 4096), (75, 4096), (95, 5120), (49, 8192),
                   (145, 5120), (190, 5120), (270, 6144), (350, 5120), (480, 4096), (310, 7168), (400, 8192))

#: --grid blind16: 4 x H100 or 4 x H200, 4 ranks (BLIND16_SHAPES) and 2 ranks (BLIND16_CONTROL), >= 5 rows in every
#: (implementation, ranks, size regime) cell; (tokens, hidden) in no earlier grid
#: (simulator/calibration/engine_allreduce_grid16.py BLIND16_SHAPES)
BLIND16_SHAPES = ((11, 2560), (8, 2560), (14, 2048), (6, 2560), (24, 1024), (15, 1536), (16, 1280),
                  (11, 4096), (21, 3072), (30, 2560), (39, 4096), (27, 5120), (60, 2048),
                  (80, 4096), (92, 5120), (44, 7168), (58, 6144), (39, 8192), (150, 3072), (250, 2048),
                  (200, 5120), (160, 8192), (380, 4096), (480, 6144), (700, 5120), (1000, 3584), (500, 8192))
BLIND16_CONTROL = ((11, 2560), (8, 2560), (14, 2048), (24, 1024), (15, 1536),
                   (21, 3072), (30, 2560), (39, 4096), (60, 2048), (80, 4096), (44, 7168), (150, 3072),
                   (200, 5120), (160, 8192), (380, 4096), (480, 6144), (700, 5120), (500, 8192))

#: --grid blind17: 2 x H100, 2 ranks ONLY (BLIND17_SHAPES; 4 ranks: none), >= 6 rows in every (implementation, size
#: regime) cell; (tokens, hidden) in no earlier grid (simulator/calibration/engine_allreduce_grid17.py BLIND17_SHAPES)
BLIND17_SHAPES = ((3, 4608), (4, 3072), (5, 2048), (9, 1280), (10, 1536), (12, 1024), (17, 1024), (3, 3584),
                  (4, 6144), (7, 1536), (20, 1280), (25, 1280), (31, 1024), (6, 4608), (23, 1280), (15, 1024),
                  (10, 5120), (33, 3072), (70, 2048), (58, 4096), (96, 3584), (37, 7168), (110, 4096), (62, 6144),
                  (134, 8192), (170, 6144), (210, 5120), (270, 4096), (335, 4096), (262, 6144), (318, 5120), (444, 4096),
                  (372, 7168), (425, 6144), (580, 5120), (760, 4096), (470, 8192), (990, 4096),
                  (610, 8192), (860, 6144), (1100, 5120), (1500, 4096), (900, 8192), (1700, 4096))

#: --grid blind18: 4 x H100, 4 ranks (BLIND18_SHAPES) and 2 ranks (BLIND18_CONTROL), >= 6 rows in every (implementation,
#: ranks, size regime) cell; (tokens, hidden) in no earlier grid (simulator/calibration/engine_allreduce_grid18.py)
BLIND18_SHAPES = ((7, 3072), (28, 1024), (19, 1280), (5, 4608), (20, 1536), (16, 2048), (30, 1024),
                  (12, 4096), (23, 3072), (34, 2560), (41, 4096), (26, 5120), (64, 2048),
                  (72, 4096), (88, 5120), (42, 7168), (54, 6144), (36, 8192), (140, 3072), (230, 2048),
                  (185, 5120), (145, 8192), (360, 4096), (440, 6144), (650, 5120), (910, 3584), (490, 8192))
BLIND18_CONTROL = ((7, 3072), (28, 1024), (19, 1280), (5, 4608), (20, 1536), (16, 2048),
                   (23, 3072), (34, 2560), (41, 4096), (64, 2048), (72, 4096), (42, 7168), (140, 3072),
                   (185, 5120), (145, 8192), (360, 4096), (440, 6144), (650, 5120), (490, 8192))

#: --grid blind19: 4 x H100, 4 ranks and 2 ranks (BLIND19_SHAPES both), 14 shapes <= 64 KiB (each 4-rank one-shot cell's
#: target rows), >= 4 rows in every other cell; (tokens, hidden) in no earlier grid (simulator/calibration/engine_allreduce_grid19.py)
BLIND19_SHAPES = ((1, 5120), (2, 3584), (3, 2560), (4, 4608), (8, 3072), (18, 1280), (21, 1024), (6, 2048), (12, 1536),
                  (3, 4096), (8, 4096), (2, 6144), (4, 7168), (14, 1280),
                  (27, 4096), (30, 6144), (57, 2560), (120, 1280), (161, 1536),
                  (130, 3072), (93, 3584), (156, 2048), (183, 1536), (105, 3584),
                  (301, 2560), (201, 8192), (691, 5120), (601, 2048), (841, 4608), (601, 6144))


#: --grid blind20: 2 x H100, 2 ranks ONLY (BLIND20_SHAPES; 4 ranks: none), 8 shapes <= 64 KiB, 12 at 128 KiB-1 MiB, 12 at
#: 1-8 MiB; (tokens, hidden) in no earlier grid (simulator/calibration/engine_allreduce_grid20.py BLIND20_SHAPES)
BLIND20_SHAPES = ((2, 4608), (5, 2560), (11, 1280), (16, 1536), (7, 4608), (1, 6144), (10, 2048), (4, 3584),
                  (19, 4096), (46, 2048), (13, 8192), (31, 4608), (85, 2048), (47, 5120), (63, 4096), (38, 7168),
                  (117, 2560), (53, 6144), (91, 4096), (102, 4608),
                  (66, 8192), (135, 4096), (180, 3584), (97, 7168), (290, 2560), (230, 4608), (196, 6144), (355, 5120),
                  (520, 4096), (410, 7168), (740, 5120), (505, 8192))

#: --grid blind21: 2 x H100, 2 ranks ONLY (BLIND21_SHAPES; 4 ranks: none), 5 shapes <= 64 KiB, 9 at 128 KiB-1 MiB (4 at
#: 0.65-1 MiB), 13 at 1-8 MiB (8 at 1.0-1.4 MiB, just past the harness's 40 -> 10 calls step), every row timed by both
#: protocols (--protocol AB); (tokens, hidden) in no earlier grid (simulator/calibration/engine_allreduce_grid21.py)
BLIND21_SHAPES = ((9, 1536), (13, 1024), (17, 1280), (8, 2048), (17, 1536),
                  (43, 2048), (59, 3072), (34, 6144), (57, 4608), (89, 3072), (83, 4096), (97, 4096), (59, 7168),
                  (61, 8192),
                  (103, 5120), (149, 3584), (87, 6144), (209, 2560), (67, 8192), (137, 4096), (75, 8192), (177, 4096),
                  (310, 4096), (227, 6144), (395, 5120), (350, 8192), (710, 4096))

#: --grid blind22: 4 x H100, 4 ranks AND 2 ranks (BLIND22_SHAPES both), regimes interleaved (a cut run drops rows in every
#: cell, not a regime), every row timed by both protocols (--protocol AB); (tokens, hidden) in no earlier grid
#: (simulator/calibration/engine_allreduce_grid22.py)
BLIND22_SHAPES = ((6, 1536), (29, 4096), (53, 8192), (131, 5120),
                  (10, 1280), (37, 3072), (71, 4096), (245, 4096),
                  (13, 1280), (21, 5120), (79, 5120), (163, 8192),
                  (14, 1536), (45, 4608), (49, 6144), (413, 3584),
                  (20, 1024), (31, 3584), (113, 3584), (297, 7168),
                  (24, 1280), (33, 6144), (67, 7168), (455, 6144),
                  (32, 1024), (41, 2560), (39, 7168), (351, 4608),
                  (13, 2560), (123, 4096), (199, 4608))


#: --grid blind23: 4 x H100, 4 ranks AND 2 ranks (BLIND23_SHAPES both, regimes interleaved), protocol B (the default);
#: at 2 ranks BLIND23_DIAG last (12-30 MiB, a diagnostic outside the 31 cells); (tokens, hidden) in no earlier grid
#: (simulator/calibration/engine_allreduce_grid23.py)
BLIND23_SHAPES = ((93, 6144), (11, 1024), (43, 3072), (57, 5120), (157, 4096), (18, 1024), (61, 2560), (69, 4608),
                  (109, 7168), (12, 1280), (17, 7168), (85, 3584), (187, 5120), (8, 1536), (35, 5120), (43, 8192),
                  (241, 4608), (7, 1280), (47, 4608), (101, 4096), (143, 8192), (9, 1024), (25, 8192), (63, 7168),
                  (311, 5120), (16, 1024), (73, 1536), (119, 3584), (267, 7168), (23, 4096), (81, 6144), (389, 6144),
                  (301, 8192), (445, 7168))
BLIND23_DIAG = ((768, 8192), (1100, 7168), (1500, 6144), (1900, 8192))

#: --grid blind24: 4 x H100 or 4 x H200, 4 ranks AND 2 ranks (BLIND24_SHAPES both, regimes interleaved), protocol B (the
#: default); (tokens, hidden) in no earlier grid (simulator/calibration/engine_allreduce_grid24.py)
BLIND24_SHAPES = ((99, 6144), (5, 1024), (29, 3072), (55, 5120), (151, 4096), (13, 1152), (53, 2560), (65, 4608),
                  (113, 7168), (10, 1024), (19, 7168), (89, 3584), (179, 5120), (11, 2304), (37, 5120), (41, 8192),
                  (233, 4608), (8, 1280), (51, 4608), (105, 4096), (139, 8192), (27, 1152), (27, 8192), (61, 7168),
                  (317, 5120), (5, 1536), (77, 1536), (123, 3584), (259, 7168), (49, 2048), (59, 8192), (379, 6144),
                  (293, 8192), (433, 7168))

#: --grid blind25: 4 x H200, 4 ranks AND 2 ranks (BLIND25_SHAPES both, regimes interleaved; the hiddens of six other real
#: models), protocol B; (tokens, hidden) in no earlier grid (simulator/calibration/engine_allreduce_grid25.py)
BLIND25_SHAPES = ((149, 3840), (9, 896), (83, 896), (71, 3840), (211, 2880), (23, 896), (101, 1152), (53, 5376),
                  (307, 2304), (7, 1152), (61, 2304), (131, 2304), (139, 5376), (19, 1152), (53, 2880), (113, 2880),
                  (251, 3840), (5, 2304), (47, 3840), (83, 5376), (397, 2880), (13, 2304), (37, 5376), (97, 3840),
                  (523, 2304), (7, 2880), (73, 2880), (173, 2880), (331, 3840), (5, 3840), (89, 2304), (223, 2304),
                  (601, 3840), (1031, 2880), (653, 5376))

def grid(world=None):
    if os.environ.get(GRID_ENV) == "blind25":
        return list(BLIND25_SHAPES)
    if os.environ.get(GRID_ENV) == "blind24":
        return list(BLIND24_SHAPES)
    if os.environ.get(GRID_ENV) == "blind23":
        return list(BLIND23_SHAPES) + (list(BLIND23_DIAG) if world == 2 else [])
    if os.environ.get(GRID_ENV) == "blind22":
        return list(BLIND22_SHAPES)
    if os.environ.get(GRID_ENV) == "blind21":
        return list(BLIND21_SHAPES) if world == 2 else []
    if os.environ.get(GRID_ENV) == "blind20":
        return list(BLIND20_SHAPES) if world == 2 else []
    if os.environ.get(GRID_ENV) == "blind19":
        return list(BLIND19_SHAPES)
    if os.environ.get(GRID_ENV) == "blind18":
        return list(BLIND18_CONTROL if world == 2 else BLIND18_SHAPES)
    if os.environ.get(GRID_ENV) == "blind17":
        return list(BLIND17_SHAPES) if world == 2 else []
    if os.environ.get(GRID_ENV) == "blind16":
        return list(BLIND16_CONTROL if world == 2 else BLIND16_SHAPES)
    if os.environ.get(GRID_ENV) == "blind15":
        return list(BLIND15_CONTROL if world == 2 else BLIND15_SHAPES)
    if os.environ.get(GRID_ENV) == "blind14":
        return list(BLIND14_CONTROL if world == 2 else BLIND14_SHAPES)
    if os.environ.get(GRID_ENV) == "blind13":
        return list(BLIND13_CONTROL if world == 2 else BLIND13_SHAPES)
    if os.environ.get(GRID_ENV) == "blind12":
        return list(BLIND12_CONTROL if world == 2 else BLIND12_SHAPES)
    if os.environ.get(GRID_ENV) == "blind11":
        return list(BLIND11_CONTROL if world == 2 else BLIND11_SHAPES)
    if os.environ.get(GRID_ENV) == "blind10":
        return list(BLIND10_CONTROL if world == 2 else BLIND10_SHAPES)
    if os.environ.get(GRID_ENV) == "blind9":
        return list(BLIND9_CONTROL if world == 2 else BLIND9_SHAPES)
    if os.environ.get(GRID_ENV) == "blind8":
        return list(BLIND8_CONTROL if world == 2 else BLIND8_SHAPES)
    if os.environ.get(GRID_ENV) == "blind7":
        return list(BLIND7_SHAPES)
    if os.environ.get(GRID_ENV) == "blind4":
        return [(t, h) for h in BLIND4_HIDDENS for t in BLIND4_TOKENS]
    if os.environ.get(GRID_ENV) == "blind6":
        return [(t, h) for h in BLIND6_HIDDENS for t in BLIND6_TOKENS] + list(BLIND6_EXTRA)
    return [(t, h) for h in HIDDENS for t in TOKENS] + list(LARGE)


def _calls(nbytes: int, protocol: str = "A") -> int:
    if protocol == "B":
        return CALLS_B if nbytes <= (1 << 24) else 4
    return 40 if nbytes <= (1 << 20) else (10 if nbytes <= (1 << 24) else 4)


def _reps(protocol: str = "A") -> int:
    return REPS_B if protocol == "B" else REPS


def _protocols(row: int = 0) -> list:
    """The protocols of this run (PROTOCOL_ENV: A, B or AB), AB alternating which comes first row by row."""
    p = list(os.environ.get(PROTOCOL_ENV, "A"))
    return p[::-1] if row % 2 and len(p) > 1 else p


def _csv_for(csv_path, protocol: str) -> str:
    """The CSV of `protocol` (csv_path: a dict protocol -> path, or one path)."""
    return csv_path[protocol] if isinstance(csv_path, dict) else csv_path


def _say(tag: str, msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')} {tag}] {msg}", flush=True)


def _row(impl, world, t, h, xs, calls, note="") -> dict:
    xs = sorted(xs)
    return {"impl": impl, "world": world, "tokens": t, "hidden": h, "bytes": t * h * 2,
            "median_us": round(statistics.median(xs), 3), "p20_us": round(xs[len(xs) // 5], 3),
            "p80_us": round(xs[(4 * len(xs)) // 5], 3), "calls": calls, "note": note}


def _put(path: str, meta: dict, row: dict) -> None:
    with open(path, "a", newline="") as f:
        csv.DictWriter(f, fieldnames=FIELDS).writerow({**row, **meta})
    _say("row", f"{row['impl']:22s} g{row['world']} T{row['tokens']:5d} H{row['hidden']} {row['bytes']:>9d} B: "
                f"{row['median_us']:9.2f} us (p20 {row['p20_us']:.2f}, p80 {row['p80_us']:.2f}) {row['note']}")


# ---- flashinfer modules ----------------------------------------------------------------------------------------------

def vllm_module():
    from flashinfer.jit.comm import gen_vllm_comm_module
    return gen_vllm_comm_module().build_and_load()


def fusion_module():
    """trtllm_allreduce_fusion.cu alone (flashinfer's trtllm_comm spec also compiles the MoE fusion and the older
    custom all-reduce, which this campaign does not run)."""
    from flashinfer.jit import env as jit_env
    from flashinfer.jit.core import current_compilation_context, gen_jit_spec
    flags = current_compilation_context.get_nvcc_flags_list(supported_major_versions=[9, 10])
    return gen_jit_spec("trtllm_ar_fusion_only", [jit_env.FLASHINFER_CSRC_DIR / "trtllm_allreduce_fusion.cu"],
                        extra_cuda_cflags=flags).build_and_load()


class _Cai:
    """A raw device pointer as a torch tensor (__cuda_array_interface__), to fill IPC buffers."""

    def __init__(self, ptr: int, n: int, typestr: str):
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": typestr, "data": (ptr, False), "version": 3,
                                         "strides": None}


def _view(ptr: int, nbytes: int, typestr: str = "<i2"):
    import torch
    item = int(typestr[-1])
    return torch.as_tensor(_Cai(ptr, nbytes // item, typestr), device="cuda")


_RT = None


class _IpcHandle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_byte * 64)]


def _cudart():
    """The process's CUDA runtime (the libcudart torch loaded, found in /proc/self/maps as flashinfer's cuda_ipc
    does; flashinfer.comm itself is not imported: its package pulls in pynvml / cuda-python / NVSHMEM helpers)."""
    global _RT
    if _RT is None:
        path = None
        with open("/proc/self/maps") as f:
            for line in f:
                if "libcudart" in line and "/" in line:
                    path = line[line.index("/"):].strip()
                    break
        _RT = ctypes.CDLL(path or "libcudart.so")
        _RT.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
        _RT.cudaIpcGetMemHandle.argtypes = [ctypes.POINTER(_IpcHandle), ctypes.c_void_p]
        _RT.cudaIpcOpenMemHandle.argtypes = [ctypes.POINTER(ctypes.c_void_p), _IpcHandle, ctypes.c_uint]
        _say("ipc", f"cudart: {path}")
    return _RT


def _shared(nbytes: int, fill: int | None = 0):
    """cudaMalloc + CUDA IPC handles exchanged over the group (what flashinfer.comm.create_shared_buffer does): the
    list of every rank's pointer, opened in this process; the own part filled (16-bit value) unless fill is None."""
    import torch
    import torch.distributed as dist
    rt, rank, world = _cudart(), dist.get_rank(), dist.get_world_size()
    ptr = ctypes.c_void_p()
    assert rt.cudaMalloc(ctypes.byref(ptr), nbytes) == 0, "cudaMalloc failed"
    h = _IpcHandle()
    assert rt.cudaIpcGetMemHandle(ctypes.byref(h), ptr) == 0, "cudaIpcGetMemHandle failed"
    got = [None] * world
    dist.all_gather_object(got, ctypes.string_at(ctypes.addressof(h), 64))
    ptrs = []
    for r, hb in enumerate(got):
        if r == rank:
            ptrs.append(ptr.value)
            continue
        o, hh = ctypes.c_void_p(), _IpcHandle()
        ctypes.memmove(ctypes.byref(hh), hb, 64)
        assert rt.cudaIpcOpenMemHandle(ctypes.byref(o), hh, 1) == 0, f"cudaIpcOpenMemHandle of rank {r} failed"
        ptrs.append(o.value)
    if fill is not None:
        _view(ptr.value, nbytes).fill_(fill)
        torch.cuda.synchronize()
    dist.barrier()
    return ptrs


# ---- timing ----------------------------------------------------------------------------------------------------------

def _time_graph(capture_fn, calls: int, after_capture=None, reps: int = REPS) -> list:
    """Per-call device microseconds (max over ranks) of REPS replays of a graph of `calls` capture_fn() calls."""
    import torch
    import torch.distributed as dist
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import _timing as T
    torch.cuda.synchronize()
    dist.barrier()
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    with torch.cuda.graph(g, stream=s, capture_error_mode="thread_local"):
        for _ in range(calls):
            capture_fn()
    torch.cuda.synchronize()
    if after_capture is not None:
        after_capture()
    xs = T.replay_max_over_ranks(g, calls, reps)
    del g
    return xs


def _all_ok(ok: bool) -> bool:
    import torch
    import torch.distributed as dist
    t = torch.tensor([0.0 if ok else 1.0], device="cuda")
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item() == 0.0


def _inputs(rank: int, world: int, n: int, seed: int):
    """Small integers (exact in bf16 sums, never -0.0) per rank, and their sum."""
    import torch
    gen = torch.Generator().manual_seed(seed)
    xs = [torch.randint(-3, 4, (n,), generator=gen).to(torch.bfloat16) for _ in range(world)]
    want = torch.stack([x.float() for x in xs]).sum(0)
    return xs[rank].cuda(), want.cuda()


# ---- vLLM ------------------------------------------------------------------------------------------------------------

def _vllm(rank, world, csv_path, meta):
    import torch
    import torch.distributed as dist
    mod = vllm_module()
    meta_ptrs = _shared(int(mod.meta_size()) + MAX_BYTES, fill=0)
    rank_data = torch.empty(8 << 20, dtype=torch.uint8, device="cuda")
    fa = mod.init_custom_ar(meta_ptrs, rank_data, rank, True)
    reg = _shared(MAX_BYTES, fill=None)
    mod.register_buffer(fa, reg)
    for i, (t, h) in enumerate(grid(world)):
        n, nbytes = t * h, t * h * 2
        # the kernel's own choice (vllm_custom_all_reduce.cuh CustomAllreduce::allreduce)
        two = world > 2 and not ((world <= 4 and nbytes < 512 * 1024) or (world <= 8 and nbytes < 256 * 1024))
        impl = "vllm_twoshot" if two else "vllm_oneshot"
        x, want = _inputs(rank, world, n, seed=n + 1)
        out = torch.full_like(x, float("nan"))
        try:
            mod.all_reduce(fa, x, out, reg[rank], MAX_BYTES, VLLM_CTAS)     # eager: staged through the registered buffer
            torch.cuda.synchronize()
            ok0 = bool(torch.equal(out.float(), want))

            def reg_graph():
                hd, off = mod.get_graph_buffer_ipc_meta(fa)
                got = [None] * world
                dist.all_gather_object(got, (list(hd), list(off)))
                mod.register_graph_buffers(fa, [g[0] for g in got], [g[1] for g in got])
            for proto in _protocols(i):
                calls = _calls(nbytes, proto)
                out.fill_(float("nan"))
                xs = _time_graph(lambda: mod.all_reduce(fa, x, out, 0, 0, VLLM_CTAS), calls, after_capture=reg_graph,
                                 reps=_reps(proto))
                ok = _all_ok(ok0 and bool(torch.equal(out.float(), want)))
                if rank == 0:
                    _put(_csv_for(csv_path, proto), meta, _row(impl, world, t, h, xs, calls, "" if ok else "WRONG"))
        except Exception as e:  # noqa: BLE001
            _say(f"vllm r{rank}", f"T{t} H{h}: {type(e).__name__}: {str(e)[:300]}")
            traceback.print_exc()
            return
    mod.dispose(fa)


# ---- TensorRT-LLM all-reduce fusion ----------------------------------------------------------------------------------

def _trtllm(rank, world, csv_path, meta):
    import torch
    mod = fusion_module()
    elems = MAX_BYTES // 2
    comm_size = world * elems * 2                           # lamport_comm_size (bf16)
    buf = _shared(-(-world * elems * 2 // (1 << 21)) * (1 << 21), fill=0)
    flags = _shared(1 << 21, fill=0)                        # world x kBarrierFlagCount ints, 2 MiB aligned
    lam = _shared(-(-3 * comm_size // (1 << 21)) * (1 << 21), fill=-32768)   # -0.0 in 16-bit halves
    local = torch.tensor([0, 0, 0, comm_size, 0], dtype=torch.int32, device="cuda")
    ws = torch.tensor(buf + flags + lam + [local.data_ptr()], dtype=torch.int64, device="cuda")
    import torch.distributed as dist
    dist.barrier()
    gamma = (torch.rand(8192, device="cuda") + 0.5).to(torch.bfloat16)
    for i, (t, h) in enumerate(grid(world)):
        n, nbytes = t * h, t * h * 2
        x, want = _inputs(rank, world, n, seed=n + 7)
        res = torch.randint(-2, 3, (n,), device="cuda").to(torch.bfloat16)
        for pattern, pname in ((0, "ar"), (1, "arnorm")):
            for one in (True, False):
                if not one and t <= world:    # the two-shot kernel splits tokens over ranks (flashinfer asserts >)
                    continue
                impl = f"trtllm_{pname}_{'oneshot' if one else 'twoshot'}"
                ar_out = torch.empty_like(x) if pattern == 0 else None
                r_out = torch.empty_like(x) if pattern == 1 else None
                n_out = torch.empty_like(x) if pattern == 1 else None

                def call():
                    mod.trtllm_allreduce_fusion(x, world, rank, t, h, ws, False, one, True, True, pattern, ar_out,
                                                res if pattern == 1 else None, r_out, n_out, None, None,
                                                gamma[:h] if pattern == 1 else None, 1e-6 if pattern == 1 else None,
                                                None, None)

                def check() -> bool:
                    if pattern == 0:
                        return bool(torch.equal(ar_out.float(), want))
                    s = want + res.float()
                    ok = bool(torch.allclose(r_out.float(), s, atol=0.5))
                    v = s.view(t, h)
                    ref = v * torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + 1e-6) * gamma[:h].float()
                    return ok and bool(torch.allclose(n_out.float().view(t, h), ref, rtol=0.05, atol=0.05))
                try:
                    call()
                    torch.cuda.synchronize()
                    ok0 = check()
                    for proto in _protocols(i):
                        calls = _calls(nbytes, proto)
                        xs = _time_graph(call, calls, reps=_reps(proto))
                        ok = _all_ok(ok0 and check())
                        if rank == 0:
                            _put(_csv_for(csv_path, proto), meta,
                                 _row(impl, world, t, h, xs, calls, "" if ok else "WRONG"))
                except Exception as e:  # noqa: BLE001
                    _say(f"trtllm r{rank}", f"{impl} T{t} H{h}: {type(e).__name__}: {str(e)[:300]}")
                    traceback.print_exc()
                    return


def _worker(rank, world, port, impl, csv_path, meta, timeout):
    faulthandler.dump_traceback_later(timeout, exit=True)
    import torch
    import torch.distributed as dist
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            device_id=torch.device(f"cuda:{rank}"))
    torch.zeros(1, device="cuda")
    _say(f"{impl} r{rank}", f"start, world {world}")
    (_vllm if impl == "vllm" else _trtllm)(rank, world, csv_path, meta)
    torch.cuda.synchronize()
    dist.barrier()
    dist.destroy_process_group()
    faulthandler.cancel_dump_traceback_later()


def _meta() -> dict:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import _timing as T
    v = T.versions()
    try:
        import flashinfer
        fi = flashinfer.__version__
    except Exception:  # noqa: BLE001
        fi = "-"
    return {"device": v["device"], "torch": v["torch"], "cuda": v["cuda"], "flashinfer": fi, "driver": v["driver"],
            "date": dt.date.today().isoformat(), "script_version": SCRIPT_VERSION}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--worlds", default="4,2")
    ap.add_argument("--impls", default="vllm,trtllm")
    ap.add_argument("--timeout", type=float, default=100.0, help="seconds per (impl, world) phase")
    ap.add_argument("--build-only", action="store_true")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--grid", choices=("campaign", "blind4", "blind6", "blind7", "blind8", "blind9", "blind10", "blind11", "blind12",
                                       "blind13", "blind14", "blind15", "blind16", "blind17", "blind18", "blind19",
                                       "blind20", "blind21", "blind22", "blind23", "blind24", "blind25"),
                    default="campaign",
                    help="campaign: the first campaign's shapes; blind4: BLIND4_TOKENS x BLIND4_HIDDENS; blind6: "
                         "BLIND6_TOKENS x BLIND6_HIDDENS + BLIND6_EXTRA; blind7: BLIND7_SHAPES; blind8 / blind9: "
                         "BLIND8_SHAPES / BLIND9_SHAPES (4 ranks), BLIND8_CONTROL / BLIND9_CONTROL (2 ranks) (the CSV is then named engine_allreduce_<grid>_*)")
    ap.add_argument("--protocol", choices=("A", "B", "AB"), default="B",
                    help="A: REPS replays, _calls (every earlier grid); B: REPS_B replays of CALLS_B calls up to 16 MiB; "
                         "AB: both on every row, each to its own CSV (default B from script version 19)")
    args = ap.parse_args()
    os.environ[GRID_ENV] = args.grid
    os.environ[PROTOCOL_ENV] = args.protocol          # read by grid() here and in the spawned workers
    args.out.mkdir(parents=True, exist_ok=True)
    if args.smoke:
        p = args.out / "smoke.csv"
        with open(p, "w", newline="") as f:
            csv.DictWriter(f, fieldnames=FIELDS).writeheader()
        _put(str(p), {"device": "cpu (smoke)"}, _row("smoke", 2, 1, 4096, [1.0, 2.0, 3.0], 1))
        print(len(grid(4)), "shapes at 4 ranks,", len(grid(2)), "at 2; protocols", _protocols(0), _protocols(1),
              "calls at 1 / 2 MiB", [(_calls(1 << 20, p), _calls(2 << 20, p), _reps(p)) for p in ("A", "B")])
        return
    impls = [i for i in args.impls.split(",") if i]
    for i in impls:
        t0 = time.time()
        (vllm_module if i == "vllm" else fusion_module)()
        _say("build", f"{i}: JIT build + load {time.time() - t0:.1f} s")
    if args.build_only:
        return
    import torch.multiprocessing as mp
    meta = _meta()
    slug = meta["device"].lower().replace(" ", "-")
    tag = f"{args.grid}_" if args.grid in ("blind6", "blind7", "blind8", "blind9", "blind10", "blind11",
                                             "blind12", "blind13", "blind14", "blind15", "blind16", "blind17", "blind18", "blind19",
                                             "blind20", "blind21", "blind22", "blind23", "blind24", "blind25") else ""
    if args.protocol == "A":
        csv_path = args.out / f"engine_allreduce_{tag}{slug}_{meta['date']}.csv"
        paths = [csv_path]
    else:
        csv_path = {p: str(args.out / f"engine_allreduce_{tag[:-1]}{p}_{slug}_{meta['date']}.csv") for p in args.protocol}
        paths = [Path(p) for p in csv_path.values()]
    for cp in paths:
        if not cp.exists():
            with open(cp, "w", newline="") as f:
                csv.DictWriter(f, fieldnames=FIELDS).writeheader()
    ctx = mp.get_context("spawn")
    port = 29600 + os.getpid() % 1000
    for impl in impls:
        for world in [int(w) for w in args.worlds.split(",")]:
            port += 7
            t0 = time.time()
            cp = str(csv_path) if isinstance(csv_path, Path) else csv_path
            procs = [ctx.Process(target=_worker, args=(r, world, port, impl, cp, meta, args.timeout))
                     for r in range(world)]
            for p in procs:
                p.start()
            deadline = time.time() + args.timeout + 5.0
            for p in procs:
                p.join(timeout=max(0.1, deadline - time.time()))
            for p in procs:
                if p.is_alive():
                    _say("main", f"{impl} world {world}: worker {p.pid} still alive: killed")
                    p.kill()
                    p.join(2.0)
            _say("main", f"{impl} world {world}: {time.time() - t0:.1f} s")
    _say("main", f"wrote {csv_path}")


if __name__ == "__main__":
    main()
