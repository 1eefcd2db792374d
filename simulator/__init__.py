"""sparsesim: analytic performance model of long-context LLM decoding (see DESIGN.md / README.md)."""
__version__ = "0.1.0"
