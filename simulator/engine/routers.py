"""Routers: which replica of a pool a request goes to. A router is a `Router` subclass registered with
@register_router and chosen by `serving.router: <name>`; the engine builds one instance per pool (the front pool of
mixed or prefill replicas, and the decode pool of a disaggregated setup), so a router may keep state (a turn).

A router reads, per replica of the pool: `outstanding` (tokens still to process among the requests assigned to it:
prompt + output of every unfinished one, updated at assignment and finish), `idx`, and `sched` (its scheduler:
`match_tokens(req)`, `num_waiting`, `num_running`, `pool.num_free`). It never changes them. A pool of one replica
never asks its router.

    round_robin               in turn (per pool)
    least_outstanding_tokens  fewest outstanding tokens; ties to the lowest index (the default)
    prefix_aware              longest prefix-cache hit now (Scheduler.match_tokens), then fewest outstanding tokens;
                              requests without prefix hashes, and the decode pool, as least_outstanding_tokens
"""
from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from hwmodels.errors import SparsesimError

if TYPE_CHECKING:
    from simulator.engine.request import Request

#: `stage` of a routing decision: a new request (to a mixed or prefill replica), or a request whose prefill ran
#: on a prefill replica and whose KV arrived (to a decode replica)
ARRIVAL, DECODE = "arrival", "decode"


class Router:
    """Base of every router: `choose` returns one replica of `pool` (a list of at least two)."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""

    def choose(self, pool: list, req: Request, stage: str):
        raise NotImplementedError


_ROUTERS: dict[str, type[Router]] = {}


def register_router(cls: type[Router]) -> type[Router]:
    """Class decorator: make a Router subclass selectable as `serving.router: <cls.name>`."""
    if not (isinstance(cls, type) and issubclass(cls, Router)) or not cls.name:
        raise TypeError(f"{cls!r} is not a named Router subclass")
    if cls.name in _ROUTERS:
        raise ValueError(f"{cls.__name__}: router {cls.name!r} registered twice")
    _ROUTERS[cls.name] = cls
    return cls


def routers() -> dict[str, type[Router]]:
    """Registered routers by name (simulator.engine.plugins imports the modules beyond this one)."""
    return _ROUTERS


def router_class(name: str) -> type[Router]:
    cls = _ROUTERS.get(name)
    if cls is None:
        raise SparsesimError(f"unknown router {name!r}; known: {', '.join(sorted(_ROUTERS))}")
    return cls


@register_router
class RoundRobin(Router):
    name = "round_robin"
    description = "each pool's replicas in turn"

    def __init__(self):
        self.turn = 0

    def choose(self, pool, req, stage):
        r = pool[self.turn % len(pool)]
        self.turn += 1
        return r


def least_outstanding(pool: list):
    """The replica with the fewest outstanding tokens (the first of equals)."""
    best = pool[0]
    for r in pool[1:]:
        if r.outstanding < best.outstanding:
            best = r
    return best


@register_router
class LeastOutstandingTokens(Router):
    name = "least_outstanding_tokens"
    description = "fewest tokens still to process among the requests a replica holds"

    def choose(self, pool, req, stage):
        return least_outstanding(pool)


@register_router
class PrefixAware(Router):
    name = "prefix_aware"
    description = "longest prefix-cache hit now, then fewest outstanding tokens"

    def choose(self, pool, req, stage):
        if stage != ARRIVAL or req.hash_ids is None:
            return least_outstanding(pool)
        best, key = None, None
        for r in pool:
            k = (-r.sched.match_tokens(req), r.outstanding)
            if key is None or k < key:
                best, key = r, k
        return best
