"""Measured GPU data and the fitted efficiency files made from it (package data, no code).

`data/` holds the committed measurement CSVs (and the serving runs under `data/serving/`) that the lab's GPU
scripts wrote (lab/ at the repository top, not part of the installed package; lab/README.md lists every campaign,
its script, its files here and its fitter); `fitted/` holds the efficiency files that `hwmodels.spec` loads. The
fitters (`sparsesim calibrate fit*`, simulator.calibration) and `sparsesim calibrate report` read `data/` through
DATA_DIR, so a user of the installed package can refit and check every shipped number.
"""
from __future__ import annotations

from pathlib import Path

#: the committed measurement CSVs (shipped as package data)
DATA_DIR = Path(__file__).parent / "data"

#: torch's device name (the CSVs' `device` column) -> shipped spec name
DEVICE_SPECS = {"NVIDIA H100 80GB HBM3": "H100-SXM", "NVIDIA H200": "H200"}
