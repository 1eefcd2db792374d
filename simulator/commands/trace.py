"""`sparsesim trace list | info | stats | plot | synth | record`: attention/top-k traces and request traces.

    trace list                       shipped attention traces and request traces
    trace info NAME-or-FILE          an attention trace's metadata (model, context, policies, provenance)
    trace stats NAME-or-FILE         statistics per layer (and, for request traces, arrival rate, burstiness,
                                     length percentiles, prefix reuse) beside the seed documents' published
                                     values; writes stats.csv, published.csv and the plots
    trace plot NAME-or-FILE          only the plots
    trace synth --from NAME --context N --out FILE   a synthetic trace fitted to a recorded one
    trace record [MODEL.bin] --out FILE              record a trace on the CPU from a llama2.c model
                                                     (default: the shipped stories260K)
"""
from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np

from simulator.commands._common import OutputDir, UsageError, add_out_argument

REQUEST_SUFFIXES = (".jsonl", ".json", ".csv", ".parquet")


def register(sub) -> None:
    t = sub.add_parser("trace", help="attention/top-k traces and request traces: list, info, stats, plot, synth, "
                                     "record")
    t.add_argument("action", choices=["list", "info", "stats", "plot", "synth", "record"])
    t.add_argument("target", nargs="?", help="a shipped trace name or a file (record: a llama2.c .bin model)")
    add_out_argument(t)
    t.add_argument("--recompute", action="store_true", help="stats: recompute instead of reading NAME.stats.npz")
    t.add_argument("--from", dest="source", metavar="TRACE", help="synth: the recorded trace to fit")
    t.add_argument("--context", type=int, help="synth: context length of the synthetic trace (tokens)")
    t.add_argument("--steps", type=int, default=32, help="synth: decode steps (default 32)")
    t.add_argument("--seed", type=int, default=0, help="synth / record: seed of the numpy Generator")
    t.add_argument("--sequences", type=int, default=2, help="record: sequences sampled (default 2)")
    t.add_argument("--prompt", type=int, default=128, help="record: prompt tokens (default 128)")
    t.add_argument("--max-tokens", type=int, help="record: last position recorded (default: the model's context)")
    t.set_defaults(func=cmd_trace)


def _is_request(target: str) -> bool:
    from simulator.traces.requests import SHIPPED

    if target in SHIPPED:
        return True
    name = target[:-3] if target.endswith(".gz") else target
    return name.endswith(REQUEST_SUFFIXES)


def _need_target(args, what: str) -> str:
    if not args.target:
        raise UsageError(f"trace {args.action} needs {what}; see `sparsesim trace list`")
    return args.target


def cmd_trace(args) -> int:
    return {"list": _list, "info": _info, "stats": _stats, "plot": _plot, "synth": _synth,
            "record": _record}[args.action](args)


def _list(args) -> int:
    from simulator.traces.analysis import load_stats
    from simulator.traces.requests import SHIPPED, shipped_request_traces
    from simulator.traces.scenario import shipped_attention_traces

    found = shipped_attention_traces()
    print("attention/top-k traces (traces/attention/; use with `trace: NAME` in a scenario):")
    if not found:
        print("  (none shipped)")
    width = max((len(n) for n in found), default=4)
    for name, path in found.items():
        ts = load_stats(path, write_cache=False)
        m = ts.meta["model"]
        print(f"  {name:<{width}}  {ts.source:<9} {m['name']} ({m['layers']}L/{m['kv_heads']}KV), "
              f"context {ts.meta['context']['max_tokens']:,}, {ts.meta['steps']} steps, "
              f"{path.stat().st_size / 1e6:.2f} MB")
    print("request traces (traces/requests/; `sparsesim trace stats NAME`):")
    for name, (path, src) in shipped_request_traces().items():
        size = f"{path.stat().st_size / 1e6:.2f} MB" if path.is_file() else "missing"
        print(f"  {name:<{max(len(n) for n in SHIPPED)}}  {size}  {src}")
    return 0


def _info(args) -> int:
    import json

    from simulator.traces.format import read_trace
    from simulator.traces.scenario import find_trace

    target = _need_target(args, "a trace name or file")
    if _is_request(target):
        from simulator.traces.requests import load_requests

        t = load_requests(target)
        print(f"request trace {t.name}: {len(t):,} requests over {t.duration_s:,.1f} s; source: {t.source}")
        return 0
    tr = read_trace(find_trace(target))
    m = tr.meta
    print(f"trace {tr.name} ({tr.file})")
    print(f"  source      {m['source']}" + ("  (SYNTHETIC: not recorded from a model)" if m["source"] == "synthetic"
                                             else ""))
    mm = m["model"]
    print(f"  model       {mm['name']}: {mm['layers']} layers, {mm['heads']} heads / {mm['kv_heads']} KV heads, "
          f"head_dim {mm['head_dim']}, {mm['params']:,} parameters, context {mm['max_context']:,}")
    if mm.get("notes"):
        print(f"              {mm['notes']}")
    if "draft_model" in m:
        d = m["draft_model"]
        print(f"  draft       {d.get('name')}: {d.get('layers')} layers, {d.get('params', 0):,} parameters")
    print(f"  context     prompt {m['context']['prompt_tokens']:,}, up to {m['context']['max_tokens']:,} tokens; "
          f"{m['steps']} steps recorded ({len(tr.consecutive())} consecutive pairs)")
    print(f"  made        {m['made']['date']} by {m['made']['script']} (seed {m['made']['seed']}, "
          f"{m['made'].get('device', '?')})")
    print(f"  how         {m['made']['how']}")
    print(f"  provenance  {m['provenance']}")
    print("  policies")
    for name, p in m["policies"].items():
        print(f"    {name:<9} {p['kind']:<10} unit {p['unit']} x{p['block_size']}, k {p['k']}, rows {p['queries']}"
              f"{', tiers ' + str(p['tiers']) if p['tiers'] else ''}: {p['meaning']}")
        print(f"              params {json.dumps(p['params'])[:160]}")
    if m.get("measures"):
        print(f"  measures    {', '.join(m['measures'])}")
    if tr.accepted is not None:
        print(f"  spec        {len(tr.accepted)} rounds, K = {m['spec'].get('k')}: {m['spec'].get('verification', '')}")
    if m.get("synthetic"):
        print(f"  synthetic   {json.dumps(m['synthetic'])[:300]}")
    return 0


# ---- statistics ------------------------------------------------------------------------------------------
def _stat_lines(ts) -> tuple[list[str], list[dict]]:
    """Printable lines and CSV rows of every statistic (per layer where it has one)."""
    from simulator.traces.stats import CATALOG

    L = ts.layers
    lines = []
    rows = []
    hdr = f"{'statistic':<30} {'selection':<26} " + " ".join(f"{'L' + str(i):>6}" for i in range(L)) + f" {'mean':>7}"
    lines.append(hdr)
    lines.append("-" * len(hdr))
    for st in CATALOG:
        if not ts.has(st.name) or st.name.endswith("_head"):
            continue
        arr = np.asarray(ts.get(st.name), dtype=np.float64)
        axes = list(st.axes)
        if "sample" in axes:  # distributions: quantiles per layer
            if "layer" not in axes:
                continue
            other = [a for a in axes if a not in ("layer", "sample")]
            for combo in itertools.product(*[range(arr.shape[axes.index(a)]) for a in other]):
                idx = [slice(None)] * arr.ndim
                for a, i in zip(other, combo):
                    idx[axes.index(a)] = i
                sub = arr[tuple(idx)]                                                   # [layer, sample]
                sel = ", ".join(f"{a}={ts.coords.get(a, range(999))[i]}" for a, i in zip(other, combo))
                with np.errstate(all="ignore"):
                    p10 = np.nanpercentile(sub, 10, axis=-1) if np.isfinite(sub).any() else np.full(L, np.nan)
                    p90 = np.nanpercentile(sub, 90, axis=-1) if np.isfinite(sub).any() else np.full(L, np.nan)
                lines.append(f"{st.name:<30} {(sel + ' p10') [:26]:<26} " + " ".join(f"{v:6.3f}" for v in p10))
                lines.append(f"{'':<30} {(sel + ' p90')[:26]:<26} " + " ".join(f"{v:6.3f}" for v in p90))
            continue
        lay = "layer" if "layer" in axes else ("target_layer" if "target_layer" in axes else None)
        if lay is None:
            flat = arr.reshape(-1)
            coord_axis = axes[0] if axes else None
            labels = [f"{coord_axis}={c}" for c in ts.coords.get(coord_axis, range(len(flat)))] if coord_axis else [""]
            if coord_axis == "round":
                with np.errstate(all="ignore"):
                    lines.append(f"{st.name:<30} {'mean (p10-p90)':<26} {np.nanmean(flat):.3f} "
                                 f"({np.nanpercentile(flat, 10):.1f}-{np.nanpercentile(flat, 90):.1f}), "
                                 f"{len(flat)} rounds")
                rows.append({"statistic": st.name, "selection": "mean", "layer": "", "value": float(np.nanmean(flat))})
                continue
            if arr.ndim == 2:   # e.g. snapkv.recall_decay [budget, step_bin]: one line per first-axis value
                a0, a1 = axes
                for i, c0 in enumerate(ts.coords.get(a0, range(arr.shape[0]))):
                    txt = ", ".join(f"{a1}={c1} {v:.3f}" for c1, v in zip(ts.coords.get(a1, range(arr.shape[1])), arr[i]))
                    lines.append(f"{st.name:<30} {f'{a0}={c0}':<26} {txt}")
                    for c1, v in zip(ts.coords.get(a1, range(arr.shape[1])), arr[i]):
                        rows.append({"statistic": st.name, "selection": f"{a0}={c0}, {a1}={c1}", "layer": "",
                                     "value": float(v)})
                continue
            txt = ", ".join(f"{lab} {v:.3f}" if lab else f"{v:.3f}" for lab, v in zip(labels, flat))
            lines.append(f"{st.name:<30} {'':<26} {txt}")
            for lab, v in zip(labels, flat):
                rows.append({"statistic": st.name, "selection": lab, "layer": "", "value": float(v)})
            continue
        other = [a for a in axes if a != lay]
        for combo in itertools.product(*[range(arr.shape[axes.index(a)]) for a in other]):
            idx = [slice(None)] * arr.ndim
            for a, i in zip(other, combo):
                idx[axes.index(a)] = i
            sub = arr[tuple(idx)]
            sel = ", ".join(f"{a}={ts.coords[a][i] if a in ts.coords else i}" for a, i in zip(other, combo))
            with np.errstate(all="ignore"):
                mean = np.nanmean(sub) if np.isfinite(sub).any() else np.nan
            vals = " ".join(f"{v:6.3f}" for v in sub[:L])
            lines.append(f"{st.name:<30} {sel[:26]:<26} {vals} {mean:7.3f}")
            for i, v in enumerate(sub):
                rows.append({"statistic": st.name, "selection": sel, "layer": i, "value": float(v)})
    return lines, rows


def _stats(args) -> int:
    import pandas as pd

    target = _need_target(args, "a trace name or file")
    if _is_request(target):
        from simulator.traces.reqstats import plot_requests, request_stats
        from simulator.traces.requests import load_requests

        out = OutputDir.prepare(args.out, f"trace_{Path(target).name.split('.')[0]}")
        t = load_requests(target)
        st = request_stats(t)
        print(f"request trace {t.name}: {t.source}")
        for k, v in st.items():
            print(f"  {k:<28} {v:,.4g}")
        pd.DataFrame([st]).to_csv(out.file("request_stats.csv"), index=False)
        plot_requests(t, out.file("requests.png"))
        for f in out.written:
            print(f"wrote {out.path / f}")
        out.finish()
        return 0
    from simulator.traces.analysis import load_stats
    from simulator.traces.compare import published_rows
    from simulator.traces.scenario import find_trace

    path = find_trace(target)
    out = OutputDir.prepare(args.out, f"trace_{path.name[:-4]}")
    ts = load_stats(path, recompute=args.recompute)
    m = ts.meta["model"]
    print(f"trace {ts.name} [{ts.source}]: {m['name']} ({m['layers']} layers, {m['kv_heads']} KV heads), "
          f"{ts.meta['steps']} steps, mean context {ts.meta['mean_context']:,.0f}")
    if ts.source == "synthetic":
        print("  SYNTHETIC trace: generated by simulator.traces.synth, not recorded from a model")
    for n in ts.notes:
        print(f"  note: {n}")
    print()
    lines, rows = _stat_lines(ts)
    print("\n".join(lines))
    pd.DataFrame(rows).to_csv(out.file("stats.csv"), index=False)
    pub = published_rows(ts)
    print()
    print("beside the seed documents (published.yaml; 'proxy' = an accuracy number standing in, 'example' = a "
          "worked example):")
    print(f"{'statistic':<26} {'selection':<44} {'trace':>7} {'published':>10} {'kind':<9} {'verdict':<8} source")
    for r in pub:
        print(f"{r['statistic']:<26} {r['selection'][:44]:<44} {r['trace']:7.3f} {r['published']:>10} "
              f"{r['kind']:<9} {r['verdict']:<8} {r['source'][:90]}")
    pd.DataFrame(pub).to_csv(out.file("published.csv"), index=False)
    from simulator.traces.plots import plot_stats

    for f in plot_stats(ts, out.path):
        out.file(f.name)
    print()
    for f in out.written:
        print(f"wrote {out.path / f}")
    out.finish()
    return 0


def _plot(args) -> int:
    target = _need_target(args, "a trace name or file")
    if _is_request(target):
        from simulator.traces.reqstats import plot_requests
        from simulator.traces.requests import load_requests

        out = OutputDir.prepare(args.out, f"trace_{Path(target).name.split('.')[0]}")
        plot_requests(load_requests(target), out.file("requests.png"))
    else:
        from simulator.traces.analysis import load_stats
        from simulator.traces.plots import plot_stats
        from simulator.traces.scenario import find_trace

        path = find_trace(target)
        out = OutputDir.prepare(args.out, f"trace_{path.name[:-4]}")
        for f in plot_stats(load_stats(path), out.path):
            out.file(f.name)
    for f in out.written:
        print(f"wrote {out.path / f}")
    out.finish()
    return 0


def _synth(args) -> int:
    from simulator.traces.format import read_trace, write_trace
    from simulator.traces.scenario import find_trace
    from simulator.traces.synth import fit_synth, side_by_side, synthesize

    if not args.source or not args.context:
        raise UsageError("trace synth needs --from TRACE and --context N (and --out FILE.npz)")
    if not args.out or not args.out.endswith(".npz"):
        raise UsageError("trace synth needs --out FILE.npz (the synthetic trace to write)")
    if not 1024 <= args.context <= 1 << 20:
        raise UsageError(f"--context must be in [1024, 1048576], got {args.context}")
    if not 2 <= args.steps <= 4096:
        raise UsageError(f"--steps must be in [2, 4096], got {args.steps}")
    src = read_trace(find_trace(args.source))
    params = fit_synth(src, progress=True)
    rng = np.random.default_rng(args.seed)
    name = Path(args.out).name[:-4]
    tr = synthesize(params, context=args.context, steps=args.steps, rng=rng, name=name, seed=args.seed)
    path = write_trace(args.out, tr)
    print(f"wrote {path} ({path.stat().st_size / 1e6:.2f} MB): SYNTHETIC trace at {args.context:,} tokens fitted "
          f"to {src.name}")
    for line in side_by_side(src, path):
        print(line)
    return 0


def _record(args) -> int:
    from simulator.shipped import traces_dir
    from simulator.traces.format import write_trace
    from simulator.traces.llama2c import load_llama2c
    from simulator.traces.recorder import record_llama2c

    model_path = Path(args.target) if args.target else traces_dir() / "models" / "stories260K" / "stories260K.bin"
    if not args.out or not args.out.endswith(".npz"):
        raise UsageError("trace record needs --out FILE.npz")
    if not 1 <= args.sequences <= 64:
        raise UsageError(f"--sequences must be in [1, 64], got {args.sequences}")
    model = load_llama2c(model_path, name=model_path.stem)
    end = args.max_tokens or model.seq_len
    if not 16 <= args.prompt < end <= model.seq_len:
        raise UsageError(f"need 16 <= --prompt ({args.prompt}) < --max-tokens ({end}) <= the model's context "
                         f"({model.seq_len})")
    name = Path(args.out).name[:-4]
    tr = record_llama2c(model, sequences=args.sequences, prompt_tokens=args.prompt, max_tokens=end, seed=args.seed,
                        name=name, model_source=f"llama2.c model {model_path.name}", progress=True)
    path = write_trace(args.out, tr)
    print(f"wrote {path} ({path.stat().st_size / 1e6:.2f} MB): {tr.steps} steps of {model.name}")
    return 0
