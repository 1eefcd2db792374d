"""Calibration accuracy from the committed measurements and fitted files — no GPU needed.

For every committed measurement CSV (hwmodels/calibration/data/) this prints, per op kind, the median and
worst absolute percentage error of the roofline (with the committed fitted efficiencies) against the
measured kernels, split into the rows the fit used, the whole shape families held out of it, and rows
that were only predicted (other kernels run as cross-checks); then the end-to-end Llama-3.1-8B decode
step, measured under CUDA-graph replay vs simulated.

Targets (issue 3): held-out median <= 10 % per op kind, <= 5 % for GEMM and decode attention; end to end
within 10 %. Then the NCCL all-reduce / all-to-all measurements against the fitted interconnect terms,
the paged-scan loop (measure_latency.py) against the loop floor, and the single-CTA top-k kernels
(measure_topk_cta.py) against the committed topk parameters.

    python benchmarks/calibration_accuracy.py [--refit]
"""
from __future__ import annotations

import argparse

from simulator.calibration import fit as F
from simulator.calibration import report as R


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--refit", action="store_true", help="fit afresh instead of reading the fitted files")
    args = ap.parse_args()
    for data in F.latest_data_files():
        err, table, e2e, eff, meta, hw = R.evaluate(data, refit=args.refit)
        print(f"== {hw.name}: {data.name} ({len(err)} priced kernel measurements)")
        print(R.table_text(table))
        print("end to end (Llama-3.1-8B decode step, CUDA graph):")
        print(R.e2e_text(e2e))
        if not e2e.empty:
            print(f"max |error| end to end: {e2e['error_pct'].abs().max():.1f} %")
        print()
    links = sorted(F.DATA_DIR.glob("*_collectives_*.csv"))
    if links:
        from simulator.calibration import fit_links as FL
        from hwmodels.spec import load_hardware

        df = FL.load(links)
        hw = load_hardware("H200")
        eff = hw.efficiency
        x = (eff.fixed_s["collective"] * 1e6, eff.fixed_s["alltoall"] * 1e6, (eff.link_latency_s or 0) * 1e6,
             eff.memory["collective"], eff.memory["alltoall"])
        err = (FL.model_us(df, hw, x) / df["median_us"] - 1) * 100
        print(f"== NCCL collectives, H200 x2 / x4 ({len(df)} rows; committed link terms, all rows fitted): "
              f"median |error| {err.abs().median():.1f} %, worst {err.abs().max():.1f} %")

    from simulator.calibration import fit_latency as FT
    from simulator.calibration import fit_topk_cta as FK
    from hwmodels.spec import load_hardware
    
    fmt = {"float_format": lambda v: f"{v:.1f}", "index": False}
    for f in sorted(F.DATA_DIR.glob("latency_*.csv")):
        df = FT.load(f)
        hw = load_hardware(F.DEVICE_SPECS[df["device"].iloc[0]])
        print(f"\n== {hw.name}: {f.name}, paged-scan loop vs the loop floor "
              f"({hw.efficiency.loop_iter_s * 1e6:.2f} us per iteration)")
        print(FT.error_table(FT.check(df, hw)).to_string(**fmt))
    for f in sorted(F.DATA_DIR.glob("topk_cta_*.csv")):
        df = FK.load(f)
        hw = load_hardware(F.DEVICE_SPECS[df["device"].iloc[0]])
        print(f"\n== {hw.name}: {f.name}, single-CTA radix / GVR top-k vs the topk kind")
        print(FK.error_table(FK.check(df, hw, hw.efficiency, FK.module_consts())).to_string(**fmt))


if __name__ == "__main__":
    main()
