"""The design rules, made mechanical (read from the installed or source package, whichever is imported):

1. Layers, one per room. A module imports only modules of its own layer or a lower one (function-level imports
   count; imports under `if TYPE_CHECKING:` count too: a type is a dependency):
     0 hardware       hwmodels.*  (what a device can do, what an op costs on it)
     1 model core     simulator (the package), simulator.{precision, model, ops, combo, layers, memory, acceptance,
                      dtw, shipped, pricing, progress}, simulator.kernels.* (kernel models), simulator.strategies.base (the
                      strategy contract and registry)
     2 strategies     simulator.strategies.*  (the values of the strategy axes)
     3 traces         simulator.traces.*  (attention and request traces, their statistics)
     4 sweep          simulator.{scenario, sections, planner, report, parallel, adaptation}
     5 engine         simulator.engine.*  (the discrete-event serving engine)
     6 studies        simulator.{planning, calibration, figures}.*
     7 interface      simulator.{cli, commands.*}
   The one import that still runs back up is listed in UPWARD with its reason. Every .py file under a package
   is a module of it (no script folders inside the packages). Plug-in discovery by folder scan
   (simulator.strategies.base.registry) is not an import.
2. No import circles: the module graph (function-level imports included, `if TYPE_CHECKING:` blocks and a
   package's imports of its own submodules left out) has no cycle.
3. The seam: strategy modules never read `.hardware` (only `combo.target`, the facts software queries) and
   never import the hardware pricing (hwmodels.spec, hwmodels.roofline).
4. The GPU lab (lab/ at the repository top: measurement scripts run by path, not installed) sits above
   everything: nothing in `simulator` or `hwmodels` imports `lab` or one of its scripts' modules.
"""
import ast
import functools
from pathlib import Path

import hwmodels
import simulator

#: (module prefix, layer): the longest matching prefix decides
LAYERS = {
    "hwmodels": 0,
    "simulator": 1, "simulator.precision": 1, "simulator.model": 1, "simulator.ops": 1, "simulator.combo": 1,
    "simulator.layers": 1, "simulator.memory": 1, "simulator.acceptance": 1, "simulator.dtw": 1,
    "simulator.shipped": 1, "simulator.pricing": 1, "simulator.progress": 1, "simulator.kernels": 1,
    "simulator.strategies.base": 1,
    "simulator.strategies": 2,
    "simulator.traces": 3,
    "simulator.scenario": 4, "simulator.sections": 4, "simulator.planner": 4, "simulator.report": 4,
    "simulator.parallel": 4, "simulator.adaptation": 4,
    "simulator.engine": 5,
    "simulator.planning": 6, "simulator.calibration": 6, "simulator.figures": 6,
    "simulator.cli": 7, "simulator.commands": 7,
}
LAYER_NAMES = ("hardware", "model core", "strategies", "traces", "sweep", "engine", "studies", "interface")
#: imports allowed to run back up: (importer, imported) -> why
UPWARD = {
    ("simulator.scenario", "simulator.figures"): "a scenario's `targets:` are checked against the reproductions when "
                                                 "it is read (one line naming the unknown name)",
}


def layer_of(module: str) -> int | None:
    if module.split(".")[0] not in ("hwmodels", "simulator"):
        return None  # third-party or standard library
    best = None
    for prefix, n in LAYERS.items():
        if (module == prefix or module.startswith(prefix + ".")) and (best is None or len(prefix) > len(best[0])):
            best = (prefix, n)
    if best is None or (best[0] == "simulator" and module != "simulator"):
        raise AssertionError(f"module {module} is in no layer: add it to tests/test_layering.py's table")
    return best[1]


def package_modules(pkg) -> list[tuple[str, Path]]:
    """(dotted name, file) of every module of the package; a .py file in a folder without __init__.py fails."""
    root = Path(pkg.__file__).parent
    out = []
    for f in root.rglob("*.py"):
        rel = f.relative_to(root.parent)
        folders = [root.parent.joinpath(*rel.parts[:i]) for i in range(1, len(rel.parts))]
        missing = [str(d) for d in folders if not (d / "__init__.py").is_file()]
        assert not missing, f"{f} is in a folder without __init__.py ({missing[0]}): scripts belong in lab/"
        name = ".".join(rel.with_suffix("").parts)
        out.append((name.removesuffix(".__init__"), f))
    return out


@functools.lru_cache(maxsize=None)
def _parse(path: Path, text: str):
    return ast.parse(text, str(path))


def _tree(path: Path):
    return _parse(path, path.read_text())


def _is_type_checking(node) -> bool:
    return isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", None)) == "TYPE_CHECKING"


@functools.lru_cache(maxsize=None)
def _import_nodes(path: Path, text: str) -> tuple:
    """(import statement, under `if TYPE_CHECKING:`) of every import in the file, at any depth (statements only)."""
    out = []

    def visit(stmts, type_only):
        for st in stmts:
            if isinstance(st, (ast.Import, ast.ImportFrom)):
                out.append((st, type_only))
            for fld in ("body", "orelse", "finalbody", "handlers", "cases"):
                sub = getattr(st, fld, None)
                if isinstance(sub, list) and sub:
                    visit(sub, type_only or (fld == "body" and _is_type_checking(st)))

    visit(_parse(path, text).body, False)
    return tuple(out)


def imports(path: Path, module: str, known: set | None = None, runtime_only: bool = False) -> list[str]:
    """Modules `module` (the file `path`) imports. `from a import b` gives a.b when that is a module of `known`,
    else a. runtime_only: leave out imports under `if TYPE_CHECKING:`."""
    out = []
    pkg = module.split(".")
    for node, type_only in _import_nodes(path, path.read_text()):
        if runtime_only and type_only:
            continue
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        else:
            if node.level:  # relative import
                base = pkg[:len(pkg) - node.level] if path.name != "__init__.py" else pkg[:len(pkg) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module
            if not mod:
                continue
            subs = [f"{mod}.{a.name}" for a in node.names if known is not None and f"{mod}.{a.name}" in known]
            out += subs if len(subs) == len(node.names) else [mod] + subs
    return out


def all_modules():
    return package_modules(hwmodels) + package_modules(simulator)


def upward_imports(modules) -> list[str]:
    known = {n for n, _ in modules}
    bad = []
    for name, path in modules:
        mine = layer_of(name)
        for imp in imports(path, name, known):
            theirs = layer_of(imp)
            if theirs is not None and theirs > mine:
                top = next((p for p in sorted(LAYERS, key=len, reverse=True)
                            if imp == p or imp.startswith(p + ".")), imp)
                if (name, top) not in UPWARD:
                    bad.append(f"{name} ({LAYER_NAMES[mine]}) imports {imp} ({LAYER_NAMES[theirs]})")
    return bad


def import_cycles(graph: dict) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph.get(root, ())))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(graph.get(w, ()))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def module_graph(modules) -> dict:
    known = {n for n, _ in modules}
    graph = {}
    for name, path in modules:
        deps = set()
        for imp in imports(path, name, known, runtime_only=True):
            while imp and imp not in known:  # an attribute of a module: the module
                imp = imp.rpartition(".")[0]
            if imp and imp != name and not imp.startswith(name + "."):  # not a package's own submodules
                deps.add(imp)
        graph[name] = deps
    return graph


def test_every_module_imports_only_its_layer_or_lower():
    bad = upward_imports(all_modules())
    assert not bad, "\n".join(bad)


def test_no_import_circles():
    cycles = import_cycles(module_graph(all_modules()))
    assert not cycles, "\n".join(" <-> ".join(c) for c in cycles)


def test_strategies_never_read_hardware():
    bad = []
    for name, path in package_modules(simulator):
        if not name.startswith("simulator.strategies"):
            continue
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.Attribute) and node.attr == "hardware":
                bad.append(f"{path.name}:{node.lineno} reads .hardware (use combo.target)")
        for imp in imports(path, name):
            if imp in ("hwmodels.spec", "hwmodels.roofline") or imp.startswith("hwmodels.calibration"):
                bad.append(f"{path.name} imports {imp}")
    assert not bad, "\n".join(bad)


#: lab/ beside tests/ (in the checkout, and in .ci/run's copy of the suite)
LAB = Path(__file__).resolve().parents[1] / "lab"


def test_nothing_in_the_packages_imports_the_lab():
    scripts = {f.stem for f in LAB.rglob("*.py")} if LAB.is_dir() else {"harness"}
    bad = [f"{name} imports {imp}" for name, path in all_modules() for imp in imports(path, name)
           if imp.split(".")[0] == "lab" or imp.split(".")[0] in scripts]
    assert not bad, "\n".join(bad)


def test_the_checker_sees_violations(tmp_path):
    """The scans themselves work: an upward import, each room's order, a circle (also one hidden in a function, and
    one through `from package import module`) and a hardware read are found; a type-only import is no circle."""
    f = tmp_path / "m.py"
    f.write_text("from simulator.cli import main\n\ndef g(combo):\n    return combo.hardware.units\n")
    assert "simulator.cli" in imports(f, "simulator.ops")
    assert upward_imports([("simulator.ops", f)]) == ["simulator.ops (model core) imports simulator.cli (interface)"]
    order = ["hwmodels.spec", "simulator.kernels.gvr_passes", "simulator.strategies.topk", "simulator.traces.stats",
             "simulator.planner", "simulator.engine.sim", "simulator.figures.render", "simulator.commands.run"]
    assert [layer_of(m) for m in order] == sorted(layer_of(m) for m in order)
    assert layer_of("simulator.strategies.topk") > layer_of("simulator.strategies.base") == layer_of("simulator.combo")
    assert any(isinstance(n, ast.Attribute) and n.attr == "hardware" for n in ast.walk(ast.parse(f.read_text())))
    a, b, c, t = (tmp_path / x for x in ("a.py", "b.py", "c.py", "t.py"))
    a.write_text("import simulator.engine.b\n")
    b.write_text("def f():\n    from simulator.engine import c\n")
    c.write_text("from simulator.engine.a import x\n")
    t.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from simulator.engine.a import x\n")
    mods = [("simulator.engine.a", a), ("simulator.engine.b", b), ("simulator.engine.c", c), ("simulator.engine.t", t)]
    assert import_cycles(module_graph(mods)) == [["simulator.engine.a", "simulator.engine.b", "simulator.engine.c"]]
    a.write_text("import simulator.engine.t\n")
    assert import_cycles(module_graph(mods)) == []
