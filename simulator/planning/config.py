"""The scenario's `plan:` section: workload, SLOs, target, prices and search knobs of `sparsesim plan`.

The candidates are the scenario's strategy space — hardware x model x every strategy axis x KV / weight
dtype x parallelism, the tuples `sparsesim sweep` enumerates (refusals counted the same way). One replica
of a candidate is `tp` GPUs running that tuple; the plan finds how many requests per second one replica
serves within the SLOs, then how many replicas (GPUs) the target rate needs, and what that costs.

    plan:
      workload:                        # the request source (same keys as serving.requests)
        trace: mooncake_conversation   #  or poisson: {rate, count} / gamma: {rate, cv, count} + lengths
        limit: 600                     #  requests replayed per engine run (rate-scaled copies of them)
      slo:                             # percentile limits over the replayed requests (p50 | p90 | p99)
        ttft_p90_ms: 5000
        tpot_p90_ms: 100
        # goodput: {ttft_ms: 5000, tpot_ms: 100, min_attainment: 0.9}  # share of requests within every limit
      target: {rate_req_s: 10}         # requests/s to serve; or {budget_usd_per_hour: 400} (best rate per budget)
      prices:                          # USD per GPU-hour (hwmodels/prices.yaml)
        list: spheron-2026-06-03       #  a list name from that file (default: its `default`)
        override: {H100-SXM: 2.99}     #  any device's price, USD per GPU-hour
      engine:                          # replica knobs for the engine (as serving.scheduler / serving.router)
        scheduler: {max_num_seqs: auto}
        router: least_outstanding_tokens
      search:
        tolerance: 0.10                # stop when the passing and failing rates are within 10 %
        max_runs: 12                   # engine runs per candidate at most
        keep: 3                        # engine-evaluate a candidate only while its analytic best-case cost can
                                       #  beat the 3rd best verified cost (branch and bound)
        wave: 4                        # candidates searched between two pruning decisions (any worker count)
        seed: 0
      quick: {limit: 200, tolerance: 0.25, max_runs: 6}   # what --quick changes
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hwmodels.errors import ScenarioError
from simulator.sections import err as _err
from simulator.sections import mapping as _mapping
from simulator.sections import number as _num

TOP_KEYS = {"workload", "slo", "target", "prices", "engine", "search", "quick"}
PERCENTILES = ("p50", "p90", "p99")
METRICS = ("ttft", "tpot", "e2e")
SLO_KEYS = {f"{m}_{p}_ms" for m in METRICS for p in PERCENTILES} | {"goodput"}
GOODPUT_KEYS = {"ttft_ms", "tpot_ms", "e2e_ms", "min_attainment"}
SEARCH_KEYS = {"tolerance", "max_runs", "keep", "wave", "seed", "limit"}


@dataclass
class SearchConfig:
    tolerance: float = 0.10   # relative gap between the best passing and the lowest failing rate at the end
    max_runs: int = 12        # engine runs per candidate
    keep: int = 3             # branch and bound: engine-search while the best-case cost beats the keep-th best
    wave: int = 4             # candidates per wave (pruning is decided between waves: results do not depend
                              #  on the number of Dask workers)
    seed: int = 0


@dataclass
class PlanConfig:
    """The parsed `plan:` section (module docstring)."""

    workload: dict                    # serving.requests-shaped mapping (validated by the engine's parser)
    serving: Any                      # a ServingConfig template (source, scheduler, router; groups replaced)
    slo_limits: dict = field(default_factory=dict)   # e.g. {"ttft_p90_ms": 5000}
    goodput: dict | None = None       # {"slo": {"ttft_ms": ...}, "min_attainment": 0.9}
    target_rate: float | None = None  # requests/s
    budget_usd_h: float | None = None
    price_list: str | None = None
    price_override: dict = field(default_factory=dict)
    search: SearchConfig = field(default_factory=SearchConfig)
    quick: dict = field(default_factory=lambda: {"limit": 200, "tolerance": 0.25, "max_runs": 6})
    file: str = "<scenario>"

    def quick_version(self) -> "PlanConfig":
        """The plan with its `quick` settings applied (fewer requests per run, coarser search)."""
        q = self.quick
        s = replace(self.search, tolerance=q.get("tolerance", self.search.tolerance),
                    max_runs=q.get("max_runs", self.search.max_runs))
        src = self.serving.source
        if "limit" in q:
            src = replace(src, limit=q["limit"] if src.kind == "trace" else None,
                          count=min(src.count, q["limit"]) if src.kind != "trace" else src.count)
        return replace(self, search=s, serving=replace(self.serving, source=src))








def _pos(v: Any, file: str, fld: str, integer: bool = False, hi: float = 1e12, lo: float = 0.0) -> float:
    return _num(v, file, fld, lo=lo, hi=hi, integer=integer)


def _hardware_names(doc: dict, base: Path) -> set[str] | None:
    """The device names of the scenario's hardware list (None when it cannot be read: the scenario's own
    validation reports that)."""
    from hwmodels.errors import SparsesimError
    from hwmodels.spec import load_hardware

    hw = doc.get("hardware")
    names = set()
    for n in hw if isinstance(hw, list) else [hw]:
        if not isinstance(n, str):
            return None
        p = Path(n)
        if p.suffix in (".yaml", ".yml") and not p.is_absolute() and not p.exists():
            n = str(base / p)
        try:
            names.add(load_hardware(n).name)
        except SparsesimError:
            return None
    return names


def _engine_template(workload: dict, engine: dict, file: str, base: Path, doc: dict, seed: int):
    """A ServingConfig with the plan's request source and engine knobs (its replica group is replaced per
    candidate). Errors of the engine's parser are re-labelled with the plan's field names."""
    from simulator.engine.config import parse_serving_section

    hw = doc.get("hardware")
    model = doc.get("model")
    first = lambda x: x[0] if isinstance(x, list) and x else x  # noqa: E731
    section = {"requests": workload, "seed": seed,
               "replicas": [{"count": 1, "hardware": first(hw), "model": first(model), "parallelism": {"tp": 1},
                             "strategies": {"attention": "dense", "topk": "none", "speculation": "none",
                                            "verify_kernel": "none", "schedule": "none", "kv_policy": "full",
                                            "kv_dtype": "bf16", "weight_dtype": "native"}}]}
    for k in ("scheduler", "router"):
        if k in engine:
            section[k] = engine[k]
    try:
        return parse_serving_section(section, file, base, {k: v for k, v in doc.items() if k != "trace"})
    except ScenarioError as e:
        fld = e.field or ""
        msg = str(e)
        for pre in (f"{e.file}: ", f"field '{fld}': "):
            if msg.startswith(pre):
                msg = msg[len(pre):]
        if fld.startswith("serving.requests"):
            fld = "plan.workload" + fld[len("serving.requests"):]
        elif fld.startswith("serving.replicas"):
            fld = "plan"   # the template replica: the scenario's first hardware or model is unusable
        elif fld.startswith("serving."):
            fld = "plan.engine." + fld[len("serving."):]
        raise _err(msg, file, fld) from None


def parse_plan_section(value: Any, file: str, base_dir, doc: dict) -> PlanConfig:
    """Validate the `plan:` section (signature of simulator.scenario.SECTION_PARSERS)."""
    base = Path(base_dir) if base_dir is not None else Path(".")
    d = _mapping(value, TOP_KEYS, file, "plan")
    if "workload" not in d:
        raise _err("is missing: give the request source (trace: NAME, or poisson/gamma with lengths)", file,
                   "plan.workload")
    if not isinstance(d["workload"], dict):
        raise _err("must be a mapping (the keys of serving.requests)", file, "plan.workload")

    slo = _mapping(d.get("slo"), SLO_KEYS, file, "plan.slo")
    if not slo:
        raise _err(f"give at least one limit: {', '.join(sorted(SLO_KEYS - {'goodput'}))} or goodput: {{...}}",
                   file, "plan.slo")
    limits = {k: _pos(v, file, f"plan.slo.{k}", hi=1e9) for k, v in slo.items() if k != "goodput"}
    goodput = None
    if "goodput" in slo:
        g = _mapping(slo["goodput"], GOODPUT_KEYS, file, "plan.slo.goodput")
        lim = {k: _pos(v, file, f"plan.slo.goodput.{k}", hi=1e9) for k, v in g.items() if k != "min_attainment"}
        if not lim:
            raise _err("give at least one of ttft_ms, tpot_ms, e2e_ms", file, "plan.slo.goodput")
        att = g.get("min_attainment", 0.9)
        if isinstance(att, bool) or not isinstance(att, (int, float)) or not 0 < att <= 1:
            raise _err(f"must be a share in (0, 1], got {att!r}", file, "plan.slo.goodput.min_attainment")
        goodput = {"slo": lim, "min_attainment": float(att)}

    tgt = _mapping(d.get("target"), {"rate_req_s", "budget_usd_per_hour"}, file, "plan.target")
    if len(tgt) > 1:
        raise _err("give one of rate_req_s or budget_usd_per_hour", file, "plan.target")
    rate = _pos(tgt["rate_req_s"], file, "plan.target.rate_req_s", hi=1e9) if "rate_req_s" in tgt else None
    budget = (_pos(tgt["budget_usd_per_hour"], file, "plan.target.budget_usd_per_hour", hi=1e12)
              if "budget_usd_per_hour" in tgt else None)

    pr = _mapping(d.get("prices"), {"list", "override"}, file, "plan.prices")
    from simulator.planning.prices import price_lists

    lists = price_lists()
    plist = pr.get("list")
    if plist is not None and plist not in lists["lists"]:
        raise _err(f"unknown price list {plist!r}; hwmodels/prices.yaml has: {', '.join(lists['lists'])}", file,
                   "plan.prices.list")
    over = pr.get("override") or {}
    if not isinstance(over, dict):
        raise _err("must map hardware names to USD per GPU-hour", file, "plan.prices.override")
    override = {}
    names = _hardware_names(doc, base)
    for k, v in over.items():
        if not isinstance(k, str):
            raise _err(f"keys must be hardware names, got {k!r}", file, "plan.prices.override")
        if names is not None and k not in names:
            raise _err(f"names {k!r}, which is not a hardware of this scenario ({', '.join(sorted(names))}): the price "
                       "would never be used", file, f"plan.prices.override.{k}")
        override[k] = _pos(v, file, f"plan.prices.override.{k}", hi=1e5)

    s = _mapping(d.get("search"), SEARCH_KEYS - {"limit"}, file, "plan.search")
    search = SearchConfig()
    if "tolerance" in s:
        search.tolerance = _pos(s["tolerance"], file, "plan.search.tolerance", hi=1.0)
    for k, hi in (("max_runs", 100), ("keep", 1000), ("wave", 1000)):
        if k in s:
            setattr(search, k, _pos(s[k], file, f"plan.search.{k}", integer=True, hi=hi))
    if "seed" in s:
        if isinstance(s["seed"], bool) or not isinstance(s["seed"], int) or s["seed"] < 0:
            raise _err(f"must be a whole number >= 0, got {s['seed']!r}", file, "plan.search.seed")
        search.seed = s["seed"]
    q = _mapping(d.get("quick"), {"limit", "tolerance", "max_runs"}, file, "plan.quick")
    quick = {"limit": 200, "tolerance": 0.25, "max_runs": 6}
    if "limit" in q:
        quick["limit"] = _pos(q["limit"], file, "plan.quick.limit", integer=True, hi=1e8)
    if "tolerance" in q:
        quick["tolerance"] = _pos(q["tolerance"], file, "plan.quick.tolerance", hi=1.0)
    if "max_runs" in q:
        quick["max_runs"] = _pos(q["max_runs"], file, "plan.quick.max_runs", integer=True, hi=100)

    engine = _mapping(d.get("engine"), {"scheduler", "router"}, file, "plan.engine")
    serving = _engine_template(d["workload"], engine, file, base, doc, search.seed)
    return PlanConfig(workload=d["workload"], serving=serving, slo_limits=limits, goodput=goodput, target_rate=rate,
                      budget_usd_h=budget, price_list=plist, price_override=override, search=search, quick=quick,
                      file=file)
