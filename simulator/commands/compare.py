"""`sparsesim compare RESULT`: a measured serving benchmark against the engine replaying the same workload.

    sparsesim compare vllm_result.json --scenario serving_hf_cb_h100
    sparsesim compare vllm_result.json --hardware H100-SXM --model Llama-3.1-8B --engine vllm-v1 --max-num-seqs 256
    sparsesim compare out.jsonl --format sglang --run -1 --scenario my_scenario.yaml --set serving.engine=sglang
    sparsesim compare requests.csv --max-concurrency 16 --scenario ... --fit-host my_host.yaml

RESULT: vLLM's `--save-result --save-detailed` JSON, SGLang bench_serving's `--output-details` JSONL, or a
per-request CSV (simulator.benchmark_results). The workload is rebuilt from it (simulator.benchmark_results.replay:
closed loop for a fixed concurrency, the measured send times, or the request rate), simulated on the scenario's
serving: replicas (or --hardware / --model / --engine / --tp with vLLM's knobs), and compared per metric. Writes
under OUT/<name>/ (default results/compare_<result file>/): compare.csv (the table), requests.csv (measured and
simulated per request), compare_cdf.png, compare_scatter.png, and with --fit-host the profile file it names.
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

from simulator.commands._common import (
    OutputDir,
    UsageError,
    add_json_argument,
    add_out_argument,
    add_set_argument,
    calibration_lines,
    emit_json,
)


def register(sub) -> None:
    from simulator.vllm_knobs import add_knob_arguments

    p = sub.add_parser("compare", help="compare a measured serving benchmark (vLLM / SGLang result, request CSV) with "
                                       "the engine replaying its workload; optionally fit the host time")
    p.add_argument("result", help="the benchmark's result file: vLLM --save-result JSON, SGLang bench_serving JSONL, "
                                  "or a per-request CSV; or the name of a committed real run (e.g. "
                                  "hfval_cc4_in2k_nvidia-h100-80gb-hbm3_2026-11-26)")
    p.add_argument("--format", choices=("vllm", "sglang", "csv"), help="the result file's format (default: detected)")
    p.add_argument("--run", type=int, default=-1, metavar="I", help="which run of an SGLang JSONL (0-based; default "
                                                                    "-1, the last)")
    p.add_argument("--scenario", help="a scenario with a serving: section (its replicas, engine, knobs, SLOs)")
    p.add_argument("--hardware", help="without --scenario: the replica's hardware (e.g. H100-SXM)")
    p.add_argument("--model", help="without --scenario: the model (e.g. Llama-3.1-8B)")
    p.add_argument("--engine", help="without --scenario: the engine runtime profile (vllm-v1, sglang, trtllm, hf-cb, "
                                    "own, none or a profile YAML; default vllm-v1)")
    p.add_argument("--tp", type=int, default=1, help="without --scenario: tensor-parallel GPUs per replica (default 1)")
    p.add_argument("--max-concurrency", type=int, metavar="C", help="the client's cap on requests in flight, when the "
                                                                    "file does not say (a request CSV)")
    p.add_argument("--request-rate", type=float, metavar="R", help="the client's request rate (req/s), when the file "
                                                                   "does not say (a request CSV without start times)")
    p.add_argument("--think-ms", type=float, default=0.0, metavar="MS", help="closed loop: the client's time between a "
                                                                             "request's last token and the next send")
    p.add_argument("--slo", metavar="ttft_ms=N,tpot_ms=M", help="SLO limits for the goodput row (default: the "
                                                                "scenario's serving.slo)")
    p.add_argument("--seed", type=int, default=0, help="random seed (drawn arrivals, sampled host times)")
    p.add_argument("--fit-host", metavar="OUT.yaml", help="fit the engine profile's host time on the first half of the "
                                                          "run, report the error on the held-out half, write the "
                                                          "fitted profile to OUT.yaml (a scenario names it as "
                                                          "serving.engine)")
    p.add_argument("--html", action="store_true", help="also write report.html (interactive, self-contained)")
    add_knob_arguments(p)
    add_set_argument(p)
    add_out_argument(p)
    add_json_argument(p)
    p.set_defaults(func=cmd_compare)


def _parse_slo(text: str | None) -> dict | None:
    if text is None:
        return None
    out = {}
    for part in text.split(","):
        k, _, v = part.partition("=")
        k = k.strip()
        if k not in ("ttft_ms", "tpot_ms", "e2e_ms"):
            raise UsageError(f"--slo: unknown limit {k!r}; known: ttft_ms, tpot_ms, e2e_ms (e.g. ttft_ms=1000,tpot_ms=50)")
        try:
            x = float(v)
        except ValueError:
            raise UsageError(f"--slo: {k}={v!r} is not a number of ms") from None
        if not (math.isfinite(x) and x > 0):
            raise UsageError(f"--slo: {k} must be a positive number of ms, got {v!r}")
        out[k] = x
    return out


def scenario_doc(args, run) -> tuple[dict, str, Path]:
    """(raw scenario mapping with --set and vLLM knobs applied, its file label, its folder)."""
    from simulator.overrides import apply_overrides
    from simulator.scenario import TOP_KEYS, find_scenario, read_scenario_doc
    from simulator.vllm_knobs import apply_knobs

    if args.scenario:
        if args.hardware or args.model or args.engine:
            raise UsageError("give either --scenario or --hardware/--model/--engine, not both (use --set to change a "
                             "scenario's values)")
        path = find_scenario(args.scenario)
        doc = read_scenario_doc(path, args.set)
        file, base = str(path), path.parent
    else:
        if not (args.hardware and args.model):
            raise UsageError("give --scenario NAME (with a serving: section) or both --hardware and --model")
        if not 1 <= args.tp <= 4096:
            raise UsageError(f"--tp must be between 1 and 4096, got {args.tp}")
        stem = "".join(c if c.isalnum() or c in "-_." else "_" for c in Path(run.file).stem)[:80].lstrip(".") or "run"
        doc = {"name": f"compare_{stem}", "hardware": args.hardware, "model": args.model,
               "workload": {"batch": [1], "context": [4096], "output_tokens": 16},
               "serving": {"engine": args.engine or "vllm-v1",
                           "requests": {"poisson": {"rate": 1.0, "count": 1}, "input_tokens": {"fixed": 16},
                                        "output_tokens": {"fixed": 16}},
                           "replicas": [{"count": 1, "parallelism": {"tp": args.tp}}]}}
        file, base = "<compare --hardware/--model>", Path(".")
        doc = apply_overrides(doc, args.set, file, TOP_KEYS)
    return apply_knobs(doc, args, file), file, base


def cmd_compare(args) -> int:
    import numpy as np
    import pandas as pd

    from simulator.benchmark_results import read_result
    from simulator.benchmark_results.plots import compare_cdf, compare_scatter
    from simulator.benchmark_results.replay import (
        error_rows,
        measured_stats,
        per_request_errors,
        replay,
        simulated_stats,
        table_text,
    )
    from simulator.scenario import scenario_from_doc
    from simulator.vllm_knobs import knob_flags

    if not (math.isfinite(args.think_ms) and 0 <= args.think_ms <= 1e6):
        raise UsageError(f"--think-ms must be a number of ms >= 0, got {args.think_ms}")
    if args.seed is not None and not 0 <= args.seed < 2 ** 63:
        raise UsageError(f"--seed must be a non-negative integer, got {args.seed}")
    run = read_result(args.result, args.format, args.run)
    if args.max_concurrency is not None:
        if args.max_concurrency < 1:
            raise UsageError(f"--max-concurrency must be a positive integer, got {args.max_concurrency}")
        if run.max_concurrency is not None and run.max_concurrency != args.max_concurrency:
            raise UsageError(f"--max-concurrency {args.max_concurrency}: {run.file} says max_concurrency "
                             f"{run.max_concurrency}")
        run.max_concurrency = args.max_concurrency
    if args.request_rate is not None:
        if not (math.isfinite(args.request_rate) and args.request_rate > 0):
            raise UsageError(f"--request-rate must be a positive number, got {args.request_rate}")
        run.request_rate = args.request_rate
    doc, file, base = scenario_doc(args, run)
    sc = scenario_from_doc(doc, file, base, list(args.set) + knob_flags(args))
    cfg = sc.serving
    if cfg is None:
        raise UsageError(f"{sc.file}: has no serving: section; `sparsesim compare` needs one (its replicas and engine)")
    slo = _parse_slo(args.slo)
    if slo is None:
        slo = dict(cfg.slo)
    out = OutputDir.prepare(args.out, f"compare_{sc.name}" if args.scenario else sc.name)
    think = args.think_ms * 1e-3
    res, how = replay(run, cfg, args.seed, think, progress=True)
    meas, sim = measured_stats(run, slo), simulated_stats(res, slo)
    rows = error_rows(meas, sim)
    per = per_request_errors(run, res)

    print(f"measured: {run.file} ({run.format}{', ' + run.backend if run.backend else ''}"
          f"{', ' + run.label if run.label else ''}): {len(run):,} requests, {int(run.ok.sum()):,} finished")
    print(f"workload: {how}")
    print(f"simulated: scenario {sc.name} ({sc.file}); engine runtime profile {cfg.engine}; "
          + "; ".join(f"{g.count} x {g.combo.hardware.name} {g.combo.model.name} {g.combo.strategy_label()}"
                      for g in cfg.groups))
    for line in calibration_lines([g.combo.hardware for g in cfg.groups]):
        print(line)
    for line in res.notes:
        print(f"note: {line}")
    if slo:
        print("SLO (goodput): " + ", ".join(f"{k} <= {v:g}" for k, v in slo.items()))
    print()
    print(table_text(rows))
    print()
    print("per request |simulated / measured - 1| (same requests, in the order sent): "
          + ", ".join(f"{k.upper()} median {v[0]:.1%} p90 {v[1]:.1%}" for k, v in per.items()))
    if run.itl_s is not None and run.format == "vllm" and not any(len(g) for g in run.itl_s):
        print("note: the file's itls are empty: no ITL to compare")

    fit = None
    if args.fit_host:
        from simulator.benchmark_results.fit_host import fit_host

        fit = fit_host(run, cfg, args.fit_host, args.seed, think)
        print()
        print(f"host-time fit ({'host launch per forward' if fit.kind == 'launch' else 'per-step host time'} = "
              f"{fit.value_s * 1e3:.3f} ms): fitted on {len(fit.fit_idx)} requests (the first half sent), judged on "
              f"the other {len(fit.held_idx)}")
        print("held-out half, before (the profile as given) -> after (fitted):")
        for b, a in zip(fit.base_rows, fit.held_rows):
            if b["stat"] in ("p50", "p90") and b["metric"] in ("ttft", "tpot", "e2e"):
                fe = lambda e: "-" if not math.isfinite(e) else f"{e:+.1%}"  # noqa: E731
                print(f"  {b['metric']} {b['stat']}: error {fe(b['error'])} -> {fe(a['error'])}")
        print(f"sparsesim: --fit-host: wrote {fit.path} (host time fitted to {run.file}; name it as serving.engine: "
              f"{fit.path} to use it)", file=sys.stderr)

    pd.DataFrame(rows).to_csv(out.file("compare.csv"), index=False)
    df = res.requests
    ok = run.ok
    m_tpot = np.where(run.output_tokens[ok] > 1, (run.e2e_s[ok] - run.ttft_s[ok]) /
                      np.maximum(run.output_tokens[ok] - 1, 1), np.nan)
    per_req = pd.DataFrame({"request": np.flatnonzero(ok), "input_tokens": run.input_tokens[ok].astype(int),
                            "output_tokens": run.output_tokens[ok].astype(int),
                            "measured_ttft_s": run.ttft_s[ok], "simulated_ttft_s": df["ttft_s"].to_numpy(),
                            "measured_tpot_s": m_tpot, "simulated_tpot_s": df["tpot_s"].to_numpy(),
                            "measured_e2e_s": run.e2e_s[ok], "simulated_e2e_s": df["e2e_s"].to_numpy(),
                            "simulated_arrival_s": df["arrival_s"].to_numpy()})
    per_req.to_csv(out.file("requests.csv"), index=False)
    with open(out.file("requests.jsonl"), "w") as f:
        per_req.to_json(f, orient="records", lines=True)
    meas_ms = {"ttft": run.ttft_s[ok] * 1e3, "tpot": m_tpot * 1e3, "e2e": run.e2e_s[ok] * 1e3}
    if run.itl_s is not None:
        g = [x for i, x in enumerate(run.itl_s) if ok[i] and len(x)]
        meas_ms["itl"] = np.concatenate(g) * 1e3 if g else np.zeros(0)
    from simulator.engine.results import itl_samples

    gaps, w = itl_samples(res.engine)
    sim_ms = {"ttft": df["ttft_s"].to_numpy() * 1e3, "tpot": df["tpot_s"].to_numpy() * 1e3,
              "e2e": df["e2e_s"].to_numpy() * 1e3, "itl": np.repeat(gaps, w.astype(int)) * 1e3}
    title = f"{Path(run.file).name} vs {sc.name}"
    compare_cdf(meas_ms, sim_ms, out.file("compare_cdf.png"), title)
    compare_scatter(meas_ms, sim_ms, out.file("compare_scatter.png"), title)
    if args.html:
        from simulator.html_report import compare_report

        compare_report(out.file("report.html"), title=title, run=run, res=res, rows=rows, meas_ms=meas_ms,
                       sim_ms=sim_ms, sc=sc, how=how, fit=fit)
    for name in out.written:
        print(f"wrote {out.path / name}")
    for line in out.finish():
        print(line)
    emit_json(args, {"command": "compare", "result_file": run.file, "format": run.format, "scenario": sc.name,
                     "engine": cfg.engine, "workload": how, "requests": int(run.ok.sum()),
                     "measured": meas, "simulated": sim, "rows": rows,
                     "per_request_abs_error": {k: {"p50": v[0], "p90": v[1]} for k, v in per.items()},
                     "fit_host": None if fit is None else {"kind": fit.kind, "value_ms": fit.value_s * 1e3,
                                                           "path": fit.path, "held_out": fit.held_rows,
                                                           "fit_requests": len(fit.fit_idx),
                                                           "held_out_requests": len(fit.held_idx)},
                     "files": [str(out.path / n) for n in out.written]})
    return 0
