"""User-facing errors (defined in hwmodels, the bottom layer, and re-exported here)."""
from hwmodels.errors import ScenarioError, SparsesimError, SpecError

__all__ = ["SparsesimError", "SpecError", "ScenarioError"]
