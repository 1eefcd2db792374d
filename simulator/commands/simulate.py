"""`sparsesim simulate SCENARIO`: replay the scenario's `serving:` requests through the discrete-event engine.

Prints the summary and writes, under OUT/<scenario name>/ (default results/<name>/):
    requests.parquet, requests.csv      one row per request (simulator.engine.results)
    timeseries.parquet                  one row per engine event (step, or run of identical decode steps)
    summary.csv                         the summary as one row
    latency_cdf.png, timeline.png       (simulator.engine.plots)
"""
from __future__ import annotations

import math

from simulator.commands._common import (
    NOTHING_FITS,
    OutputDir,
    UsageError,
    add_json_argument,
    add_out_argument,
    add_set_argument,
    calibration_lines,
    emit_json,
)


def register(sub) -> None:
    p = sub.add_parser("simulate", help="replay a scenario's serving: requests through the discrete-event engine")
    p.add_argument("scenario", help="a scenario YAML path or shipped name with a serving: section "
                                    "(e.g. serving_mooncake_h100)")
    add_out_argument(p)
    add_set_argument(p)
    add_json_argument(p)
    p.add_argument("--requests", type=int, metavar="N", help="simulate only N requests (first N of a trace; "
                                                             "N generated)")
    p.add_argument("--rate-scale", type=float, metavar="X", help="multiply the arrival rate by X (overrides "
                                                                 "serving.requests.rate_scale)")
    p.add_argument("--seed", type=int, metavar="S", help="random seed (overrides serving.seed)")
    p.add_argument("--concurrency", type=int, metavar="C", help="run the requests as a closed loop of C in flight "
                                                                "(the next submitted when one finishes), as vLLM's "
                                                                "--max-concurrency; overrides serving.requests")
    p.add_argument("--html", action="store_true", help="also write report.html (interactive, self-contained: latency "
                                                       "CDFs, timeline, a step's per-op breakdown, provenance)")
    from simulator.vllm_knobs import add_knob_arguments

    add_knob_arguments(p)
    p.set_defaults(func=cmd_simulate)


def cmd_simulate(args) -> int:
    from simulator.engine.api import load_source, simulate, with_concurrency
    from simulator.engine.plots import latency_cdf, timeline
    from simulator.engine.results import summary_text
    from simulator.scenario import find_scenario, read_scenario_doc, scenario_from_doc
    from simulator.vllm_knobs import apply_knobs, knob_flags

    if args.requests is not None and not 1 <= args.requests <= 50_000_000:
        raise UsageError(f"--requests must be between 1 and 50,000,000, got {args.requests}")
    if args.rate_scale is not None and not (math.isfinite(args.rate_scale) and 0 < args.rate_scale <= 1e6):
        raise UsageError(f"--rate-scale must be a positive number (<= 1e6), got {args.rate_scale}")
    if args.seed is not None and not 0 <= args.seed < 2 ** 63:
        raise UsageError(f"--seed must be a non-negative integer, got {args.seed}")
    if args.concurrency is not None and not 1 <= args.concurrency <= 1_000_000:
        raise UsageError(f"--concurrency must be between 1 and 1,000,000, got {args.concurrency}")
    path = find_scenario(args.scenario)
    doc = apply_knobs(read_scenario_doc(path, args.set), args, str(path))
    sc = scenario_from_doc(doc, str(path), path.parent, list(args.set) + knob_flags(args))
    cfg = sc.serving
    if cfg is None:
        raise UsageError(f"{sc.file}: has no serving: section; `sparsesim simulate` needs one (see "
                         "simulator/engine/config.py or the shipped serving_*.yaml scenarios)")
    if args.concurrency is not None:
        src = cfg.source
        cfg = with_concurrency(cfg, args.concurrency, src.warmup if src.concurrency else 0, src.think_s)
    out = OutputDir.prepare(args.out, sc.name)
    seed = cfg.seed if args.seed is None else args.seed
    trace = load_source(cfg.source, seed, requests=args.requests, rate_scale=args.rate_scale)
    res = simulate(cfg, trace, seed=seed, progress=True)
    print(f"scenario {sc.name} ({sc.file})" + (f": {sc.description}" if sc.description else "")
          + (f" [changed by --set {'; '.join(args.set)}: the description is the file's]" if args.set else ""))
    if cfg.source.concurrency:
        print(f"requests: {trace.name} ({len(trace):,} requests, closed loop of {cfg.source.concurrency} in flight, "
              f"{cfg.source.warmup} warm-up; lengths: {trace.source})")
    else:
        print(f"requests: {trace.name} ({len(trace):,} requests over {trace.duration_s:,.0f} s; {trace.source})")
    for lbl in dict.fromkeys(res.stats.replica_labels):
        n = res.stats.replica_labels.count(lbl)
        blocks = res.stats.num_blocks[res.stats.replica_labels.index(lbl)]
        print(f"replicas: {n} x {lbl}  ({blocks:,} KV blocks each)")
    for line in calibration_lines([g.combo.hardware for g in cfg.groups]):
        print(line)
    print(f"router: {cfg.router}; seed {seed}; engine runtime profile: {cfg.engine}")
    for line in res.notes:
        print(f"note: {line}")
    print()
    print(summary_text(res.summary))
    groups = None
    if len(set(res.stats.replica_labels)) > 1 and res.summary["finished"]:
        from simulator.engine.results import group_breakdown, group_breakdown_text

        groups = group_breakdown(res.requests, list(res.stats.replica_labels), cfg.slo)
        print()
        print(group_breakdown_text(groups))
    print()
    print(f"simulated {res.stats.sim_end_s:,.1f} s in {res.wall_s:.2f} s wall "
          f"({res.summary['simulated_s_per_wall_s']:,.0f} simulated s per wall s, {res.stats.events:,} events)")
    if cfg.trace_replay == "per_step" and res.summary["finished"]:
        # the same run at the trace's mean statistics (serving.trace_replay: mean), for its effect
        from dataclasses import replace

        from simulator.engine.trace_replay import comparison_text
        mean = simulate(replace(cfg, trace_replay="mean"), trace, seed=seed)
        print()
        print(comparison_text(res.summary, mean.summary))
    if not res.summary["finished"]:
        res.requests.to_csv(out.file("requests.csv"), index=False)
        print(f"nothing finished: all {len(trace):,} requests were rejected (prompt + output larger than a replica's KV "
              f"cache: {', '.join(f'{b:,}' for b in dict.fromkeys(res.stats.num_blocks))} blocks of "
              f"{cfg.scheduler['block_size']} tokens); no latency to report")
        print(f"wrote {out.path / 'requests.csv'}")
        for line in out.finish():
            print(line)
        emit_json(args, {"command": "simulate", "scenario": sc.name, "file": sc.file, "requests": len(trace),
                         "summary": res.summary, "files": [str(out.path / n) for n in out.written]})
        return NOTHING_FITS
    res.requests.to_parquet(out.file("requests.parquet"), index=False)
    res.requests.to_csv(out.file("requests.csv"), index=False)
    with open(out.file("requests.jsonl"), "w") as f:
        res.requests.to_json(f, orient="records", lines=True)
    res.timeseries.to_parquet(out.file("timeseries.parquet"), index=False)
    import pandas as pd

    pd.DataFrame([{k: v for k, v in res.summary.items()}]).to_csv(out.file("summary.csv"), index=False)
    if groups is not None:
        groups.to_csv(out.file("groups.csv"), index=False)
    nrep = res.summary['replicas']
    title = f"{sc.name}: {len(trace):,} request{'s' if len(trace) != 1 else ''}, {nrep} replica{'s' if nrep != 1 else ''}"
    per_group = None
    if groups is not None:
        from simulator.engine.results import request_groups, short_group_names

        per_group = short_group_names(request_groups(res.requests, list(res.stats.replica_labels)))
    latency_cdf(res.requests, cfg.slo, out.file("latency_cdf.png"), title, groups=per_group)
    timeline(res.requests, res.timeseries, res.stats.num_blocks, out.file("timeline.png"), title)
    if args.html:
        from simulator.html_report import simulate_report

        simulate_report(out.file("report.html"), sc, cfg, res, trace)
    for name in out.written:
        print(f"wrote {out.path / name}")
    for line in out.finish():
        print(line)
    emit_json(args, {"command": "simulate", "scenario": sc.name, "file": sc.file, "engine": cfg.engine, "seed": seed,
                     "requests": len(trace), "summary": res.summary, "notes": res.notes,
                     "groups": None if groups is None else groups.to_dict(orient="records"),
                     "files": [str(out.path / n) for n in out.written]})
    return 0
