"""The design rules, made mechanical (read from the installed or source package, whichever is imported):

1. Layers. A module imports only modules of its own layer or a lower one (function-level imports count):
     0 hardware       hwmodels.*  (what a device can do, what an op costs on it)
     1 model core     simulator.{precision, model, ops, combo, layers, memory, acceptance, dtw, pricing,
                      kernels.*, strategies.*, traces.*, shipped, progress}  (what work a step does; traces are data the
                      strategies read; shipped locates the packaged data; progress reports long work on stderr)
     2 orchestration  simulator.{scenario, sections, planner, report, parallel, adaptation, engine.*,
                      planning.*, calibration.*, figures.*}
     3 interface      simulator.{cli, commands.*}
   GPU measurement scripts under hwmodels/calibration/ that are not part of a package (no __init__.py
   above them) are standalone tools, not modules of the package, and are not checked.
2. The seam: strategy modules never read `.hardware` (only `combo.target`, the facts software queries) and
   never import the hardware pricing (hwmodels.spec, hwmodels.roofline).
"""
import ast
from pathlib import Path

import hwmodels
import simulator

LAYER1 = {"precision", "model", "ops", "combo", "layers", "memory", "acceptance", "dtw", "pricing", "strategies",
          "traces", "shipped", "kernels", "progress"}
LAYER2 = {"scenario", "sections", "planner", "report", "parallel", "adaptation", "engine", "planning",
          "calibration", "figures"}
LAYER3 = {"cli", "commands"}


def layer_of(module: str) -> int | None:
    parts = module.split(".")
    if parts[0] == "hwmodels":
        return 0
    if parts[0] != "simulator":
        return None  # third-party or standard library
    if len(parts) == 1:
        return 1
    top = parts[1]
    for n, names in ((1, LAYER1), (2, LAYER2), (3, LAYER3)):
        if top in names:
            return n
    raise AssertionError(f"module {module} is in no layer: add it to tests/test_layering.py's table")


def package_modules(pkg) -> list[tuple[str, Path]]:
    """(dotted name, file) of every module of the package, following only folders with __init__.py."""
    root = Path(pkg.__file__).parent
    out = []
    for f in root.rglob("*.py"):
        rel = f.relative_to(root.parent)
        folders = [root.parent.joinpath(*rel.parts[:i]) for i in range(1, len(rel.parts))]
        if not all((d / "__init__.py").is_file() for d in folders):
            continue  # a standalone script folder
        name = ".".join(rel.with_suffix("").parts)
        out.append((name.removesuffix(".__init__"), f))
    return out


def imports(path: Path, module: str) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    out = []
    pkg = module.split(".")
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative import
                base = pkg[:len(pkg) - node.level] if path.name != "__init__.py" else pkg[:len(pkg) - node.level + 1]
                out.append(".".join(base + ([node.module] if node.module else [])))
            elif node.module:
                out.append(node.module)
    return out


def all_modules():
    return package_modules(hwmodels) + package_modules(simulator)


def test_every_module_imports_only_its_layer_or_lower():
    bad = []
    for name, path in all_modules():
        mine = layer_of(name)
        for imp in imports(path, name):
            theirs = layer_of(imp)
            if theirs is not None and theirs > mine:
                bad.append(f"{name} (layer {mine}) imports {imp} (layer {theirs})")
    assert not bad, "\n".join(bad)


def test_strategies_never_read_hardware():
    bad = []
    for name, path in package_modules(simulator):
        if not name.startswith("simulator.strategies"):
            continue
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "hardware":
                bad.append(f"{path.name}:{node.lineno} reads .hardware (use combo.target)")
        for imp in imports(path, name):
            if imp in ("hwmodels.spec", "hwmodels.roofline") or imp.startswith("hwmodels.calibration"):
                bad.append(f"{path.name} imports {imp}")
    assert not bad, "\n".join(bad)


def test_the_checker_sees_violations(tmp_path):
    """The scan itself works: an upward import and a hardware read are found."""
    f = tmp_path / "m.py"
    f.write_text("from simulator.cli import main\n\ndef g(combo):\n    return combo.hardware.units\n")
    assert "simulator.cli" in imports(f, "simulator.ops")
    assert layer_of("simulator.cli") > layer_of("simulator.ops")
    assert any(isinstance(n, ast.Attribute) and n.attr == "hardware" for n in ast.walk(ast.parse(f.read_text())))
