"""`sparsesim models list | show NAME`: model architectures, parameter counts, KV bytes, sources."""
from __future__ import annotations

from simulator.commands._common import UsageError


def register(sub) -> None:
    m = sub.add_parser("models", help="model architectures: list, or show NAME")
    m.add_argument("action", choices=["list", "show"])
    m.add_argument("name", nargs="?")
    m.set_defaults(func=cmd_models)


def cmd_models(args) -> int:
    from simulator.model import list_models, load_model

    if args.action == "list" or not args.name:
        if args.action == "show":
            raise UsageError("models show needs a NAME; see `sparsesim models list`")
        names = list_models()
        w = max(len(n) for n in names) if names else 18
        print(f"{'name':<{w}} {'params':>8} {'attn':>4} {'layers':>6} {'hidden':>6} {'heads':>5} {'kv':>4} "
              f"{'KV/token bf16':>13} {'max ctx':>8}  extras")
        for n in names:
            m = load_model(n)
            extras = []
            if m.moe:
                extras.append(f"MoE {m.moe.experts}+{m.moe.shared_experts} top-{m.moe.top_k}")
            if m.mtp_modules:
                extras.append(f"MTP {m.mtp_modules}")
            if m.dsa_indexer:
                extras.append(f"DSA indexer top-{m.dsa_indexer.topk}")
            print(f"{m.name:<{w}} {m.total_params() / 1e9:>7.2f}B {m.attention:>4} {m.layers:>6} {m.hidden:>6} "
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


