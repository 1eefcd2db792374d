"""What one replica's scheduler is given: its knobs (SchedulerConfig, vLLM's names and defaults with their sources)
and the requests it runs (Request: one request and how far it has got). simulator.engine.scheduler explains the
policy; docs/SCHEDULER_POLICY.md the defaults' sources.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from hwmodels.errors import SparsesimError

#: vLLM defaults (sources in docs/SCHEDULER_POLICY.md): CacheConfig.DEFAULT_BLOCK_SIZE = 16
#: (vllm/config/cache.py); EngineArgs.get_batch_defaults (vllm/engine/arg_utils.py) for the OpenAI API
#: server on a GPU with >= 70 GiB that is not an A100 (H100, H200, B200, MI300X): max_num_batched_tokens
#: 8192 and max_num_seqs 1024; on smaller GPUs and A100: 2048 and 256.
VLLM_BLOCK_SIZE = 16
VLLM_LARGE_GPU_BATCHED_TOKENS = 8192
VLLM_LARGE_GPU_MAX_SEQS = 1024
VLLM_SMALL_GPU_BATCHED_TOKENS = 2048
VLLM_SMALL_GPU_MAX_SEQS = 256
#: Tokens per prefix-cache unit when the request trace gives no hash-block size: Mooncake's 512-token
#: hash blocks (Mooncake FAST'25 trace README), 32 vLLM blocks.
DEFAULT_CACHE_UNIT_TOKENS = 512


class SchedulerError(SparsesimError):
    """A request or a configuration the scheduler cannot run (too long for the cache, bad parameters)."""


@dataclass(frozen=True)
class SchedulerConfig:
    """The knobs of the policy (vLLM names). `num_blocks` is the KV cache size in blocks of `block_size`
    tokens (the engine derives it from memory; the GPU harness from what it allocated)."""

    num_blocks: int
    block_size: int = VLLM_BLOCK_SIZE
    max_num_batched_tokens: int = VLLM_LARGE_GPU_BATCHED_TOKENS
    max_num_seqs: int = VLLM_LARGE_GPU_MAX_SEQS
    enable_prefix_caching: bool = True
    long_prefill_token_threshold: int = 0
    num_spec_tokens: int = 0          # drafts per decode round (0 = no speculative decoding)
    num_lookahead_tokens: int = 0     # extra slots reserved for the drafter (vLLM: = num_spec_tokens for
                                      # EAGLE and draft models, 0 for n-gram)
    kv_cap_tokens: int | None = None  # a KV policy's budget: tokens a request keeps (None = all)
    cache_unit_tokens: int = DEFAULT_CACHE_UNIT_TOKENS
    reserve_null_block: bool = True   # vLLM's block 0 is a null block that is never allocated

    def __post_init__(self):
        def bad(what, v, allowed):
            raise SchedulerError(f"scheduler {what}={v!r} is invalid; allowed: {allowed}")

        for name in ("num_blocks", "block_size", "max_num_batched_tokens", "max_num_seqs", "cache_unit_tokens"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                bad(name, v, "a positive integer")
        for name in ("long_prefill_token_threshold", "num_spec_tokens", "num_lookahead_tokens"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
                bad(name, v, "an integer >= 0")
        if self.cache_unit_tokens % self.block_size:
            bad("cache_unit_tokens", self.cache_unit_tokens, f"a multiple of block_size ({self.block_size})")
        if self.kv_cap_tokens is not None and (not isinstance(self.kv_cap_tokens, (int, np.integer))
                                               or self.kv_cap_tokens < 1):
            bad("kv_cap_tokens", self.kv_cap_tokens, "null or a positive integer")
        if self.num_spec_tokens + 1 > self.max_num_batched_tokens:
            bad("num_spec_tokens", self.num_spec_tokens, "fewer than max_num_batched_tokens")

    @property
    def usable_blocks(self) -> int:
        return self.num_blocks - (1 if self.reserve_null_block else 0)

    @property
    def caching(self) -> bool:
        return self.enable_prefix_caching and self.kv_cap_tokens is None

    def blocks_for(self, tokens: int) -> int:
        """Blocks a request needs to hold `tokens` KV entries (capped by the KV policy)."""
        cap = self.kv_cap_tokens
        if cap is not None and tokens > cap:
            tokens = cap
        return -(-tokens // self.block_size)

    def token_capacity(self) -> int:
        """Largest sequence (prompt + output) one request can ever hold alone."""
        if self.kv_cap_tokens is not None and self.usable_blocks * self.block_size >= self.kv_cap_tokens:
            return 1 << 62
        return self.usable_blocks * self.block_size


class Request:
    """One request and its progress. `hash_ids` are the trace's prefix block hashes, each covering
    `hash_block_tokens` prompt tokens (None = no shared prefixes)."""

    __slots__ = ("rid", "prompt", "output", "arrival", "hash_ids", "hash_block_tokens", "computed", "out",
                 "blocks", "units", "unit_keys", "units_done", "preemptions", "prefix_hit_tokens",
                 "first_scheduled", "first_token_time", "finish_time", "replica", "tag", "external", "hit_total",
                 "lost")

    def __init__(self, rid: int, prompt_tokens: int, output_tokens: int, arrival_s: float = 0.0,
                 hash_ids=None, hash_block_tokens: int | None = None, tag=None):
        if prompt_tokens < 1 or output_tokens < 1:
            raise SchedulerError(f"request {rid}: prompt and output tokens must be >= 1, got "
                                 f"{prompt_tokens} and {output_tokens}")
        self.rid = int(rid)
        self.prompt = int(prompt_tokens)
        self.output = int(output_tokens)
        self.arrival = float(arrival_s)
        self.hash_ids = hash_ids
        self.hash_block_tokens = hash_block_tokens
        self.computed = 0          # tokens whose KV is in the cache (vLLM num_computed_tokens)
        self.out = 0               # tokens generated so far
        self.blocks = 0            # KV blocks this request references (shared units included)
        self.units = []            # keys of the cache units it references, in order
        self.unit_keys = None      # lazily built chain keys of its prompt units
        self.units_done = 0        # units (from 0) already hit or registered
        self.preemptions = 0
        self.prefix_hit_tokens = -1  # tokens of the first admission's prefix-cache hit (-1 = not admitted)
        self.first_scheduled = math.nan
        self.first_token_time = math.nan
        self.finish_time = math.nan
        self.replica = -1
        self.tag = tag
        self.external = 0          # tokens whose KV arrives computed (disaggregated decode; first admission only)
        self.hit_total = 0         # tokens found computed at every admission (prefix hits, external KV)
        self.lost = 0              # computed tokens thrown away by preemptions

    @property
    def num_tokens(self) -> int:
        """Prompt plus generated tokens (vLLM request.num_tokens)."""
        return self.prompt + self.out

    @property
    def finished(self) -> bool:
        return self.out >= self.output

    def __repr__(self) -> str:
        return (f"Request({self.rid}, prompt={self.prompt}, output={self.output}, computed={self.computed}, "
                f"out={self.out}, blocks={self.blocks})")
