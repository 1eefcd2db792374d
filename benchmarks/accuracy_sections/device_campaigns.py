"""Per-device tables at the top of the report: each device's newest measure.py campaign (hwmodels/calibration/data/)
against the roofline with the committed fitted efficiencies (fit / held-out / predicted rows, and the Llama-3.1-8B
decode step under CUDA-graph replay), the NCCL all-reduce / all-to-all rows (*_collectives_*.csv) against the link
terms, the paged-scan loop (latency_*.csv) against the loop floor and the single-CTA top-k kernels (topk_cta_*.csv)
against the topk kind.
"""
from __future__ import annotations

from hwmodels import datafiles as DF
from simulator.calibration import fit as F
from simulator.calibration import report as R


def device_campaigns(refit: bool) -> None:
    """Print the per-device tables; refit fits afresh instead of reading the fitted files."""
    for data in F.latest_data_files():
        err, table, e2e, eff, meta, hw = R.evaluate(data, refit=refit)
        print(f"== {hw.name}: {data.name} ({len(err)} priced kernel measurements)")
        print(R.table_text(table))
        print("end to end (Llama-3.1-8B decode step, CUDA graph):")
        print(R.e2e_text(e2e))
        if not e2e.empty:
            print(f"max |error| end to end: {e2e['error_pct'].abs().max():.1f} %")
        print()
    links = DF.glob(F.DATA_DIR, "*_collectives_*.csv")
    if links:
        from hwmodels.spec import load_hardware
        from simulator.calibration import fit_links as FL

        df = FL.load(links)
        hw = load_hardware("H200")
        eff = hw.efficiency
        x = (eff.fixed_s["collective"] * 1e6, eff.fixed_s["alltoall"] * 1e6, (eff.link_latency_s or 0) * 1e6,
             eff.memory["collective"], eff.memory["alltoall"])
        err = (FL.model_us(df, hw, x) / df["median_us"] - 1) * 100
        print(f"== NCCL collectives, H200 x2 / x4 ({len(df)} rows; committed link terms, all rows fitted): "
              f"median |error| {err.abs().median():.1f} %, worst {err.abs().max():.1f} %")

    from hwmodels.spec import load_hardware
    from simulator.calibration import fit_latency as FT
    from simulator.calibration import fit_topk_cta as FK

    fmt = {"float_format": lambda v: f"{v:.1f}", "index": False}
    for f in DF.glob(F.DATA_DIR, "latency_*.csv"):
        df = FT.load(f)
        hw = load_hardware(F.DEVICE_SPECS[df["device"].iloc[0]])
        print(f"\n== {hw.name}: {f.name}, paged-scan loop vs the loop floor "
              f"({hw.efficiency.loop_iter_s * 1e6:.2f} us per iteration)")
        print(FT.error_table(FT.check(df, hw)).to_string(**fmt))
    for f in DF.glob(F.DATA_DIR, "topk_cta_*.csv"):
        df = FK.load(f)
        hw = load_hardware(F.DEVICE_SPECS[df["device"].iloc[0]])
        print(f"\n== {hw.name}: {f.name}, single-CTA radix / GVR top-k vs the topk kind")
        print(FK.error_table(FK.check(df, hw, hw.efficiency, FK.module_consts())).to_string(**fmt))
