"""Kernel models: how real kernels of one operation parallelize and what one launch does (launch grids, split
heuristics, tiles, pass counts), read from each kernel's source or measured, one module per family of kernels.
Both the strategies (which emit ops) and the trace analysis (which derives statistics) use these models; they
read no hardware numbers beyond the facts serving software itself queries (`combo.target`)."""
