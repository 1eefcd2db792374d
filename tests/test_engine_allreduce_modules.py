"""The engines' all-reduce family's module layout: simulator/calibration/engine_allreduce.py holds the live code only, and
each blind grid's history (4, 6-14) is its own module that imports the live module and earlier grids only."""
import ast
import re
from pathlib import Path

import simulator.calibration

#: the package's own folder (CI runs the suite against the INSTALLED package, not the checkout)
CAL = Path(simulator.calibration.__file__).resolve().parent
GRIDS = (4, 6, 7, 8, 9, 10, 11, 12, 13, 14)


def _top_names(path: Path) -> set:
    out = set()
    for n in ast.parse(path.read_text()).body:
        if isinstance(n, ast.Assign):
            out |= {t.id for t in n.targets if isinstance(t, ast.Name)}
        elif isinstance(n, ast.FunctionDef):
            out.add(n.name)
    return out


def test_the_live_module_holds_no_grid_history():
    base = CAL / "engine_allreduce.py"
    names = _top_names(base)
    # grid-named and live: the rules-off values predict_with needs, the both-prices join every later grid scores with
    grid_named = {n for n in names if re.search(r"(BLIND|GRID|blind|grid)\d", n)}
    assert grid_named == {"GRID13_RULES_OFF", "GRID14_RULES_OFF", "blind6_rows"}
    assert {"grid", "predict_us", "predict_with", "fit_engine_terms", "write_engine_terms", "blind_rows",
            "size_regime", "trtllm_launch_columns", "IMPL_KIND", "DATA_DIR"} <= names
    assert len(base.read_text().splitlines()) < 400


def test_each_grid_module_holds_its_grid_and_imports_only_earlier_ones():
    seen = set()
    for g in GRIDS:
        f = CAL / f"engine_allreduce_grid{g}.py"
        names = _top_names(f)
        assert f"blind{g}_grid" in names and not (names - {"main"}) & seen, g
        seen |= names - {"main"}
        for n in ast.walk(ast.parse(f.read_text())):
            if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("simulator.calibration.engine_allreduce"):
                m = re.fullmatch(r"simulator\.calibration\.engine_allreduce(?:_grid(\d+))?", n.module)
                assert m and (m.group(1) is None or int(m.group(1)) < g), (g, n.module)
