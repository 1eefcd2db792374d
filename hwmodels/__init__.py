"""Hardware side of sparsesim: what a machine can do (`spec`) and what an operation costs on it (`roofline`).

Nothing in this package knows about models or strategies; the Op table (`simulator.ops`) is the seam.
"""
from hwmodels.errors import SparsesimError, SpecError
from hwmodels.spec import HardwareSpec, list_hardware, load_hardware

__all__ = ["SparsesimError", "SpecError", "HardwareSpec", "list_hardware", "load_hardware"]
