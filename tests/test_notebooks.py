"""Every notebook in notebooks/ executes top to bottom (nbclient, kernel python3) on the INSTALLED package
from a folder outside the checkout (.ci/run copies notebooks/ beside tests/), on its small setting, and shows
what it is for: the reproduction notebooks print their table with the count line and write the paper's
figures as PNGs; the capacity-planning notebook ranks, searches with the engine and writes its report.
The notebooks execute in the background from the end of collection on (tests/notebook_runner.py, started by
tests/conftest.py), one at a time beside the other tests; each test checks its notebook's executed copy.
Run alone (or without the runner), a test executes its notebook itself."""
import os
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"

#: notebook -> (text its outputs must contain, PNGs it must write under $SPARSESIM_NOTEBOOK_OUT at least)
EXPECT = {
    "ssv": (["ssv: ", " within / ", "identity (not counted)", "sensitivity:"], 4),
    "gvr": (["gvr_topk: ", " within / ", "identity (not counted)", "sensitivity:"], 4),
    "specattn": (["within", "missed", "identity (not counted)"], 3),
    "snapstream": (["within", "missed", "identity (not counted)"], 3),
    "lserve": (["within", "missed", "identity (not counted)"], 3),
    "capacity_planning": (["winner: Llama-3.1-70B", "wrote "], 2),
}


def test_every_notebook_is_tested():
    if not NOTEBOOKS.is_dir():
        pytest.skip("no notebooks/ folder beside tests/ (copy it there to run the notebook tests)")
    assert sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb")) == sorted(EXPECT)


def notebooks_to_run(items) -> list[str]:
    """The notebooks whose test_notebook_runs is among `items` (in test order), [] when those tests will skip."""
    if not NOTEBOOKS.is_dir() and os.environ.get("SPARSESIM_EXPECT_INSTALLED") != "1":
        return []
    return [it.callspec.params["name"] for it in items
            if getattr(it, "originalname", None) == "test_notebook_runs" and it.module.__name__.endswith("test_notebooks")]


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_notebook_runs(name, tmp_path, monkeypatch):
    if not NOTEBOOKS.is_dir() and os.environ.get("SPARSESIM_EXPECT_INSTALLED") != "1":
        pytest.skip("no notebooks/ folder beside tests/ (copy it there to run the notebook tests)")
    import nbformat

    from tests import notebook_runner

    # executed in the background since collection ended (tests/notebook_runner.py); else here, now
    job = notebook_runner.job(name)
    if job is None:
        workdir, executed = tmp_path, tmp_path / "executed.ipynb"
        monkeypatch.setenv("SPARSESIM_NOTEBOOK_OUT", str(workdir / "out"))
        notebook_runner.execute(NOTEBOOKS / f"{name}.ipynb", workdir, executed)
    else:
        workdir, executed = job.workdir, job.executed
        assert job.returncode == 0, f"{name}.ipynb failed (exit {job.returncode}):\n{job.log[-6000:]}"
    nb = nbformat.read(executed, as_version=4)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    text = "".join(o.get("text", "") for o in outputs)
    must, n_png = EXPECT[name]
    for s in must:
        assert s in text, f"{name}: {s!r} not printed"
    out = workdir / "out"
    pngs = sorted(p.name for p in out.rglob("*.png")) + sorted(p.name for p in workdir.glob("*.png"))
    assert len(pngs) >= n_png, pngs
