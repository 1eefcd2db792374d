"""sparsesim: a performance model and discrete-event simulator of long-context LLM serving with sparse attention,
top-k selection, KV compression and speculative decoding, priced through calibrated roofline models of real
hardware (hwmodels). docs/DESIGN.md describes the rooms of this package and how data flows through them."""
__version__ = "0.2.0"
