"""Runs the notebook tests' notebooks in the background while the rest of the suite runs.

Executing a notebook (nbclient, kernel python3) mostly waits on its kernel, a process of its own; the suite's
other tests run in pytest's process on one core. So as soon as collection is done (tests/conftest.py calls
`start`), the selected notebooks are executed one at a time, in the order their tests come, each in a child
process (this file run as a script) that writes the executed notebook to a file; each notebook test then waits
for its own notebook and checks the executed copy exactly as if it had executed it itself. The children get
the environment as it was when collection ended (a test's monkeypatched variable cannot leak into a notebook)
plus SPARSESIM_NOTEBOOK_OUT pointing into the notebook's own folder. `stop` (at the end of the session) kills
whatever is still running, kernels included (each child leads its own process group).
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

#: per-cell limit (seconds), as the notebook tests always had
CELL_TIMEOUT_S = 180


@dataclass
class Job:
    name: str
    notebook: Path
    workdir: Path                      # the notebook's working folder (its tmp_path); PNGs go to workdir/out
    executed: Path                     # the executed notebook, written by the child
    done: threading.Event = field(default_factory=threading.Event)
    returncode: int | None = None
    log: str = ""


class Runner:
    def __init__(self, jobs: list[Job], env: dict[str, str]):
        self.jobs = {j.name: j for j in jobs}
        self._order = list(jobs)
        self._env = env
        self._proc: subprocess.Popen | None = None
        self._stopped = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run_all, name="notebook-runner", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run_all(self) -> None:
        for job in self._order:
            try:
                with self._lock:
                    if self._stopped:
                        job.log = "not run: the session ended first"
                        return
                    env = dict(self._env, SPARSESIM_NOTEBOOK_OUT=str(job.workdir / "out"))
                    self._proc = subprocess.Popen(
                        [sys.executable, __file__, str(job.notebook), str(job.workdir), str(job.executed)],
                        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                        start_new_session=True)
                out, _ = self._proc.communicate()
                job.returncode, job.log = self._proc.returncode, out
            except Exception as e:          # noqa: BLE001 - reported by the notebook's test, never swallowed
                job.returncode, job.log = -1, f"{type(e).__name__}: {e}"
            finally:
                job.done.set()

    def result(self, name: str) -> Job:
        job = self.jobs[name]
        job.done.wait()
        return job

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            p = self._proc
        if p is not None and p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
        for job in self._order:         # nobody waits forever on a notebook that will not run
            job.done.set()


#: the session's runner (None: the notebook tests execute their notebooks themselves)
RUNNER: Runner | None = None
_TMP: Path | None = None


def start(notebooks: Path, names: list[str]) -> None:
    """Start executing `names` (notebooks/<name>.ipynb, in this order) in the background."""
    global RUNNER, _TMP
    if RUNNER is not None or not names:
        return
    _TMP = Path(tempfile.mkdtemp(prefix="sparsesim-notebooks-"))
    jobs = []
    for name in names:
        (_TMP / name).mkdir()
        jobs.append(Job(name, notebooks / f"{name}.ipynb", _TMP / name, _TMP / f"{name}.executed.ipynb"))
    RUNNER = Runner(jobs, dict(os.environ))
    RUNNER.start()


def job(name: str) -> Job | None:
    """The background run of notebook `name`, once it is done; None when it was not started in the background."""
    return RUNNER.result(name) if RUNNER is not None and name in RUNNER.jobs else None


def stop() -> None:
    global RUNNER, _TMP
    if RUNNER is not None:
        RUNNER.stop()
        RUNNER = None
    if _TMP is not None:
        shutil.rmtree(_TMP, ignore_errors=True)
        _TMP = None


def execute(notebook: Path, workdir: Path, executed: Path) -> None:
    """Execute `notebook` top to bottom in a fresh python3 kernel whose working folder is `workdir`; write the
    executed notebook (outputs included) to `executed`, also when a cell fails (then raise)."""
    import nbclient
    import nbformat

    nb = nbformat.read(notebook, as_version=4)
    try:
        nbclient.NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name="python3",
                                resources={"metadata": {"path": str(workdir)}}).execute()
    finally:
        nbformat.write(nb, executed)


if __name__ == "__main__":
    execute(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))
