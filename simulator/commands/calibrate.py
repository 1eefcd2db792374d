"""`sparsesim calibrate fit | report | fit-links | fit-latency | fit-topk | fit-prefill`.

Every `fit*` action (the fitting code is simulator.calibration; the checks simulator.calibration.checks):
  - reads its CSV strictly: a malformed file stops with one line naming the file and what is wrong;
  - fits from the spec's datasheet values, never from a fitted file that happens to be loaded;
  - refuses (exit 2, one line) a result whose parameters leave their physical ranges (efficiencies in
    (0, 1.2], fixed times under 1 ms, launch costs 0.5-50 us, latencies under 100 us) or whose check rows
    miss the bound stated per op kind (the fit modules' REFUSAL_BOUNDS; printed by `--help`);
  - writes `<device>.yaml` into --fitted-dir, or by default into `fitted/` beside the CSV (for a CSV the
    package ships: ./results/calibration/fitted), never into an installed package, merged with the terms
    other fits own in that file; then prints how to use it: `export SPARSESIM_FITTED_DIR=<that folder>`
    (hwmodels.spec searches it before the shipped fits, no reinstall needed). The developers refresh the
    shipped files with `--fitted-dir hwmodels/calibration/fitted` explicitly;
  - draws predicted vs measured into --out (default results/calibration).
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from simulator.commands._common import UsageError

BOUNDS_HELP = """refusal bounds (|error| on the rows that check a fit: median / p90):
  fit          gemm 12/30 %, decode attention (cuDNN) 15/35 %, copy via reduce 15/45 %, gather 15/60 %,
               elementwise fit rows 15/35 %
  fit-prefill  cuDNN prompts >= 4K 15/30 %
  fit-topk     held-out row counts and k 20/60 %
  fit-latency  fit rows 15/30 %, 64-512 CTAs 25/45 %
  fit-links    all rows 25/60 %
  fit-regimes  every fitted kind (decode attention and its combine kernels, fp8 rowwise, fused quantization,
               indexer, eager casts / strided copies / reductions, torch.topk) on its held-out families 35/80 %
and every parameter physical: efficiencies in (0, 1.2], fixed times < 1 ms, launch 0.5-50 us, latencies < 100 us."""


def register(sub) -> None:
    c = sub.add_parser("calibrate", help="fit roofline efficiencies to GPU measurements, or report a fit",
                       description=__doc__.split("\n\n", 1)[1], epilog=BOUNDS_HELP,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("action", choices=["fit", "report", "fit-links", "fit-latency", "fit-topk", "fit-prefill",
                                      "fit-regimes"])
    c.add_argument("target", nargs="?", help="fit: the measure.py CSV; report: a device name (default H100-SXM); "
                                             "fit-links: a measure_collectives.py CSV; fit-latency: a "
                                             "measure_latency.py CSV; fit-topk: a measure_topk_cta.py CSV; fit-prefill: a "
                                             "measure_prefill_attn.py CSV; fit-regimes: a measure_regimes.py CSV")
    c.add_argument("more", nargs="*", help="fit-links: more collectives CSVs (other GPU counts)")
    c.add_argument("--also", nargs="*", help="fit-links / fit-latency / fit-topk / fit-prefill / fit-regimes: also write "
                                             "the terms "
                                             "into these devices' fitted files (borrowed, said so in the file)")
    c.add_argument("--device", help="spec name of the measured device (default: from the CSV's device name)")
    c.add_argument("--fitted-dir", help="where fit* writes <device>.yaml (default: fitted/ beside the CSV; never "
                                        "inside an installed package). Use it with export SPARSESIM_FITTED_DIR=DIR")
    c.add_argument("--out", help="folder for the report plot and CSV (default results/calibration)")
    c.set_defaults(func=cmd_calibrate)


def _prepare_out(args):
    """The plot / CSV folder (--out, default results/calibration), created and checked before any work. Its
    manifest is not used to delete files: each device and campaign writes its own names there."""
    from simulator.commands._common import OutputDir

    d = Path(args.out or "results/calibration").resolve()
    return OutputDir.prepare(str(d.parent), d.name)


def cmd_calibrate(args) -> int:
    if args.action == "report":
        return _report(args)
    if not args.target:
        what = {"fit": "the measured CSV (from lab/measure.py)",
                "fit-links": "measure_collectives.py CSVs (several GPU counts)",
                "fit-latency": "a measure_latency.py CSV", "fit-topk": "a measure_topk_cta.py CSV",
                "fit-prefill": "a measure_prefill_attn.py CSV",
                "fit-regimes": "a measure_regimes.py CSV"}[args.action]
        raise UsageError(f"calibrate {args.action} needs {what}")
    if args.action != "fit" and not args.device:
        raise UsageError(f"calibrate {args.action} needs --device NAME (the measured device's spec)")
    from simulator.calibration.checks import fitted_dir_for

    files = [args.target] + list(args.more or [])
    fitted_dir = fitted_dir_for(args.fitted_dir, files)
    out = _prepare_out(args)  # output folders are checked before any work
    return {"fit": _fit, "fit-links": _fit_links, "fit-latency": _fit_latency, "fit-topk": _fit_topk,
            "fit-prefill": _fit_prefill, "fit-regimes": _fit_regimes}[args.action](args, fitted_dir, out)


def _fit(args, fitted_dir: Path, out) -> int:
    from simulator.calibration import checks as C
    from simulator.calibration import fit as F
    from simulator.calibration import report as R

    err, table, e2e, eff, meta, hw = R.evaluate(args.target, args.device, refit=True, out_dir=fitted_dir)
    C.check_physical(F.fitted_params(eff, meta), args.target)
    checks = C.check_bounds(err, F.REFUSAL_BOUNDS, args.target, meta["fitted_kinds"])
    checked = {b[0].partition("|")[0] for b in F.REFUSAL_BOUNDS.values()}
    C.check_worst_row(err[(err["part"] == "fit") | err["group"].isin(checked)], args.target)
    p = F.write_fitted(eff, meta, hw, args.target, table, e2e, fitted_dir)
    untimed = err.attrs.get("untimed", 0)
    print(f"fitted {hw.name} from {args.target}: {len(err)} priced measured rows; op kinds {', '.join(meta['fitted_kinds'])}"
          + (f"; {untimed} rows without a time left out" if untimed else ""))
    print("checks passed: " + "; ".join(checks))
    print(C.how_to_use(p))
    _print_tables(table, e2e)
    _plot(out, err, hw.name, f"{hw.name}: roofline with fitted efficiencies vs measured kernels")
    return 0


def _report(args) -> int:
    from simulator.calibration import report as R

    name = args.target or args.device or "H100-SXM"
    out = _prepare_out(args)
    data = R.data_for_device(name)
    err, table, e2e, eff, meta, hw = R.evaluate(data, name)
    print(f"{hw.name}: committed fit ({eff.source}) against {data}")
    _print_tables(table, e2e)
    _plot(out, err, hw.name, f"{hw.name}: roofline with fitted efficiencies vs measured kernels")
    return 0


def _print_tables(table, e2e) -> None:
    from simulator.calibration import report as R

    print()
    print("Absolute percentage error of predicted vs measured kernel time, per op kind")
    print(R.table_text(table))
    print()
    print("End to end: Llama-3.1-8B decode step (CUDA graph) measured vs simulated")
    print(R.e2e_text(e2e))


def _plot(out, err, name: str, title: str) -> None:
    from simulator.calibration import report as R

    png = out.file(f"{name}_predicted_vs_measured.png")
    R.plot(err, png, title)
    csv = out.file(f"{name}_predicted_vs_measured.csv")
    err.to_csv(csv, index=False)
    print(f"\nwrote {png} and {csv}")


def _targets(args) -> list[str]:
    return [args.device] + list(args.also or [])


def _fit_links(args, fitted_dir: Path, out) -> int:
    from simulator.calibration import checks as C
    from simulator.calibration import fit_links as FL

    files = [args.target] + list(args.more or [])
    df = FL.load(files)
    hw = C.datasheet_spec(args.device)
    params, chk = FL.fit(df, hw)
    FL.check(params, chk, files[0])
    for t in _targets(args):
        print(C.how_to_use(FL.write(params, t, files, args.device, hw.link_kind, fitted_dir)))
    print(", ".join(f"{k}={v:.3g}" for k, v in params.items()))
    t = chk[["gpus", "op", "bytes", "median_us", "predicted_us", "error_pct"]].copy()
    print(t.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    print(f"median |error| {t['error_pct'].abs().median():.1f} %, worst {t['error_pct'].abs().max():.1f} %")
    _plot_check(out, chk.assign(group="fit: " + chk["op"].astype(str) + " x" + chk["gpus"].astype(str)),
                f"{args.device}_links", f"{args.device}: NCCL collectives vs the fitted interconnect terms")
    return 0


def _fit_latency(args, fitted_dir: Path, out) -> int:
    from dataclasses import replace

    from simulator.calibration import checks as C
    from simulator.calibration import fit_latency as FT

    df = FT.load(args.target)
    params = FT.fit(df)
    print(f"dram {params['dram_us']:.3f} us, L2 {params['l2_us']:.3f} us per dependent load; paged-scan loop "
          f"{params['loop_iter_us']:.3f} us per iteration (intercept {params['intercept_us']:.1f} us, "
          f"{params['fit_rows']} rows)")
    # the check prices the rows with the new floor on the measured device (datasheet, nothing earlier)
    hw = C.datasheet_spec(args.device)
    hw = hw.with_efficiency(replace(hw.efficiency, loop_iter_s=params["loop_iter_us"] * 1e-6,
                                    dram_latency_s=params["dram_us"] * 1e-6, l2_latency_s=params["l2_us"] * 1e-6))
    chk = FT.check(df, hw)
    table = FT.error_table(chk)
    FT.check_result(params, chk, args.target)
    for t in _targets(args):
        print(C.how_to_use(FT.write(params, t, args.target, args.device, table, fitted_dir)))
    print(table.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    _plot_check(out, chk, f"{args.device}_latency", f"{args.device}: paged-scan loop, roofline with the loop floor")
    return 0


def _plot_check(out, chk, stem: str, title: str) -> None:
    from simulator.calibration import report as R

    png = out.file(f"{stem}_predicted_vs_measured.png")
    R.plot_groups(chk, png, title)
    print(f"wrote {png}")


def _fit_topk(args, fitted_dir: Path, out) -> int:
    from simulator.calibration import checks as C
    from simulator.calibration import fit_topk_cta as FK

    df = FK.load(args.target)
    hw = C.datasheet_spec(args.device)
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
    FK.check_result(meta, chk, args.target)
    p = meta["params"]
    print(f"{hw.name} (op kind topk_cta, with topk.py's constants): compute {p['compute.topk_cta']:.4f}, memory "
          f"{p['memory.topk_cta']:.3f}, saturation {p['saturation.topk_cta']:.3f}, fixed {p['fixed_us.topk_cta']:.2f} "
          f"us, sync {p['sync_us.topk_cta']:.3f} us per phase ({meta['rows']} fit rows, rms log error "
          f"{meta['rms_log_error']:.3f})")
    for t in _targets(args):
        print(C.how_to_use(FK.write(eff, consts, meta, t, args.target, args.device, table, fitted_dir)))
    print(table.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    _plot_check(out, chk, f"{args.device}_topk_cta", f"{args.device}: single-CTA radix / GVR top-k vs op kind topk_cta")
    return 0


def _fit_prefill(args, fitted_dir: Path, out) -> int:
    from simulator.calibration import checks as C
    from simulator.calibration import fit_prefill as FP
    from simulator.calibration.report import group_error_table as error_table

    df = FP.load(args.target)
    c, chk = FP.fit(df, C.datasheet_spec(args.device))
    table = error_table(chk)
    FP.check_result(c, chk, args.target)
    print(f"{args.device}: compute.attention {c:.4f} (causal prefill, {FP.FIT_BACKEND}, prompts >= {FP.FIT_MIN_SEQ})")
    for t in _targets(args):
        print(C.how_to_use(FP.write(c, t, args.target, args.device, table, fitted_dir)))
    print(table.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    _plot_check(out, chk, f"{args.device}_prefill_attn", f"{args.device}: causal prefill attention (SDPA)")
    return 0


def _fit_regimes(args, fitted_dir: Path, out) -> int:
    """Decode attention per kernel family, fp8 rowwise GEMMs, the indexer (measure_regimes.py). The fit needs the
    device's `calibrate fit` terms (GEMM, elementwise, launch) in the same fitted folder: it never reads another."""
    from dataclasses import replace

    from hwmodels.calibration import DATA_DIR
    from hwmodels.spec import efficiency_from_dict
    from hwmodels.yamlio import load_yaml
    from simulator.calibration import checks as C
    from simulator.calibration import fit_regimes as FR

    df = FR.load(args.target)
    hw = C.datasheet_spec(args.device)
    base_file = fitted_dir / f"{args.device}.yaml"
    if not base_file.is_file():
        raise C.CalibrationError(f"has no {args.device}.yaml: run `sparsesim calibrate fit <measure.py CSV> --device "
                                 f"{args.device} --fitted-dir {fitted_dir}` first (this fit prices GEMMs, elementwise "
                                 "kernels and launches with its terms)", file=str(fitted_dir), field="--fitted-dir")
    base = efficiency_from_dict(load_yaml(base_file, "fitted efficiency file"), str(base_file))
    hw = replace(hw, launch_graph_s=base.launch_graph_s or hw.launch_graph_s)
    profiles = sorted(Path(args.target).parent.glob("hf_decode_profile_*.csv")) or \
        sorted(DATA_DIR.glob("hf_decode_profile_*.csv"))
    eff, meta = FR.fit(df, hw, base, profiles[0] if profiles else None)
    ev = FR.evaluate(df, hw, eff, base)
    table = FR.accuracy_table(ev)
    checks = FR.check_result(eff, meta, ev, args.target)
    print(f"{args.device}: fitted {', '.join(k for k in meta if 'params' in meta[k])} from {args.target}; held-out "
          f"median / p90 per kind: {'; '.join(checks)}")
    for t in _targets(args):
        print(C.how_to_use(FR.write(eff, meta, t, args.target, args.device, table, fitted_dir)))
    print(FR.table_text(table))
    png = out.file(f"{args.device}_regimes_predicted_vs_measured.png")
    from simulator.calibration import report as R

    R.plot_groups(ev.assign(group=np.where(ev["part"] == "fit", "fit: ", "") + ev["regime"].str.split(":").str[0],
                            error_pct=ev["after_err_pct"], predicted_us=ev["after_us"]), png,
                  f"{args.device}: kernel model outside the bandwidth regime (measure_regimes.py)")
    print(f"wrote {png}")
    return 0
