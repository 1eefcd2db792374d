"""The vLLM-v1-like scheduler (simulator/engine/scheduler.py): policy cases with hand arithmetic, block and
token conservation, and the decode-run fast path against step-by-step scheduling."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.engine import decode_run
from simulator.engine.scheduler import Request, Scheduler, SchedulerConfig, SchedulerError


def drain(s, accepted_fn=None, max_steps=100_000):
    """Run to completion step by step; returns (plans, finished requests in finish order)."""
    plans, done, t = [], [], 0
    while not s.idle:
        p = s.schedule(t)
        s.check_invariants()
        t += 1
        acc = accepted_fn(p) if accepted_fn else None
        ev = s.step_done(p, t, acc)
        s.check_invariants()
        plans.append(p)
        done += ev.finished
        assert t < max_steps
    return plans, done


def test_chunked_prefill_then_one_token_per_step():
    # a 20000-token prompt under an 8192-token budget: chunks 8192, 8192, 3616; the first token comes out of
    # the third step, then one token per decode step: 3 + (5 - 1) = 7 steps for 5 output tokens
    s = Scheduler(SchedulerConfig(num_blocks=4000))
    r = Request(0, 20000, 5)
    s.add_request(r)
    plans, done = drain(s)
    assert [p.num_tokens for p in plans] == [[8192], [8192], [3616], [1], [1], [1], [1]]
    assert [p.context_before for p in plans][:4] == [[0], [8192], [16384], [20000]]
    assert r.first_token_time == 3 and r.finish_time == 7
    assert done == [r] and r.out == 5 and r.computed == 20000 + 5 - 1
    assert plans[2].completes == [20000] and plans[3].is_decode == [True]


def test_running_first_then_waiting_with_the_rest_of_the_budget():
    # budget 100: two decoding requests take 1 token each, the new request gets a 98-token chunk
    s = Scheduler(SchedulerConfig(num_blocks=1000, max_num_batched_tokens=100))
    a, b = Request(0, 10, 50), Request(1, 10, 50)
    s.add_request(a)
    s.add_request(b)
    p = s.schedule(0)
    assert p.num_tokens == [10, 10]
    s.step_done(p, 1)
    c = Request(2, 500, 5)
    s.add_request(c)
    p = s.schedule(1)
    assert [r.rid for r in p.reqs] == [0, 1, 2] and p.num_tokens == [1, 1, 98]
    assert p.n_decode == 2 and p.decode_ctx_sum == (10 + 1) * 2 and p.decode_ctx_max == 11 and p.chunks == [(98, 0)]
    assert p.logit_rows == 3 and p.total_tokens == 100


def test_max_num_seqs_caps_admission():
    s = Scheduler(SchedulerConfig(num_blocks=1000, max_num_seqs=2))
    for i in range(3):
        s.add_request(Request(i, 10, 3))
    p = s.schedule(0)
    assert [r.rid for r in p.reqs] == [0, 1] and len(s.waiting) == 1


def test_preemption_recompute_last_running_goes_to_front_of_waiting():
    # 9 usable blocks of 16 tokens (10 minus vLLM's null block). Two requests of 64-token prompts take 4
    # blocks each (8 used, 1 free). After their prefill both decode at position 64 -> each needs a 5th block:
    # request 0 gets the last free block, request 1 has none -> request 1 (the last running) is preempted.
    s = Scheduler(SchedulerConfig(num_blocks=10, enable_prefix_caching=False))
    a, b = Request(0, 64, 10), Request(1, 64, 10)
    s.add_request(a)
    s.add_request(b)
    p = s.schedule(0)
    assert p.num_tokens == [64, 64] and s.pool.num_free == 1
    s.step_done(p, 1)
    p = s.schedule(1)
    assert [r.rid for r in p.reqs] == [0] and p.preempted == [b]
    assert b.computed == 0 and b.blocks == 0 and b.preemptions == 1 and s.waiting[0] is b
    # nothing is admitted in a step that preempted
    assert len(p.reqs) == 1
    s.step_done(p, 2)
    plans, done = drain(s)
    assert {r.rid for r in done} == {0, 1} and b.out == 10
    # b kept its first token; its recompute covered prompt + that token: 65 tokens
    assert b.lost == 64


def test_prefix_hit_full_units_and_at_least_one_token_computed():
    cfg = SchedulerConfig(num_blocks=1000, cache_unit_tokens=64)
    s = Scheduler(cfg)
    first = Request(0, 200, 2, hash_ids=[7, 8, 9, 10], hash_block_tokens=64)
    s.add_request(first)
    drain(s)
    # same first three 64-token units (192 tokens); the 4th hash differs
    second = Request(1, 300, 2, hash_ids=[7, 8, 9, 11, 12], hash_block_tokens=64)
    s.add_request(second)
    p = s.schedule(0)
    assert second.prefix_hit_tokens == 192 and p.num_tokens == [300 - 192] and p.context_before == [192]
    s.step_done(p, 1)
    drain(s)
    # a prompt equal to a cached one of exactly 3 units: the hit is capped at (192 - 1) // 64 = 2 units
    third = Request(2, 192, 1, hash_ids=[7, 8, 9], hash_block_tokens=64)
    s.add_request(third)
    p = s.schedule(0)
    assert third.prefix_hit_tokens == 128 and p.num_tokens == [64]


def test_prefix_units_are_chained():
    # the same hash id at position 1 after a different first block is not a hit
    s = Scheduler(SchedulerConfig(num_blocks=1000, cache_unit_tokens=64))
    s.add_request(Request(0, 200, 1, hash_ids=[1, 2, 3], hash_block_tokens=64))
    drain(s)
    r = Request(1, 200, 1, hash_ids=[5, 2, 3], hash_block_tokens=64)
    s.add_request(r)
    s.schedule(0)
    assert r.prefix_hit_tokens == 0


def test_lru_eviction_frees_oldest_cached_units_first():
    # 20 usable blocks, units of 4 blocks (64 tokens). Request A (128-token prompt, 2 units) finishes and
    # leaves 2 evictable units; request B needs 19 blocks: the 12 never-used blocks at the head of the free
    # queue, then A's units are evicted (A's last unit first)
    s = Scheduler(SchedulerConfig(num_blocks=21, cache_unit_tokens=64))
    a = Request(0, 128, 1, hash_ids=[1, 2], hash_block_tokens=64)
    s.add_request(a)
    drain(s)
    assert s.pool.cached_units == 2 and s.pool.num_free == 20
    b = Request(1, 300, 1)
    s.add_request(b)
    s.schedule(0)
    assert s.pool.num_free == 1 and s.pool.evicted_units == 2
    s.check_invariants()


def test_speculative_rounds_subtract_rejected_drafts_and_trim_output():
    # k = 3 drafts: a decode round schedules 4 tokens; accepting 1 draft yields 2 tokens and the 2 rejected
    # drafts are subtracted from computed
    s = Scheduler(SchedulerConfig(num_blocks=1000, num_spec_tokens=3, num_lookahead_tokens=3))
    r = Request(0, 10, 6)
    s.add_request(r)
    p = s.schedule(0)
    s.step_done(p, 1)
    assert r.out == 1 and r.computed == 10
    p = s.schedule(1)
    assert p.num_tokens == [4] and p.drafts == [3] and p.is_decode == [True] and p.logit_rows == 4
    s.step_done(p, 2, accepted=[1])
    assert r.out == 3 and r.computed == 12  # 10 + 4 - 2 rejected
    p = s.schedule(2)
    s.step_done(p, 3, accepted=[3])  # 4 more tokens, trimmed to the 6 requested
    assert r.out == 6 and r.finished and s.idle
    assert s.tokens_rejected == 2


def test_kv_cap_bounds_blocks():
    s = Scheduler(SchedulerConfig(num_blocks=100, kv_cap_tokens=64))
    r = Request(0, 1000, 50)
    s.add_request(r)
    p = s.schedule(0)
    assert r.blocks == 4  # ceil(64 / 16): the policy keeps 64 tokens whatever the context
    s.step_done(p, 1)
    plans, _ = drain(s)
    assert max(p.reqs[0].blocks for p in plans if p.reqs) <= 4


def test_a_request_that_can_never_fit_is_refused():
    s = Scheduler(SchedulerConfig(num_blocks=10))
    with pytest.raises(SchedulerError, match="can never run"):
        s.add_request(Request(0, 150, 10))  # 160 tokens > 9 blocks x 16


def _random_requests(rng, n, hashed=True):
    reqs = []
    for i in range(n):
        h = [int(x) for x in rng.integers(0, 3, size=12)] if hashed else None
        reqs.append(Request(i, int(rng.integers(1, 500)), int(rng.integers(1, 120)), hash_ids=h,
                            hash_block_tokens=64 if hashed else None))
    return reqs


def _check_conservation(s, reqs):
    # every token the scheduler scheduled is accounted for: final computed - tokens found computed at
    # admissions + tokens thrown away by preemptions, plus rejected drafts
    expect = sum(r.computed - r.hit_total + r.lost for r in reqs) + s.tokens_rejected
    assert s.tokens_scheduled == expect


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31), blocks=st.integers(45, 200), budget=st.sampled_from([16, 64, 512, 8192]),
       seqs=st.sampled_from([1, 3, 16, 1024]), spec=st.sampled_from([0, 0, 2, 4]),
       cap=st.sampled_from([None, None, 200]))
def test_random_traces_finish_exactly_once_and_conserve_blocks_and_tokens(seed, blocks, budget, seqs, spec, cap):
    rng = np.random.default_rng(seed)
    cfg = SchedulerConfig(num_blocks=blocks, max_num_batched_tokens=max(budget, spec + 1), max_num_seqs=seqs,
                          num_spec_tokens=spec, num_lookahead_tokens=spec, kv_cap_tokens=cap, cache_unit_tokens=64)
    s = Scheduler(cfg)
    reqs = [r for r in _random_requests(rng, 25) if s.can_ever_fit(r)]
    for r in reqs:
        s.add_request(r)
    plans, done = drain(s, (lambda p: rng.integers(0, spec + 1, size=len(p.reqs))) if spec else None)
    assert sorted(r.rid for r in done) == sorted(r.rid for r in reqs)  # each finishes exactly once
    assert all(r.out == r.output for r in reqs)
    assert s.pool.num_free == s.pool.total
    assert all(p.total_tokens <= cfg.max_num_batched_tokens for p in plans)
    assert all(len(p.reqs) <= cfg.max_num_seqs for p in plans)
    if not spec:
        assert all(r.computed == r.prompt + r.output - 1 for r in reqs)
    _check_conservation(s, reqs)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31), blocks=st.integers(60, 300))
def test_decode_runs_equal_step_by_step(seed, blocks):
    """The fast path (simulator.engine.decode_run: plan / apply) gives the same finish steps as schedule/step_done."""
    def run(fast):
        rng = np.random.default_rng(seed)
        s = Scheduler(SchedulerConfig(num_blocks=blocks, max_num_batched_tokens=256, cache_unit_tokens=64))
        reqs = [r for r in _random_requests(rng, 15) if s.can_ever_fit(r)]
        for r in reqs:
            s.add_request(r)
        t = 0
        while not s.idle:
            if fast and decode_run.ready(s):
                run_ = decode_run.plan(s, int(rng.integers(2, 40)))
                if run_.steps > 0:
                    t += run_.steps
                    decode_run.apply(s, run_, run_.steps, t)
                    s.check_invariants()
                    continue
            p = s.schedule(t)
            t += 1
            s.step_done(p, t)
            s.check_invariants()
        _check_conservation(s, reqs)
        return ({r.rid: (r.first_token_time, r.finish_time, r.preemptions, r.hit_total) for r in reqs},
                s.num_preemptions, s.pool.evicted_units, s.tokens_scheduled)

    assert run(True) == run(False)


def test_decode_run_stops_before_blocks_run_out():
    # 8 usable blocks. After prefill, request a holds 64 tokens in 4 blocks, b 40 tokens in 3 blocks: 1 free.
    # Decode step j (from 0) needs KV for 65 + j tokens (a: a 5th block from j = 0) and 41 + j tokens (b: a
    # 4th block once 41 + j > 48, j = 8): the run stops after 8 steps, before the step needing a 2nd block
    s = Scheduler(SchedulerConfig(num_blocks=9, enable_prefix_caching=False))
    a, b = Request(0, 64, 60), Request(1, 40, 60)
    s.add_request(a)
    s.add_request(b)
    s.step_done(s.schedule(0), 1)
    assert s.pool.num_free == 1 and decode_run.ready(s)
    run = decode_run.plan(s, 100)
    assert run.steps == 8
    assert run.ctx_sum[0] == 65 + 41 and run.ctx_sum[7] == run.ctx_sum[0] + 2 * 7
    assert run.ctx_max[0] == 65 and run.ctx_max[7] == 72
    decode_run.apply(s, run, 8, 9)
    s.check_invariants()
    assert s.pool.num_free == 0 and a.computed == 72 and b.computed == 48
