"""Command line: `sparsesim run|sweep|hw|models`.

    sparsesim run [SCENARIO]        price a scenario (default scenarios/quickstart.yaml): tables, CSV, plot
    sparsesim sweep SCENARIO        price the whole strategy-tuple product, report skips, rank
    sparsesim hw list | show NAME   hardware specs and the source of every number
    sparsesim models list | show NAME
    sparsesim strategies [AXIS] [--sources]   strategy values, parameters, defaults (and their sources)
    sparsesim figures list | run SCENARIO   paper reproductions (simulator/figures)
    sparsesim calibrate fit DATA.csv | report [DEVICE]   fit / check roofline efficiencies

Errors a user can cause print one clear message (no traceback) and exit with status 2.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

DEFAULT_SCENARIO = "scenarios/quickstart.yaml"


def _out_dir(args, name: str) -> Path:
    return Path(args.out) / name if args.out else Path("results") / name


def _write_outputs(sc, result, out_dir: Path, breakdown: bool) -> list[str]:
    from simulator import report

    lines = []
    out_dir.mkdir(parents=True, exist_ok=True)
    if "csv" in sc.outputs:
        p = out_dir / "results.csv"
        result.results.to_csv(p, index=False)
        lines.append(f"wrote {p}  ({len(result.results)} rows)")
        if breakdown and result.breakdown is not None:
            p = out_dir / "breakdown.csv"
            result.breakdown.to_csv(p, index=False)
            lines.append(f"wrote {p}  (time per op for every setting)")
    if "plot" in sc.outputs:
        p = out_dir / "tpot_throughput.png"
        notes = report.write_plot(result.results, p, f"{sc.name}: TPOT and decode throughput vs context")
        lines.append(f"wrote {p}")
        lines += [f"note: {n}" for n in notes]
    return lines


def cmd_run(args) -> int:
    from simulator import planner, report
    from simulator.scenario import load_scenario

    sc = load_scenario(args.scenario or DEFAULT_SCENARIO)
    result = planner.evaluate(sc, breakdown=args.breakdown, progress=True)
    print(f"scenario {sc.name} ({sc.file})" + (f": {sc.description}" if sc.description else ""))
    print()
    if result.results.empty:
        print("nothing could be priced.")
        print(report.skipped_text(result.skipped))
        return 1
    if "table" in sc.outputs:
        print(report.run_tables(result.results))
    print(report.skipped_text(result.skipped))
    for line in _write_outputs(sc, result, _out_dir(args, sc.name), args.breakdown):
        print(line)
    _print_reproductions(sc, _out_dir(args, sc.name))
    return 0


def _print_reproductions(sc, out_dir: Path) -> None:
    if not sc.targets:
        return
    import pandas as pd

    from simulator.figures import run_reproduction

    frames = []
    for name in sc.targets:
        rep = run_reproduction(name, sc)
        print()
        print(rep.text())
        frames.append(rep.frame().assign(reproduction=name))
    p = out_dir / "reproduction.csv"
    out_dir.mkdir(parents=True, exist_ok=True)
    pd.concat(frames, ignore_index=True).to_csv(p, index=False)
    print(f"wrote {p}")


def cmd_figures(args) -> int:
    from simulator.figures import reproductions
    from simulator.scenario import load_scenario

    if args.action == "list":
        for name, fn in sorted(reproductions().items()):
            doc = (fn.__doc__ or "").strip().splitlines()
            print(f"{name:<28} {doc[0] if doc else ''}")
        return 0
    if not args.scenario:
        raise _usage("figures run needs a SCENARIO with targets:")
    sc = load_scenario(args.scenario)
    if not sc.targets:
        raise _usage(f"{sc.file} names no reproductions (targets:)")
    _print_reproductions(sc, _out_dir(args, sc.name))
    return 0


def cmd_sweep(args) -> int:
    from simulator import planner, report
    from simulator.scenario import load_scenario

    sc = load_scenario(args.scenario)
    result = planner.evaluate(sc, breakdown=False, progress=True)
    n_combos = sum(1 for _ in planner.combos(sc))
    total = len(result.results) + result.n_skipped
    print(f"scenario {sc.name}: {n_combos} strategy tuples x {len(sc.batch) * len(sc.context) * len(sc.output_tokens)}"
          f" workload settings = {total} settings; priced {len(result.results)}, skipped {result.n_skipped}")
    print(report.skipped_text(result.skipped))
    if result.results.empty:
        return 1
    df = result.results
    n_oom = int((~df["fits"]).sum())
    n_slo = int((df["fits"] & ~df["slo_ok"]).sum())
    slo = ", ".join(f"{k} <= {v:g}" for k, v in sc.slo.items()) or "none"
    print(f"not ranked: {n_oom} do not fit in memory, {n_slo} miss the SLO ({slo})")
    print()
    ranked = planner.rank(result, sc)
    print(report.ranking_text(ranked, sc.top, f"Top {sc.top} by {sc.rank_by}"))
    print()
    print(report.ranking_text(planner.best_per_context(result, sc), 10**6, f"Best per context by {sc.rank_by}"))
    print()
    for line in _write_outputs(sc, result, _out_dir(args, sc.name), False):
        print(line)
    if "csv" in sc.outputs:
        p = _out_dir(args, sc.name) / "ranked.csv"
        ranked.to_csv(p, index=False)
        print(f"wrote {p}")
    return 0


def _print_sourced(obj_sources: dict[str, str], assumed, values: dict[str, str]) -> None:
    width = max(len(k) for k in values)
    for k, v in values.items():
        src = obj_sources.get(k, "")
        mark = " [ASSUMED]" if k in assumed else ""
        print(f"  {k:<{width}}  {v:<14} {src}{mark}")


def cmd_hw(args) -> int:
    from hwmodels.spec import list_hardware, load_hardware

    if args.action == "list" or not args.name:
        if args.action == "show":
            raise _usage("hw show needs a NAME; see `sparsesim hw list`")
        print(f"{'name':<11} {'units':>10} {'HBM GiB':>8} {'GB/s':>7} {'bf16 TF':>8} {'fp8 TF':>7} {'fp4 TF':>7}  link")
        for n in list_hardware():
            h = load_hardware(n)
            pf = h.peak_flops
            def tf(d):
                return f"{pf[d] / 1e12:.0f}" if d in pf else "-"
            print(f"{h.name:<11} {h.units:>6} {h.unit_name:<3} {h.hbm_capacity_bytes / 2**30:>8.0f} "
                  f"{h.hbm_bw_bytes_s / 1e9:>7.0f} {tf('bf16'):>8} {tf('fp8'):>7} {tf('fp4'):>7}  "
                  f"{h.link_kind} " + (f"{h.link_bw_bytes_s / 1e9:.0f} GB/s" if h.link_bw_bytes_s else "? GB/s") + (f"  (x{h.devices} devices)" if h.devices > 1 else ""))
        return 0
    h = load_hardware(args.name)
    print(f"{h.name}: {h.vendor} {h.architecture} ({h.kind}), {h.devices} device(s) in this spec, up to "
          f"{h.max_devices_per_node} per node   [{h.file}]")
    vals = {
        "compute_units.count": f"{h.units} {h.unit_name}",
        "compute_units.clock_ghz": f"{h.clock_hz / 1e9:.3f} GHz" if h.clock_hz else "unknown",
    }
    for d, v in h.peak_flops.items():
        vals[f"peak_tflops.{d}"] = f"{v / 1e12:,.1f} TFLOP/s"
    vals["memory.hbm.capacity_gib"] = f"{h.hbm_capacity_bytes / 2**30:.1f} GiB"
    vals["memory.hbm.bandwidth_gbps"] = f"{h.hbm_bw_bytes_s / 1e9:,.0f} GB/s"
    if h.ddr_capacity_bytes:
        vals["memory.ddr.capacity_gib"] = f"{h.ddr_capacity_bytes / 2**30:,.0f} GiB"
    if h.ddr_bw_bytes_s:
        vals["memory.ddr.bandwidth_gbps"] = f"{h.ddr_bw_bytes_s / 1e9:,.0f} GB/s"
    if h.smem_per_unit_bytes:
        vals["onchip.smem_per_unit_kib"] = f"{h.smem_per_unit_bytes / 1024:.0f} KiB"
    if h.sram_total_bytes:
        vals["onchip.sram_total_mib"] = f"{h.sram_total_bytes / 2**20:,.1f} MiB"
    if h.l2_bytes is not None:
        vals["onchip.l2_mib"] = f"{h.l2_bytes / 2**20:.1f} MiB"
    vals["launch_overhead_us.eager"] = f"{h.launch_eager_s * 1e6:.1f} us"
    vals["launch_overhead_us.graph"] = f"{h.launch_graph_s * 1e6:.1f} us"
    vals["interconnect.bandwidth_gbps"] = (f"{h.link_bw_bytes_s / 1e9:,.0f} GB/s" if h.link_bw_bytes_s
                                           else "unknown")
    vals["interconnect.latency_us"] = f"{h.link_latency_s * 1e6:.1f} us" if h.link_latency_s else "unknown"
    vals["max_devices_per_node"] = str(h.max_devices_per_node)
    sources, assumed = dict(h.sources), set(h.assumed)
    e = h.efficiency
    if e.launch_graph_s is not None or e.launch_eager_s is not None:
        for k in ("launch_overhead_us.eager", "launch_overhead_us.graph"):
            sources[k] = f"from calibration: {e.source.split(':')[0]}"
            assumed.discard(k)
    if e.link_latency_s is not None:
        vals["interconnect.latency_us"] = f"{e.link_latency_s * 1e6:.1f} us"
        sources["interconnect.latency_us"] = ("from calibration (NCCL measurements, hwmodels/calibration/fit_links.py; "
                                              "fixed per-collective cost below)")
        assumed.discard("interconnect.latency_us")
    _print_sourced(sources, assumed, vals)
    if "onchip.sram_total_mib" not in h.sources and h.sram_total_bytes:
        print("  (onchip.sram_total_mib derived: smem per unit x units)")
    print(f"  efficiency: {e.source}" + (f"; overlap_p={e.overlap_p:.2f}" if e.overlap_p else ""))
    print("    compute: " + ", ".join(f"{k}={v:g}" for k, v in e.compute.items()))
    print("    memory:  " + ", ".join(f"{k}={v:g}" for k, v in e.memory.items()))
    print("    saturation (units to saturate bandwidth, x SMs): "
          + ", ".join(f"{k}={v:g}" for k, v in e.saturation.items()))
    if any(e.fixed_s.values()):
        print("    fixed us per kernel: " + ", ".join(f"{k}={v * 1e6:.2f}" for k, v in e.fixed_s.items() if v))
    if e.loop_iter_s:
        print(f"    latency: paged-scan loop iteration {e.loop_iter_s * 1e6:.2f} us, dependent load DRAM "
              f"{(e.dram_latency_s or 0) * 1e6:.3f} us / L2 {(e.l2_latency_s or 0) * 1e6:.3f} us "
              "(measure_latency.py; the floor of ops with serial_iters)")
    if h.notes:
        print(f"  notes: {h.notes.strip()}")
    return 0


def cmd_models(args) -> int:
    from simulator.model import list_models, load_model

    if args.action == "list" or not args.name:
        if args.action == "show":
            raise _usage("models show needs a NAME; see `sparsesim models list`")
        print(f"{'name':<18} {'params':>8} {'attn':>4} {'layers':>6} {'hidden':>6} {'heads':>5} {'kv':>4} "
              f"{'KV/token bf16':>13} {'max ctx':>8}  extras")
        for n in list_models():
            m = load_model(n)
            extras = []
            if m.moe:
                extras.append(f"MoE {m.moe.experts}+{m.moe.shared_experts} top-{m.moe.top_k}")
            if m.mtp_modules:
                extras.append(f"MTP {m.mtp_modules}")
            if m.dsa_indexer:
                extras.append(f"DSA indexer top-{m.dsa_indexer.topk}")
            print(f"{m.name:<18} {m.total_params() / 1e9:>7.2f}B {m.attention:>4} {m.layers:>6} {m.hidden:>6} "
                  f"{m.heads:>5} {m.kv_heads:>4} {m.kv_bytes_per_token('bf16') / 1024:>10.1f} KiB {m.max_context:>8}  "
                  + ", ".join(extras))
        return 0
    from simulator.report import fmt_bytes

    m = load_model(args.name)
    print(f"{m.name}   [{m.file}]")
    print(f"  source: {m.source}")
    for k in ("family", "attention", "layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "activation",
              "norm", "vocab", "tie_embeddings", "max_context", "dtype"):
        print(f"  {k:<15} {getattr(m, k)}")
    for blk in ("mla", "moe", "dsa_indexer"):
        v = getattr(m, blk)
        if v:
            print(f"  {blk:<15} " + ", ".join(f"{k}={getattr(v, k)}" for k in v.__dataclass_fields__))
    if m.mtp_modules:
        print(f"  mtp modules     {m.mtp_modules} ({m.mtp_params() / 1e9:.2f}B params, embedding/head shared)")
    print("  parameters:")
    for k, v in m.param_counts().items():
        print(f"    {k:<12} {v / 1e9:10.3f}B")
    print(f"    {'total':<12} {m.total_params() / 1e9:10.3f}B")
    for dt in ("bf16", "fp8", "int4"):
        print(f"  KV cache per token ({dt}): {fmt_bytes(m.kv_bytes_per_token(dt))}")
    if m.notes:
        print(f"  notes: {m.notes}")
    return 0


def cmd_strategies(args) -> int:
    from simulator.strategies.base import AXES, DEFAULT_VALUE, registry

    reg = registry()
    axes = [args.axis] if args.axis else list(AXES)
    for a in axes:
        if a not in reg:
            raise _usage(f"unknown axis {a!r}; axes: {', '.join(AXES)}")
        print(f"{a}:  (default {DEFAULT_VALUE[a]})")
        for name, cls in sorted(reg[a].items()):
            print(f"  {name:<14} {cls.description}")
            for p, spec in cls.params.items():
                print(f"      {p} = {spec.default!r}   [{spec.allowed}]" if spec.allowed else f"      {p} = {spec.default!r}")
                if args.sources:
                    print(f"          source: {spec.source}")
        print()
    print("Also per scenario: kv_dtype, weight_dtype, parallelism {tp, ep, attn_dp}; runtime launch/kernels.")
    return 0


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
            raise _usage("calibrate fit needs the measured CSV (from hwmodels/calibration/measure.py)")
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
        raise _usage("calibrate fit-links needs measure_collectives.py CSVs (several GPU counts)")
    if not args.device:
        raise _usage("calibrate fit-links needs --device NAME (the measured device's spec)")
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
        raise _usage(f"calibrate {cmd} needs {what}")
    if not args.device:
        raise _usage(f"calibrate {cmd} needs --device NAME (the measured device's spec)")


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


class _UsageError(Exception):
    pass


def _usage(msg: str) -> _UsageError:
    return _UsageError(msg)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="sparsesim", description="Analytic performance model of long-context LLM "
                                "decoding with sparse attention, top-k, KV compression and speculation.")
    sub = p.add_subparsers(dest="command")
    r = sub.add_parser("run", help="price a scenario and print tables, write CSV and a plot")
    r.add_argument("scenario", nargs="?", help=f"scenario YAML (default {DEFAULT_SCENARIO})")
    r.add_argument("--out", help="output folder (default results/<scenario name>)")
    r.add_argument("--breakdown", action="store_true", help="also write breakdown.csv: time per op per setting")
    r.set_defaults(func=cmd_run)
    s = sub.add_parser("sweep", help="price the whole strategy-tuple product, report skips, rank")
    s.add_argument("scenario")
    s.add_argument("--out", help="output folder (default results/<scenario name>)")
    s.set_defaults(func=cmd_sweep)
    h = sub.add_parser("hw", help="hardware specs: list, or show NAME with sources")
    h.add_argument("action", choices=["list", "show"])
    h.add_argument("name", nargs="?")
    h.set_defaults(func=cmd_hw)
    m = sub.add_parser("models", help="model architectures: list, or show NAME")
    m.add_argument("action", choices=["list", "show"])
    m.add_argument("name", nargs="?")
    m.set_defaults(func=cmd_models)
    st = sub.add_parser("strategies", help="list every strategy axis value with its parameters and defaults")
    st.add_argument("axis", nargs="?", help="only this axis")
    st.add_argument("--sources", action="store_true", help="also print where each default comes from")
    st.set_defaults(func=cmd_strategies)
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
    f = sub.add_parser("figures", help="paper reproductions: list them, or run a scenario's targets only")
    f.add_argument("action", choices=["list", "run"])
    f.add_argument("scenario", nargs="?", help="scenario YAML with targets: (for run)")
    f.add_argument("--out", help="output folder (default results/<scenario name>)")
    f.set_defaults(func=cmd_figures)
    return p


def main(argv: list[str] | None = None) -> int:
    from hwmodels.errors import SparsesimError

    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    try:
        return args.func(args)
    except (SparsesimError, _UsageError) as e:
        print(f"sparsesim: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
