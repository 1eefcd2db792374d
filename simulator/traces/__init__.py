"""Traces: request traces (arrivals and lengths, `requests`) and attention/top-k traces (what a decoder
selects per decode step, layer and head) with their statistics, which drive strategy costs."""
