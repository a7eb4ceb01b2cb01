"""The import structure the architecture promises (ARCHITECTURE.md, "Layers"):
no import cycles between the project's modules, no function-level import
of a project module (a lazy import hides a cycle or a layering break; only
the command line defers its subcommands' imports to start fast), and the
layers depend downwards only: ``ir`` on nothing of ours, ``passes`` on
``ir``, ``backends`` on ``ir``, the PyTensor front end (``compiler.lowering``)
on ``ir`` but never on a pass, the core (``compiler.core``) on those, and
nothing below the tools (``compiler.tools``) and the ``nn`` library on
them; the PyMC front door (``compiler.pymc_model``) on the core, and nothing
on it. Importing ``compiler`` (the compile path) loads no tool, no ``nn``
module, no front door and not PyMC."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("compiler", "ir", "passes", "backends")
LAZY_IMPORTS_ALLOWED = {"compiler.tools.cli"}  # subcommands import what they need when run


def _modules() -> dict[str, Path]:
    mods = {}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            mods[name.removesuffix(".__init__")] = path
    return mods


MODULES = _modules()


def _resolve(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imported(node: ast.Import | ast.ImportFrom, importer: str) -> set[str]:
    """Project modules an import statement executes: the named module and
    every package above it that is not already above the importer."""
    if isinstance(node, ast.ImportFrom):
        if node.level:
            return set()
        names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
    else:
        names = [a.name for a in node.names]
    out = set()
    for name in names:
        if name.split(".")[0] not in PACKAGES:
            continue
        target = _resolve(name)
        parts = target.split(".") if target else []
        for i in range(1, len(parts) + 1):
            mod = ".".join(parts[:i])
            if mod in MODULES and mod != importer and not importer.startswith(mod + "."):
                out.add(mod)
    return out


def _is_type_checking(node: ast.If) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _scan():
    """(module-level edges, function-level imports) over the project."""
    edges: dict[str, set[str]] = {m: set() for m in MODULES}
    lazy: list[tuple[str, int, set[str]]] = []
    for mod, path in MODULES.items():
        tree = ast.parse(path.read_text())

        def visit(node, in_function: bool):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.If) and _is_type_checking(child):
                    continue  # annotations only, never executed
                if isinstance(child, (ast.Import, ast.ImportFrom)):
                    targets = _imported(child, mod)
                    if targets:
                        (lazy.append((mod, child.lineno, targets)) if in_function
                         else edges[mod].update(targets))
                visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                 ast.Lambda)))
        visit(tree, False)
    return edges, lazy


EDGES, LAZY = _scan()


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def connect(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in edges:
        if v not in index:
            connect(v)
    return found


def test_no_import_cycles():
    assert _cycles(EDGES) == []


def test_no_function_level_imports_of_project_modules():
    offenders = [f"{m}:{line} imports {sorted(t)}" for m, line, t in LAZY if m not in LAZY_IMPORTS_ALLOWED]
    assert offenders == []


@pytest.mark.parametrize("layer, forbidden", [
    ("ir", ("compiler", "passes", "backends")),
    ("passes", ("compiler", "backends")),
    ("backends", ("compiler", "passes")),
    ("compiler.lowering", ("passes", "backends", "compiler.core", "compiler.mode", "compiler.tools", "compiler.nn",
                           "compiler.pymc_model")),
    ("compiler.core", ("compiler.mode", "compiler.tools", "compiler.nn", "compiler.pymc_model")),
    ("compiler.mode", ("compiler.tools", "compiler.nn", "compiler.pymc_model")),
    ("compiler.nn", ("compiler.core", "compiler.mode", "compiler.tools")),
    ("compiler.pymc_model", ("compiler.mode", "compiler.tools", "compiler.nn")),
])
def test_layers_depend_downwards(layer, forbidden):
    bad = sorted(f"{m} -> {t}" for m, targets in EDGES.items() if m == layer or m.startswith(layer + ".")
                 for t in targets if any(t == f or t.startswith(f + ".") for f in forbidden))
    assert bad == []


def test_importing_compiler_loads_no_tool_and_no_nn_module():
    """The compile path (``import compiler``, ``compile_to_onnx``) in a fresh
    interpreter: no CLI, demo, web, fuzzer or ``nn`` module is loaded."""
    import subprocess
    import sys

    code = ("import sys, compiler; print('\\n'.join(m for m in sys.modules if m.split('.')[0] in "
            f"{PACKAGES!r}))")
    loaded = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout.split()
    assert "compiler.core.driver" in loaded and "compiler.lowering.lower" in loaded
    assert [m for m in loaded if m.startswith(("compiler.tools", "compiler.nn", "compiler.pymc_model"))] == []
    assert "pymc" not in subprocess.run([sys.executable, "-c", "import sys, compiler; print(list(sys.modules))"],
                                        cwd=ROOT, capture_output=True, text=True, check=True).stdout.split("'")


def test_the_scan_sees_the_project():
    assert len(MODULES) > 50 and EDGES["compiler.core.driver"] >= {"ir", "passes"}


def test_pytensor_version_checks_live_in_compat():
    """Only ``compiler/lowering/compat.py`` tells the PyTensor lines apart:
    no other module reads the version, imports with an ImportError
    fallback, or probes a PyTensor module for a name."""
    import re

    probe = re.compile(r"__version__|except ImportError|hasattr\((pytensor|pt|ps|psm|special)\b")
    offenders = [f"{m}:{i}" for m, path in MODULES.items() if m != "compiler.lowering.compat"
                 for i, line in enumerate(path.read_text().splitlines(), 1) if probe.search(line)]
    assert offenders == []


def test_class_keyed_tables_are_read_through_one_lookup():
    """``compiler.lowering.registry.find_in_mro`` is the one MRO lookup."""
    offenders = [m for m, path in MODULES.items() if m != "compiler.lowering.registry"
                 and "__mro__" in path.read_text()]
    assert offenders == []
