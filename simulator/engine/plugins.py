"""Routers and scheduler policies beyond the built-in ones (simulator.engine.routers, simulator.engine.scheduler).

A new router or policy is one new module that registers its class (@register_router / @register_policy) plus one
import line here; the `serving:` parser (simulator.engine.config) imports this module before it looks up
`serving.router` or `serving.scheduler.policy`, so the name is then valid in scenarios. docs/EXTENDING.md walks
through both. Code outside the package can also register classes itself, before it parses a scenario.
"""
