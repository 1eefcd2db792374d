"""The discrete-event serving engine: requests replayed through priced steps of a vLLM-like scheduler.

    scheduler.py   the per-replica scheduler (pure Python; also driven by the GPU validation harness)
    step_cost.py   the price of one step's batch composition, from cost surfaces built by the op model
    config.py      the scenario's `serving:` section
    sim.py         the simpy model: request source, router, replicas (and disaggregated pools)
    api.py         simulate(config, requests, seed) -> SimResult, for the CLI and the planner
    results.py     per-request table, summary, time series; plots.py: latency CDFs and timelines

docs/SCHEDULER_POLICY.md and docs/ENGINE_API.md document the policy and the API.
"""
