"""Sweeps and plan searches past one core: chunks of strategy tuples as tasks on a Dask cluster.

`client(workers=N)` starts a `dask.distributed.LocalCluster` of N single-threaded worker processes on this
machine; `client(scheduler="tcp://host:8786")` joins an existing cluster (started with `dask scheduler` and
`dask worker` on other machines, each with sparsesim installed at the same version). The scenario is sent
to the workers once; each task runs the function its caller hands to `map_ordered` on one item (the sweep:
simulator.planner.price_chunk on a contiguous range of the enumeration) and returns its result. The caller
takes the results back in item order, so the table equals the serial run's bit for bit (the same chunk
boundaries, the same code per chunk); at most `in_flight` results wait in memory at a time.

Dask is an optional extra: `pip install 'sparsesim[dask]'`. Without it these functions raise one
SparsesimError saying so.
"""
from __future__ import annotations

import contextlib
from collections import deque

from hwmodels.errors import SparsesimError


def _distributed():
    try:
        import dask.distributed as dd
    except ImportError:
        raise SparsesimError("--workers / --scheduler need dask.distributed: pip install 'sparsesim[dask]'") from None
    return dd


@contextlib.contextmanager
def client(workers: int | None = None, scheduler: str | None = None, processes: bool = True):
    """A dask.distributed Client: on a new LocalCluster of `workers` single-threaded workers, or connected to
    the scheduler at `scheduler`. Closed (and the local cluster shut down) on exit."""
    dd = _distributed()
    if scheduler:
        try:
            cl = dd.Client(scheduler, timeout="20s")
        except (OSError, TimeoutError) as e:
            raise SparsesimError(f"cannot reach the Dask scheduler at {scheduler} ({e})") from None
        except (ValueError, TypeError) as e:   # not an address: 'missing port number', 'invalid address', ...
            raise SparsesimError(f"--scheduler {scheduler!r} is not a Dask scheduler address ({e}); give one like "
                                 "tcp://10.0.0.5:8786") from None
        try:
            yield cl
        finally:
            cl.close()
        return
    if not workers or workers < 1:
        raise SparsesimError(f"--workers must be a positive number of worker processes, got {workers!r}")
    import tempfile

    import dask

    # the workers' scratch space (dask's default: TMPDIR/dask-scratch-space, left behind) lives and dies with the run
    with tempfile.TemporaryDirectory(prefix="sparsesim-dask-") as scratch, \
            dask.config.set({"temporary-directory": scratch}):
        cluster = dd.LocalCluster(n_workers=workers, threads_per_worker=1, processes=processes,
                                  dashboard_address=":0", silence_logs=40, local_directory=scratch)
        cl = dd.Client(cluster)
        try:
            yield cl
        finally:
            cl.close()
            cluster.close()


def add_arguments(parser) -> None:
    """--workers / --scheduler on a command."""
    g = parser.add_mutually_exclusive_group()
    g.add_argument("--workers", type=int, metavar="N",
                   help="price on a local Dask cluster of N worker processes (pip install 'sparsesim[dask]')")
    g.add_argument("--scheduler", metavar="ADDRESS",
                   help="price on an existing Dask cluster (e.g. tcp://10.0.0.5:8786)")


def client_from_args(args):
    """A context manager yielding a Client for --workers / --scheduler, or None when neither is given."""
    workers = getattr(args, "workers", None)
    scheduler = getattr(args, "scheduler", None)
    if workers is None and not scheduler:
        return contextlib.nullcontext(None)
    return client(workers=workers, scheduler=scheduler)


#: objects installed on each worker by map_ordered (key -> object), read by _call_with_shared
_SHARED: dict[str, object] = {}


def _install_shared(key: str, obj) -> None:
    _SHARED[key] = obj


def _drop_shared(key: str) -> None:
    _SHARED.pop(key, None)


def _call_with_shared(fn, key: str, *item):
    if key not in _SHARED:
        raise RuntimeError("this Dask worker joined (or restarted) after the job started and lacks its shared "
                           "scenario; keep the workers up for the whole sweep or plan")
    return fn(_SHARED[key], *item)


def map_ordered(cl, fn, shared, items: list, in_flight: int | None = None):
    """fn(shared, *item) for every item on the cluster, yielded in the order of `items`; `shared` is sent to
    each worker once; at most `in_flight` results are pending at a time (default: 2 per worker).

    `shared` is installed on every worker with Client.run (a direct message from the client to each worker)
    rather than Client.scatter(broadcast=True): the broadcast replicates through worker-to-worker gathers,
    which livelocked in this project's CI (two workers spinning in Worker.gather for 10+ minutes)."""
    import uuid

    if in_flight is None:
        in_flight = max(2, 2 * len(cl.scheduler_info().get("workers", {})))
    key = uuid.uuid4().hex
    cl.run(_install_shared, key, shared)
    pending: deque = deque()
    it = iter(items)
    try:
        for item in it:
            pending.append(cl.submit(_call_with_shared, fn, key, *item, pure=False))
            if len(pending) >= in_flight:
                break
        while pending:
            f = pending.popleft()
            yield f.result()
            f.release()
            nxt = next(it, None)
            if nxt is not None:
                pending.append(cl.submit(_call_with_shared, fn, key, *nxt, pure=False))
    finally:
        for f in pending:
            f.cancel()
        cl.run(_drop_shared, key)
