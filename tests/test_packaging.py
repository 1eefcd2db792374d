"""What a `pip install .` ships: every source package is listed in pyproject.toml, and the data the package
reads at run time (scenarios, traces, paper values, models, specs, fitted files) is found through the
package itself, whatever the working directory."""
import os
from pathlib import Path

import pytest

import simulator
from simulator.shipped import scenarios_dir, shipped_scenarios, traces_dir

SRC_ROOT = Path(simulator.__file__).resolve().parents[1]
PYPROJECT = SRC_ROOT / "pyproject.toml"


@pytest.mark.skipif(not PYPROJECT.is_file(), reason="installed package: no pyproject.toml beside it")
def test_every_source_package_is_listed():
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    listed = set(tomllib.loads(PYPROJECT.read_text())["tool"]["setuptools"]["packages"])
    found = set()
    for top in ("simulator", "hwmodels"):
        for init in (SRC_ROOT / top).rglob("__init__.py"):
            found.add(".".join(init.parent.relative_to(SRC_ROOT).parts))
    assert found - listed == set(), f"packages missing from pyproject.toml: {sorted(found - listed)}"


def test_shipped_data_is_found(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # nothing may depend on the working directory
    assert {"quickstart", "ssv_h100_pcie", "gvr_b200"} <= set(shipped_scenarios())
    assert scenarios_dir().is_dir() and (traces_dir() / "requests").is_dir()
    from simulator.figures import paper_values

    for paper in ("ssv", "gvr", "specattn", "snapstream", "lserve"):
        assert isinstance(paper_values(paper), dict)


@pytest.mark.skipif(os.environ.get("SPARSESIM_EXPECT_INSTALLED") != "1", reason="only in CI (.ci/run sets it)")
def test_ci_tests_the_installed_package():
    """CI must import the installed package, never a source tree."""
    import hwmodels

    for mod in (simulator, hwmodels):
        assert "site-packages" in Path(mod.__file__).resolve().parts, mod.__file__
