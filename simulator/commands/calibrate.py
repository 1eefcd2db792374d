"""`sparsesim calibrate fit | report | fit-links | fit-latency | fit-topk | fit-prefill`."""
from __future__ import annotations

from pathlib import Path

from simulator.commands._common import UsageError


def register(sub) -> None:
    c = sub.add_parser("calibrate", help="fit roofline efficiencies to GPU measurements, or report a fit")
    c.add_argument("action", choices=["fit", "report", "fit-links", "fit-latency", "fit-topk", "fit-prefill"])
    c.add_argument("target", nargs="?", help="fit: the measure.py CSV; report: a device name (default H100-SXM); "
                                             "fit-links: a measure_collectives.py CSV; fit-latency: a "
                                             "measure_latency.py CSV; fit-topk: a measure_topk_cta.py CSV; fit-prefill: a "
                                             "measure_prefill_attn.py CSV")
    c.add_argument("more", nargs="*", help="fit-links: more collectives CSVs (other GPU counts)")
    c.add_argument("--also", nargs="*", help="fit-links / fit-latency: also write the terms into these devices' "
                                          "fitted files")
    c.add_argument("--device", help="spec name of the measured device (default: from the CSV's device name)")
    c.add_argument("--fitted-dir", help="where fit writes <device>.yaml (default hwmodels/calibration/fitted)")
    c.add_argument("--out", help="folder for the report plot and CSV (default results/calibration)")
    c.set_defaults(func=cmd_calibrate)


def cmd_calibrate(args) -> int:
    from hwmodels.calibration import fit as F
    from hwmodels.calibration import report as R

    if args.action == "fit-links":
        return _fit_links(args)
    if args.action == "fit-latency":
        return _fit_latency(args)
    if args.action == "fit-topk":
        return _fit_topk(args)
    if args.action == "fit-prefill":
        return _fit_prefill(args)
    if args.action == "fit":
        if not args.target:
            raise UsageError("calibrate fit needs the measured CSV (from hwmodels/calibration/measure.py)")
        err, table, e2e, eff, meta, hw = R.evaluate(args.target, args.device, refit=True)
        out_dir = Path(args.fitted_dir) if args.fitted_dir else F.FITTED_DIR
        p = F.write_fitted(eff, meta, hw, args.target, table, e2e, out_dir)
        print(f"fitted {hw.name} from {args.target} ({len(err)} priced measured rows) -> {p}")
    else:
        name = args.target or args.device or "H100-SXM"
        data = R.data_for_device(name)
        err, table, e2e, eff, meta, hw = R.evaluate(data, name)
        print(f"{hw.name}: committed fit ({eff.source}) against {data}")
    print()
    print("Absolute percentage error of predicted vs measured kernel time, per op kind")
    print(R.table_text(table))
    print()
    print("End to end: Llama-3.1-8B decode step (CUDA graph) measured vs simulated")
    print(R.e2e_text(e2e))
    out = Path(args.out or "results/calibration")
    png = out / f"{hw.name}_predicted_vs_measured.png"
    R.plot(err, png, f"{hw.name}: roofline with fitted efficiencies vs measured kernels")
    csv = out / f"{hw.name}_predicted_vs_measured.csv"
    err.to_csv(csv, index=False)
    print(f"\nwrote {png} and {csv}")
    return 0


def _fit_links(args) -> int:
    from hwmodels.calibration import fit_links as FL
    from hwmodels.spec import load_hardware

    files = [args.target] + list(args.more or []) if args.target else []
    if not files:
        raise UsageError("calibrate fit-links needs measure_collectives.py CSVs (several GPU counts)")
    if not args.device:
        raise UsageError("calibrate fit-links needs --device NAME (the measured device's spec)")
    df = FL.load(files)
    hw = load_hardware(args.device)
    params, out = FL.fit(df, hw)
    targets = [args.device] + list(args.also or [])
    for t in targets:
        p = FL.write(params, t, files, args.device, hw.link_kind,
                     Path(args.fitted_dir) if args.fitted_dir else FL.FITTED_DIR)
        print(f"wrote interconnect terms into {p}")
    print(", ".join(f"{k}={v:.3g}" for k, v in params.items()))
    t = out[["gpus", "op", "bytes", "median_us", "predicted_us", "error_pct"]].copy()
    print(t.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    print(f"median |error| {t['error_pct'].abs().median():.1f} %, worst {t['error_pct'].abs().max():.1f} %")
    return 0


def _need_csv_and_device(args, cmd: str, what: str) -> None:
    """The fit-* commands take one measurement CSV and the spec name of the device it was measured on."""
    if not args.target:
        raise UsageError(f"calibrate {cmd} needs {what}")
    if not args.device:
        raise UsageError(f"calibrate {cmd} needs --device NAME (the measured device's spec)")


def _fit_latency(args) -> int:
    from hwmodels.calibration import fit_latency as FT
    from hwmodels.spec import load_hardware

    _need_csv_and_device(args, "fit-latency", "a measure_latency.py CSV")
    df = FT.load(args.target)
    params = FT.fit(df)
    print(f"dram {params['dram_us']:.3f} us, L2 {params['l2_us']:.3f} us per dependent load; paged-scan loop "
          f"{params['loop_iter_us']:.3f} us per iteration (intercept {params['intercept_us']:.1f} us, "
          f"{params['fit_rows']} rows)")
    out_dir = Path(args.fitted_dir) if args.fitted_dir else FT.FITTED_DIR
    # the check prices the rows with the new floor on the measured device
    hw = load_hardware(args.device)
    from dataclasses import replace as _replace
    hw = hw.with_efficiency(_replace(hw.efficiency, loop_iter_s=params["loop_iter_us"] * 1e-6,
                                     dram_latency_s=params["dram_us"] * 1e-6, l2_latency_s=params["l2_us"] * 1e-6))
    chk = FT.check(df, hw)
    table = FT.error_table(chk)
    for t in [args.device] + list(args.also or []):
        p = FT.write(params, t, args.target, args.device, table, out_dir)
        print(f"wrote latency terms into {p}")
    print(table.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    _plot_check(args, chk, f"{args.device}_latency", f"{args.device}: paged-scan loop, roofline with the loop floor")
    return 0


def _plot_check(args, chk, stem: str, title: str) -> None:
    from hwmodels.calibration import report as R

    png = Path(args.out or "results/calibration") / f"{stem}_predicted_vs_measured.png"
    R.plot_groups(chk, png, title)
    print(f"wrote {png}")


def _fit_topk(args) -> int:
    from hwmodels.calibration import fit_topk_cta as FK
    from hwmodels.spec import load_hardware

    _need_csv_and_device(args, "fit-topk", "a measure_topk_cta.py CSV")
    df = FK.load(args.target)
    hw = load_hardware(args.device)
    _, joint, jmeta = FK.fit(df, hw)
    print(f"{hw.name}: kernel constants fitted jointly: histogram atomic {joint[0]:.2f}, GVR work outside its "
          f"sweeps {joint[1]:.3g}, same-address atomic {joint[2]:.2f} flop-equivalents (rms log error "
          f"{jmeta['rms_log_error']:.3f}); topk.py prices {FK.module_consts()}")
    consts = FK.module_consts()
    eff, consts, meta = FK.fit(df, hw, consts=consts)
    meta["joint_constants"] = {"hist_flops": round(joint[0], 3), "gvr_fixed_flops": round(joint[1], -2),
                               "serial_flops": round(joint[2], 3)}
    chk = FK.check(df, hw, eff, consts)
    table = FK.error_table(chk)
    p = meta["params"]
    print(f"{hw.name} (op kind topk_cta, with topk.py's constants): compute {p['compute.topk_cta']:.4f}, memory "
          f"{p['memory.topk_cta']:.3f}, saturation {p['saturation.topk_cta']:.3f}, fixed {p['fixed_us.topk_cta']:.2f} "
          f"us, sync {p['sync_us.topk_cta']:.3f} us per phase ({meta['rows']} fit rows, rms log error "
          f"{meta['rms_log_error']:.3f})")
    out_dir = Path(args.fitted_dir) if args.fitted_dir else FK.FITTED_DIR
    for t in [args.device] + list(args.also or []):
        print(f"wrote top-k terms into {FK.write(eff, consts, meta, t, args.target, args.device, table, out_dir)}")
    print(table.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    _plot_check(args, chk, f"{args.device}_topk_cta", f"{args.device}: single-CTA radix / GVR top-k vs op kind topk_cta")
    return 0


def _fit_prefill(args) -> int:
    from hwmodels.calibration import fit_prefill as FP
    from hwmodels.calibration.report import group_error_table as error_table
    from hwmodels.spec import load_hardware

    _need_csv_and_device(args, "fit-prefill", "a measure_prefill_attn.py CSV")
    df = FP.load(args.target)
    c, chk = FP.fit(df, load_hardware(args.device))
    table = error_table(chk)
    print(f"{args.device}: compute.attention {c:.4f} (causal prefill, {FP.FIT_BACKEND}, prompts >= {FP.FIT_MIN_SEQ})")
    out_dir = Path(args.fitted_dir) if args.fitted_dir else FP.FITTED_DIR
    for t in [args.device] + list(args.also or []):
        print(f"wrote compute.attention into {FP.write(c, t, args.target, args.device, table, out_dir)}")
    print(table.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    print("(run `sparsesim calibrate fit` on the device's measure.py CSV afterwards: the decode-attention fit keeps "
          "this value)")
    _plot_check(args, chk, f"{args.device}_prefill_attn", f"{args.device}: causal prefill attention (SDPA)")
    return 0


