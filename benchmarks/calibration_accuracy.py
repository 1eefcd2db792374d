"""Calibration accuracy from the committed measurements and fitted files — no GPU needed.

For every committed measurement CSV (hwmodels/calibration/data/) this prints, per op kind, the median and
worst absolute percentage error of the roofline (with the committed fitted efficiencies) against the
measured kernels, split into the rows the fit used, the whole shape families held out of it, and rows
that were only predicted (other kernels run as cross-checks); then the end-to-end Llama-3.1-8B decode
step, measured under CUDA-graph replay vs simulated.

Targets (issue 3): held-out median <= 10 % per op kind, <= 5 % for GEMM and decode attention; end to end
within 10 %. Last, the NCCL all-reduce / all-to-all measurements against the fitted interconnect terms.

    python benchmarks/calibration_accuracy.py [--refit]
"""
from __future__ import annotations

import argparse

from hwmodels.calibration import fit as F
from hwmodels.calibration import report as R


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
        from hwmodels.calibration import fit_links as FL
        from hwmodels.spec import load_hardware

        df = FL.load(links)
        hw = load_hardware("H200")
        eff = hw.efficiency
        x = (eff.fixed_s["collective"] * 1e6, eff.fixed_s["alltoall"] * 1e6, (eff.link_latency_s or 0) * 1e6,
             eff.memory["collective"], eff.memory["alltoall"])
        err = (FL.model_us(df, hw, x) / df["median_us"] - 1) * 100
        print(f"== NCCL collectives, H200 x2 / x4 ({len(df)} rows; committed link terms, all rows fitted): "
              f"median |error| {err.abs().median():.1f} %, worst {err.abs().max():.1f} %")


if __name__ == "__main__":
    main()
