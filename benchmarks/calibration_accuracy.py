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

Last, issue 15's kernel model outside the bandwidth regime (measure_regimes.py, H100, CUDA-graph timing): per
op kind and regime, median / p90 / max absolute error on the HELD-OUT shape families, `before` = the model
before issue 15 (generic split-KV decode attention, fp8 GEMMs without activation quantization, torch.topk's
simplified ops and its earlier fitted terms, the indexer filling the device, `kernels: unfused`) and `after` =
this model with the committed fitted files. Goal: median <= 10 % and p90 <= 25 % per regime; the HF step
within 3 %. `--all` adds the fit and check rows.

    python benchmarks/calibration_accuracy.py [--refit]
"""
from __future__ import annotations

import argparse

from simulator.calibration import fit as F
from simulator.calibration import report as R


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--refit", action="store_true", help="fit afresh instead of reading the fitted files")
    ap.add_argument("--all", action="store_true", help="regimes table: also the fit and check rows")
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
    regimes(args.all)


#: torch.topk's fitted terms before issue 15 (hwmodels/calibration/fitted/H100-SXM.yaml at commit 91a73fb, fitted
#: with the sort path on): the `before` model of the regimes table prices torch.topk with them
BEFORE_TOPK = {"compute.topk": 0.0572, "memory.topk": 1.0, "fixed_us.topk": 4.582, "sync_us.topk": 0.509}


def regimes(show_all: bool) -> None:
    from dataclasses import replace

    from hwmodels.spec import load_efficiency
    from simulator.calibration import fit_regimes as FR
    from simulator.calibration.fit import efficiency_with

    for f in sorted(F.DATA_DIR.glob("regimes_nvidia*.csv")):
        if "_hf_profile_" in f.name:
            continue
        df = FR.load(f)
        hw = FR.hw_for(df, None)
        eff = load_efficiency(hw.name)
        hw = replace(hw, launch_graph_s=eff.launch_graph_s or hw.launch_graph_s)
        # before: repeat_kv priced as a contiguous copy (kind copy), torch.topk with its earlier terms
        before = efficiency_with(eff, {**BEFORE_TOPK, "memory.copy_strided": eff.memory["copy"],
                                       "fixed_us.copy_strided": eff.fixed_s["copy"] * 1e6})
        ev = FR.evaluate(df, hw, eff, before)
        parts = ("held-out", "fit", "check") if show_all else ("held-out",)
        table = FR.accuracy_table(ev, parts)
        print(f"\n== {hw.name}: {f.name}, kernel model outside the bandwidth regime (issue 15), CUDA-graph timing; "
              f"|error| % per regime, {'all rows' if show_all else 'held-out shape families'}")
        print(FR.table_text(table))
        held = table[table["part"] == "held-out"]
        print(f"goal (median <= 10 %, p90 <= 25 %; HF step <= 3 %): {int((held['goal'] == 'met').sum())} of "
              f"{len(held)} held-out regimes met")


if __name__ == "__main__":
    main()
