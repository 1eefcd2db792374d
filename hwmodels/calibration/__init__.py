"""GPU measurements and fitted efficiency files (the hardware layer's part of calibration).

The measurement scripts (`measure*.py`, `csvout.py`, `topk_cta_kernels.cu`) run by path on a CUDA machine
and need only PyTorch (and CuPy for the top-k kernels); their CSVs live in `data/`, the fitted efficiency
files that `hwmodels.spec` loads in `fitted/`. Fitting needs the simulator's op accounting, so the fitting
code lives one layer up, in `simulator.calibration` (`hwmodels` never imports `simulator`).
"""
from __future__ import annotations

from pathlib import Path

#: the committed measurement CSVs (shipped as package data)
DATA_DIR = Path(__file__).parent / "data"

#: torch's device name (the CSVs' `device` column) -> shipped spec name
DEVICE_SPECS = {"NVIDIA H100 80GB HBM3": "H100-SXM", "NVIDIA H200": "H200"}
