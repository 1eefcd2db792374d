"""Async scheduling's step loop: the host schedules, packs and launches step N+1 while step N runs on the device.

The loop of vLLM v1's async scheduling (vllm-project/vllm `vllm/v1/engine/core.py` EngineCore.step_with_batch_queue
@ ac3cb2e2 and at v0.33.0, profile entry overlap.overlapped; `vllm/v1/core/sched/async_scheduler.py` @ 014b2350:
output placeholders for the token not yet sampled; `vllm/v1/core/sched/scheduler.py` @ b4622cf9:
update_from_output), which the project's own harness runs too (lab/serving/driver.py serve_async): with step N on the
device the host (1) schedules step N+1, packs its inputs and launches it (its kernels queue behind N's), then (2)
waits for step N's sampled ids (copied to the host behind its forward) and (3) updates the scheduler with them
(update_from_output; profile entry overlap.serialized), then goes back to (1) for step N+2. What serializes is the host's own chain: step N+2 is scheduled only after N's ids reached
the host and the scheduler took them. What overlaps is that chain against the device: step N+1's scheduling, packing
and launch run while N computes.

Per step k the engine knows (seconds):

    H   the host work between two launches that is not the launch itself: scheduler update from step k-2's ids,
        scheduling and input packing of step k (serving.step_cost.host_per_step_us / host_per_row_us, the runtime
        profile's content terms)
    F   the step's forward from an idle device: its kernels issued as fast as the host launches them (the eager step's
        max(device, launch) or LaunchModel.forward_s; a graph step: its device time)
    D   the step's device time when its kernels are already queued (back to back on the device)
    L   the host's time to launch the step (an eager step's kernel launches; 0 for a graph replay, whose host cost is
        in H)

Token times are when a step's ids reach the host (E_k, the end of step k on the device). With rho_{k-1} the time,
relative to E_{k-1}, from which the host can start on step k's H (the later of: its launch of step k-1 ending, and
E_{k-2}, when step k-2's ids arrived):

    ready_k = rho_{k-1} + H_k                       when the host has step k's kernels ready to issue
    I_k     = E_k - E_{k-1} = max(D_k, ready_k + F_k)   the device runs k after k-1, or waits for the host
    rho_k   = max(ready_k + L_k, 0) - I_k           the later of (launch of k ends, E_{k-1}) relative to E_k

A step that follows an idle engine starts from rho = 0 (nothing was launched ahead): I = H + F, the synchronous
step. A graph step after a graph step hides its host work under the previous step (I = D + max(0, H - D_prev),
rho = -D); an eager step after a graph step launches while the graph step runs (I = max(D, H + F - D_prev)); an
eager step after a launch-bound eager step gets nothing ahead (rho = 0). Measured on the own harness (H100,
2026-11-26): the device gap between graph decode steps 0.68 -> 0.01 ms, the graph -> eager token interval 29 ms vs
41 ms synchronous (benchmarks/des_validation.py, OWN SERVER, ASYNC SCHEDULING). Nothing here is fitted.
"""
from __future__ import annotations

import numpy as np


def step(rho: float, h: float, f: float, d: float, launch: float) -> tuple[float, float]:
    """(token interval I_k, rho_k) of one step given the carried rho_{k-1} (module docstring)."""
    ready = rho + h
    x = ready + f
    i = d if d > x else x
    y = ready + launch
    return i, (y if y > 0.0 else 0.0) - i


def emit_delay(rho: float, h_next: float, launch_next: float) -> float:
    """How long after its device end a step's ids reach the host: the host launches the next step before it waits
    (T_k = max(E_k, end of step k+1's launch)); 0 when no step follows at once."""
    x = rho + h_next + launch_next
    return x if x > 0.0 else 0.0


def run(rho: float, h, f, d, launch) -> tuple[np.ndarray, np.ndarray]:
    """(I, rho) of each step of a run of steps (arrays; h, launch may be scalars). Steps without a host launch
    (launch 0, f == d: graph replays) in closed form, vectorized: I_1 = d_1 + max(0, rho + h_1),
    I_j = d_j + max(0, h_j - d_{j-1}), rho_j = -d_j; otherwise the recurrence step by step (floats only)."""
    d = np.asarray(d, dtype=np.float64)
    n = len(d)
    f = np.broadcast_to(np.asarray(f, dtype=np.float64), (n,))
    h = np.broadcast_to(np.asarray(h, dtype=np.float64), (n,))
    la = np.broadcast_to(np.asarray(launch, dtype=np.float64), (n,))
    if n and not la.any() and np.array_equal(f, d):
        prev = np.concatenate([[-rho], d[:-1]])
        return d + np.maximum(0.0, h - prev), -d
    i_out = np.empty(n)
    r_out = np.empty(n)
    r = float(rho)
    for j, (hj, fj, dj, lj) in enumerate(zip(h.tolist(), f.tolist(), d.tolist(), la.tolist())):
        i, r = step(r, hj, fj, dj, lj)
        i_out[j] = i
        r_out[j] = r
    return i_out, r_out
