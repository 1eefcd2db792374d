"""notebooks/{ssv,gvr}.ipynb execute top to bottom on the installed package from a folder outside the checkout
(nbclient, kernel python3), print their reproduction tables with the count line and write their PNGs."""
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


@pytest.mark.parametrize("name, count_line", [("ssv", "ssv: "), ("gvr", "gvr_topk: ")])
def test_notebook_runs(name, count_line, tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    path = NOTEBOOKS / f"{name}.ipynb"
    if not path.is_file():
        pytest.skip(f"{path} not present (tests run without the repository's notebooks/)")
    out = tmp_path / "figures"
    monkeypatch.setenv("SPARSESIM_NOTEBOOK_OUT", str(out))
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert len(pngs) >= 4, pngs
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert count_line in text and " within / " in text and "identity (not counted)" in text
    assert "sensitivity:" in text
