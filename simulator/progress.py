"""Progress of long commands (plan, sweep, run, simulate, trace record) on stderr, whether or not it is a terminal.

    bar = progress_bar(total, "pricing strategy tuples", "tuple")    # None when disabled
    bar.update(n); ...; bar.close()

On a terminal it is a tqdm bar (redrawn in place, erased at the end). Anywhere else (a pipe, a log file, CI) a
redrawn bar is noise or nothing at all, so it prints one plain line every few seconds instead,

    sparsesim: pricing strategy tuples: 1,200/4,800 tuples (25 %), 12 s elapsed, ~36 s left

and a last line when the work ends, if it took that long at all: a run of 80 s is never silent, a run of 2 s
prints nothing. The interval is PROGRESS_EVERY_S seconds, or $SPARSESIM_PROGRESS_EVERY_S.
"""
from __future__ import annotations

import os
import sys
import time

#: seconds between two progress lines when stderr is not a terminal
PROGRESS_EVERY_S = 5.0
PROGRESS_ENV = "SPARSESIM_PROGRESS_EVERY_S"


def _every_s() -> float:
    try:
        v = float(os.environ.get(PROGRESS_ENV, PROGRESS_EVERY_S))
    except ValueError:
        return PROGRESS_EVERY_S
    return v if v > 0 else PROGRESS_EVERY_S


class LineProgress:
    """The tqdm subset the commands use (update, close, set_description), printing a line every `every_s`."""

    def __init__(self, total: int | None, desc: str, unit: str, every_s: float | None = None, stream=None):
        self.total, self.desc, self.unit = total, desc, unit
        self.every_s = _every_s() if every_s is None else every_s
        self.stream = stream if stream is not None else sys.stderr
        self.n = 0
        self.t0 = self.last = time.monotonic()
        self.printed = False

    def _line(self, now: float, done: bool = False) -> str:
        el = now - self.t0
        if self.total:
            frac = min(self.n / self.total, 1.0)
            left = f", ~{el / frac - el:,.0f} s left" if 0 < frac < 1 else ""
            what = f"{self.n:,}/{self.total:,} {self.unit}s ({100 * frac:.0f} %)"
        else:
            left, what = "", f"{self.n:,} {self.unit}s"
        return f"sparsesim: {self.desc}: {what}, {el:,.0f} s elapsed" + ("" if done else left) + (", done" if done else "")

    def update(self, n: int = 1) -> None:
        self.n += n
        now = time.monotonic()
        if now - self.last >= self.every_s:
            self.last = now
            self.printed = True
            print(self._line(now), file=self.stream, flush=True)

    def set_description(self, desc: str) -> None:
        self.desc = desc

    def close(self) -> None:
        now = time.monotonic()
        if self.printed or now - self.t0 >= self.every_s:
            print(self._line(now, done=True), file=self.stream, flush=True)
        self.printed = False
        self.t0 = self.last = now


def progress_bar(total: int | None, desc: str, unit: str, enabled: bool = True):
    """A progress reporter for `total` units of work, or None when not `enabled`: a tqdm bar when stderr is a
    terminal, else a LineProgress."""
    if not enabled:
        return None
    if sys.stderr.isatty():
        from tqdm import tqdm

        return tqdm(total=total, desc=desc, unit=unit, leave=False, mininterval=0.5)
    return LineProgress(total, desc, unit)
