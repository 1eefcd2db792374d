"""The discrete-event serving engine: requests replayed through priced steps of a vLLM-like scheduler.

    request.py     what a replica's scheduler is given: SchedulerConfig (vLLM knobs and defaults), Request
    kv_cache.py    a replica's KV blocks and prefix cache (block pool, cache units, allocation)
    scheduler.py   the scheduler policy (FCFS, vLLM v1) with overridable phases, and the policy registry
    decode_run.py  the fast path: runs of identical pure-decode steps, for policies that declare it valid
    routers.py     which replica a request goes to (Router, registry: round_robin, least_outstanding_tokens,
                   prefix_aware)
    plugins.py     the modules that register routers and policies beyond the built-in ones
    step_cost.py   the price of one step's batch composition (cost surfaces built by the op model), plus the
                   runtime's host time: the one place a step plan becomes seconds
    config.py      the scenario's `serving:` section; adaptive.py: per-request speculation switching
    sim.py         the simpy model: request source, routers, replicas (and disaggregated pools)
    api.py         simulate(config, requests, seed) -> SimResult, for the CLI and the planner
    results.py     per-request table, summary, time series; plots.py: latency CDFs and timelines

The scheduler, KV cache and fast path are pure Python (no simpy, no pricing): the GPU validation harness drives
the same classes. docs/SCHEDULER_POLICY.md and docs/ENGINE_API.md document the policy and the API;
docs/EXTENDING.md adds a router and a policy.
"""
