"""vLLM's engine arguments, under vLLM's own names, as command-line flags that edit a scenario's raw YAML mapping.

    add_knob_arguments(parser)                 # --max-num-seqs, --max-num-batched-tokens, --block-size, ...
    doc = apply_knobs(doc, args, file)         # into serving.scheduler / every replica's strategies.speculation

The names are vLLM's `EngineArgs` flags (vllm-project/vllm `vllm/engine/arg_utils.py`; the scenario's
serving.scheduler keys already carry the same names): --max-num-seqs, --max-num-batched-tokens, --block-size,
--gpu-memory-utilization, --enable-prefix-caching / --no-enable-prefix-caching, --enable-chunked-prefill (the engine
always chunks long prompts, as vLLM's V1 engine does; `--no-enable-chunked-prefill` is refused), and
--speculative-config JSON (`{"method": "mtp", "num_speculative_tokens": 3}`; methods mtp, eagle3 (also "eagle"),
draft_model (with "model": a shipped model name)) mapped to the speculation strategy with k = num_speculative_tokens.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from hwmodels.errors import ScenarioError

#: flag dest -> serving.scheduler key (the same name)
SCHEDULER_KNOBS = {"max_num_seqs": int, "max_num_batched_tokens": int, "block_size": int,
                   "gpu_memory_utilization": float}
#: vLLM speculative-config method -> the speculation strategy
SPEC_METHODS = {"mtp": "mtp", "deepseek_mtp": "mtp", "eagle3": "eagle3", "eagle": "eagle3", "draft_model": "draft_model"}
SPEC_KEYS = {"method", "num_speculative_tokens", "model", "acceptance"}
#: names this project used before vLLM's, accepted with a warning: old -> vLLM's
OLD_SPEC_KEYS = {"k": "num_speculative_tokens", "draft_tokens": "num_speculative_tokens"}


def add_knob_arguments(parser) -> None:
    g = parser.add_argument_group("vLLM engine arguments (vLLM's names; they override the scenario's serving.scheduler)")
    g.add_argument("--max-num-seqs", type=int, metavar="N", help="most requests in a step's batch")
    g.add_argument("--max-num-batched-tokens", type=int, metavar="N", help="most tokens computed in one step")
    g.add_argument("--block-size", type=int, metavar="N", help="KV-cache block size in tokens")
    g.add_argument("--gpu-memory-utilization", type=float, metavar="F", help="share of GPU memory the engine may use")
    g.add_argument("--enable-prefix-caching", action=argparse.BooleanOptionalAction, default=None,
                   help="automatic prefix caching")
    g.add_argument("--enable-chunked-prefill", action=argparse.BooleanOptionalAction, default=None,
                   help="chunked prefill (always on in this engine, as in vLLM V1)")
    g.add_argument("--speculative-config", metavar="JSON",
                   help='speculative decoding as vLLM takes it, e.g. \'{"method": "mtp", "num_speculative_tokens": 3}\'')


def speculation_from_config(text: str) -> dict:
    """The speculation strategy value ({mtp: {k: 3}}) of a vLLM --speculative-config JSON."""
    try:
        d = json.loads(text)
    except json.JSONDecodeError as e:
        raise ScenarioError(f"--speculative-config: not JSON ({e.msg}): {text[:80]!r}") from None
    if not isinstance(d, dict):
        raise ScenarioError(f"--speculative-config: must be a JSON object, got {text[:80]!r}")
    for old, new in OLD_SPEC_KEYS.items():
        if old in d:
            print(f"sparsesim: warning: --speculative-config: {old!r} is the old name; vLLM's is {new!r}",
                  file=sys.stderr)
            d.setdefault(new, d.pop(old))
    unknown = set(d) - SPEC_KEYS
    if unknown:
        raise ScenarioError(f"--speculative-config: unknown keys {sorted(unknown)}; known: {sorted(SPEC_KEYS)}")
    m = d.get("method")
    if m not in SPEC_METHODS:
        raise ScenarioError(f"--speculative-config: method {m!r}; known: {', '.join(SPEC_METHODS)}")
    k = d.get("num_speculative_tokens")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ScenarioError(f"--speculative-config: num_speculative_tokens must be a positive integer, got {k!r}")
    params: dict = {"k": k}
    if "acceptance" in d:
        params["acceptance"] = d["acceptance"]
    strat = SPEC_METHODS[m]
    if strat == "draft_model":
        if "model" not in d:
            raise ScenarioError("--speculative-config: method draft_model needs \"model\" (a shipped model name)")
        params["model"] = d["model"]
    elif "model" in d:
        raise ScenarioError(f"--speculative-config: \"model\" applies to method draft_model, not {m}")
    return {strat: params}


def apply_knobs(doc: Any, args, file: str = "<scenario>") -> Any:
    """`doc` (a scenario mapping with a serving: section) with the vLLM flags of `args` applied."""
    given = {k: getattr(args, k, None) for k in SCHEDULER_KNOBS}
    given = {k: v for k, v in given.items() if v is not None}
    pc = getattr(args, "enable_prefix_caching", None)
    cp = getattr(args, "enable_chunked_prefill", None)
    spec = getattr(args, "speculative_config", None)
    if cp is False:
        raise ScenarioError("--no-enable-chunked-prefill: this engine always chunks long prompts (vLLM V1's "
                            "behaviour); unchunked prefill is not modeled")
    if not given and pc is None and spec is None:
        return doc
    if not isinstance(doc, dict) or not isinstance(doc.get("serving"), dict):
        raise ScenarioError("has no serving: section for the vLLM engine arguments to apply to", file=file)
    import copy

    doc = copy.deepcopy(doc)
    sv = doc["serving"]
    sched = sv.setdefault("scheduler", {}) or {}
    sv["scheduler"] = sched
    sched.update(given)
    if pc is not None:
        sched["enable_prefix_caching"] = pc
    if spec is not None:
        value = speculation_from_config(spec)
        reps = sv.get("replicas") or [{}]
        if not isinstance(reps, list):
            raise ScenarioError("must be a list for --speculative-config to apply to", file=file,
                                field="serving.replicas")
        for r in reps:
            if isinstance(r, dict):
                r.setdefault("strategies", {})
                r["strategies"] = dict(r["strategies"] or {}, speculation=value)
        sv["replicas"] = reps
        st = doc.setdefault("strategies", {}) or {}
        doc["strategies"] = st
        st["speculation"] = [value]
    return doc


def knob_flags(args) -> list[str]:
    """The vLLM flags given on the command line, as text (for error messages)."""
    out = [f"--{k.replace('_', '-')} {getattr(args, k)}" for k in SCHEDULER_KNOBS if getattr(args, k, None) is not None]
    for k in ("enable_prefix_caching", "enable_chunked_prefill"):
        v = getattr(args, k, None)
        if v is not None:
            out.append(f"--{'' if v else 'no-'}{k.replace('_', '-')}")
    if getattr(args, "speculative_config", None):
        out.append(f"--speculative-config {args.speculative_config}")
    return out
