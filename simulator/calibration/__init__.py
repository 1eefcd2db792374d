"""Calibration: fits the roofline's efficiency parameters (hwmodels.spec.Efficiency) to GPU measurements.

A third layer above both `hwmodels` and the simulator's op accounting: a measured kernel is turned into the
Op rows the simulator itself would emit for it (simulator.layers, the strategies), priced by
hwmodels.roofline with candidate parameters, and compared with its measured time. The measured CSVs
(hwmodels/calibration/data/, written by the GPU scripts in lab/, which are not part of the package) and the shipped
fitted files (hwmodels/calibration/fitted/) are package data of the hardware layer; `hwmodels` never imports this
package.

    fit.py           measure.py CSVs: copy, GEMM, elementwise, decode attention, gather, torch.topk, launch
    fit_regimes.py   measure_regimes.py CSVs (+ measure_graph_chains.py's): the kernel families' wave model
                     (decode attention per backend, fp8 GEMMs, quantization, eager kinds, torch.topk, indexer)
    fit_prefill.py   causal prefill attention -> compute.attention
    fit_topk_cta.py  single-CTA radix / GVR top-k -> op kind topk_cta
    fit_latency.py   pointer chase and paged-scan loop -> the loop floor
    fit_links.py     NCCL collectives -> interconnect terms
    checks.py        strict CSV reading, physical ranges, refusal bounds, where a fit may be written
    report.py        predicted vs measured tables and plots
"""
