"""notebooks/capacity_planning.ipynb executes top to bottom on the installed package from a folder outside the
checkout (nbclient, kernel python3) in its small setting: a ranked table, the engine search, the report (issue 13)."""
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def test_capacity_planning_notebook_runs(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    path = NOTEBOOKS / "capacity_planning.ipynb"
    if not path.is_file():
        pytest.skip(f"{path} not present (tests run without the repository's notebooks/)")
    monkeypatch.setenv("SPARSESIM_NOTEBOOK_OUT", str(tmp_path / "out"))
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors, errors
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "winner: Llama-3.1-70B" in text and "wrote " in text
    d = tmp_path / "out" / "plan_mooncake"
    assert (d / "report.md").is_file() and (d / "pareto_cost.png").is_file()
    assert (tmp_path / "out" / "search_ttft.png").is_file()
