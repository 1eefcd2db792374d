"""A replica's KV cache: the block pool and the prefix cache (vLLM's block_pool.py and kv_cache_manager.py at
cache-unit granularity; the modeling choices are in simulator.engine.scheduler's docstring and
docs/SCHEDULER_POLICY.md).

    BlockPool   free blocks in eviction order: uncached free runs and cached units nobody references (LRU)
    KVCache     the pool plus what requests hold: unit keys of a request's prompt (the trace's hash chain, else
                keys private to the request), prefix hits (match), caching full units (register), allocation
                (allocate) and release (free)

A scheduler policy decides WHICH request gets blocks when; this module only keeps the accounting.
"""
from __future__ import annotations

from collections import OrderedDict

from simulator.engine.request import Request, SchedulerConfig, SchedulerError

_KEY_MASK = (1 << 61) - 1      # trace chain keys live in [0, 2^61)
_PRIVATE_BASE = 1 << 61        # private unit keys: 2^61 + (rid << 24 | unit)


class _Unit:
    __slots__ = ("ref", "nb")

    def __init__(self, nb: int):
        self.ref = 1
        self.nb = nb


class BlockPool:
    """Free KV blocks in eviction order (vLLM block_pool.py, at cache-unit granularity). Entries of the
    free queue are cache units nobody references (evictable, key >= 0) or runs of uncached free blocks
    (key < 0); `num_free` counts both."""

    def __init__(self, usable_blocks: int, unit_blocks: int):
        self.total = usable_blocks
        self.unit_blocks = unit_blocks
        self.queue: OrderedDict = OrderedDict()
        self.cache: dict = {}
        self._next = -1
        self.num_free = 0
        self.evicted_units = 0
        self._push_free(usable_blocks)

    def _push_free(self, n: int) -> None:
        if n > 0:
            self.queue[self._next] = n
            self._next -= 1
            self.num_free += n

    @property
    def used(self) -> int:
        """Blocks referenced by requests (what the cache holds for running work)."""
        return self.total - self.num_free

    @property
    def cached_units(self) -> int:
        return len(self.cache)

    def take(self, n: int) -> None:
        """Pop n blocks from the head of the free queue (the caller checked num_free), evicting cached
        units it pops."""
        if n <= 0:
            return
        self.num_free -= n
        q = self.queue
        while n > 0:
            key, nb = next(iter(q.items()))
            if nb <= n:
                del q[key]
                n -= nb
                if key >= 0:
                    del self.cache[key]
                    self.evicted_units += 1
            else:
                if key >= 0:  # evict the unit, the rest of its blocks stay free (uncached) at the head
                    del q[key]
                    del self.cache[key]
                    self.evicted_units += 1
                    q[self._next] = nb - n
                    q.move_to_end(self._next, last=False)
                    self._next -= 1
                else:
                    q[key] = nb - n
                n = 0

    def free_request(self, req: Request) -> None:
        """Release every block `req` references: private blocks first, then its units in reverse order
        (the tail of the block table is evicted first)."""
        shared = len(req.units) * self.unit_blocks
        self._push_free(req.blocks - shared)
        cache, q = self.cache, self.queue
        for key in reversed(req.units):
            u = cache[key]
            u.ref -= 1
            if u.ref == 0:
                q[key] = u.nb
                self.num_free += u.nb
        req.units = []
        req.blocks = 0
        req.units_done = 0


class KVCache:
    """One replica's blocks and prefix cache: `pool` (BlockPool) and the per-request unit bookkeeping."""

    def __init__(self, config: SchedulerConfig):
        self.cfg = config
        self.unit_blocks = config.cache_unit_tokens // config.block_size
        self.pool = BlockPool(config.usable_blocks, self.unit_blocks)

    # ---- prefix-cache units ----------------------------------------------------------------------------
    def unit_key(self, req: Request, j: int) -> int:
        keys = req.unit_keys
        if keys is None:
            keys = req.unit_keys = self.trace_keys(req)
        if j < len(keys):
            return keys[j]
        return _PRIVATE_BASE + ((req.rid << 24) | j)

    def trace_keys(self, req: Request) -> list:
        """Chain keys of the prompt units the trace names (full units inside the prompt only)."""
        h = req.hash_ids
        if h is None or len(h) == 0 or not self.cfg.caching:
            return []
        per = (req.hash_block_tokens or self.cfg.cache_unit_tokens)
        if per != self.cfg.cache_unit_tokens:
            raise SchedulerError(f"request {req.rid}: hash blocks of {per} tokens, but the prefix cache works in "
                                 f"units of {self.cfg.cache_unit_tokens} tokens (set cache_unit_tokens to the "
                                 "trace's block size)")
        n = min(len(h), req.prompt // per)
        keys, prev = [], 0
        for i in range(n):
            prev = hash((prev, int(h[i]))) & _KEY_MASK
            keys.append(prev)
        return keys

    def match(self, req: Request) -> int:
        """Cache units of a prefix hit for a request that has computed nothing (capped so at least one
        token is computed)."""
        if not self.cfg.caching:
            return 0
        max_units = (req.num_tokens - 1) // self.cfg.cache_unit_tokens
        cache = self.pool.cache
        j = 0
        while j < max_units and self.unit_key(req, j) in cache:
            j += 1
        return j

    def register(self, req: Request, upto_tokens: int) -> None:
        """Cache the full units of req below `upto_tokens` that it has not yet hit or registered."""
        U = self.cfg.cache_unit_tokens
        last = upto_tokens // U
        j = req.units_done
        if j >= last:
            return
        cache = self.pool.cache
        nb = self.unit_blocks
        while j < last:
            key = self.unit_key(req, j)
            if key not in cache:
                cache[key] = _Unit(nb)
                req.units.append(key)
            j += 1
        req.units_done = last

    # ---- blocks ----------------------------------------------------------------------------------------
    def allocate(self, req: Request, tokens: int) -> bool:
        """Make req hold blocks for `tokens` KV entries; False (nothing changed) if they are not free."""
        need = self.cfg.blocks_for(tokens) - req.blocks
        if need <= 0:
            return True
        if need > self.pool.num_free:
            return False
        self.pool.take(need)
        req.blocks += need
        return True

    def admit(self, req: Request, hit_units: int, tokens: int) -> bool:
        """Give a request that holds nothing its `hit_units` prefix-hit units (those sitting evictable in the
        free queue leave it) and new blocks up to `tokens` KV entries; False (nothing changed) if they are not
        free."""
        pool = self.pool
        cache = pool.cache
        keys = [self.unit_key(req, j) for j in range(hit_units)]
        evictable = sum(cache[k].nb for k in keys if cache[k].ref == 0)
        new_blocks = self.cfg.blocks_for(tokens) - hit_units * self.unit_blocks
        if new_blocks + evictable > pool.num_free:
            return False
        for k in keys:  # touch
            u = cache[k]
            if u.ref == 0:
                del pool.queue[k]
                pool.num_free -= u.nb
            u.ref += 1
        req.units = keys
        req.units_done = hit_units
        req.blocks = hit_units * self.unit_blocks
        pool.take(new_blocks)
        req.blocks += new_blocks
        return True

    def free(self, req: Request) -> None:
        """Release every block req holds (its cached units stay, evictable once nobody references them)."""
        self.pool.free_request(req)

    # ---- checks ----------------------------------------------------------------------------------------
    def check(self, running, waiting) -> None:
        """Raise AssertionError if block accounting is inconsistent with the RUNNING and WAITING requests."""
        pool = self.pool
        held = sum(r.blocks - len(r.units) * self.unit_blocks for r in running)
        refs: dict = {}
        for r in running:
            for k in r.units:
                refs[k] = refs.get(k, 0) + 1
        shared = sum(self.unit_blocks for _ in refs)
        assert pool.num_free == sum(pool.queue.values()), "free count != free queue"
        assert held + shared + pool.num_free == pool.total, (held, shared, pool.num_free, pool.total)
        for k, u in pool.cache.items():
            assert u.ref == refs.get(k, 0), (k, u.ref, refs.get(k, 0))
            assert (u.ref == 0) == (k in pool.queue)
        for r in running:
            assert r.blocks >= self.cfg.blocks_for(r.computed), (r, self.cfg.blocks_for(r.computed))
        for r in waiting:
            assert r.blocks == 0 and r.computed == 0
