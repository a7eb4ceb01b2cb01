"""Two structural promises (ARCHITECTURE.md, "Pass interface"): passes reach
nested graphs only through the walks of ``ir/transforms.py`` (``walk``,
``walk_graphs``, ``walk_scopes``), never by iterating ``node.subgraphs`` or
``Graph.nodes_with_subgraphs`` or by calling themselves on a body; and no
module keeps a cache keyed by IR objects (a weak dictionary or set at
module level): the pipeline owns what passes know of a graph."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PASS_MODULES = sorted((ROOT / "passes").rglob("*.py"))
PROJECT_MODULES = sorted(p for pkg in ("ir", "passes", "backends", "compiler") for p in (ROOT / pkg).rglob("*.py"))
WEAK_CONTAINERS = {"WeakKeyDictionary", "WeakValueDictionary", "WeakSet"}


def _mentions_subgraphs(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr in ("subgraphs", "nodes_with_subgraphs") for n in ast.walk(node))


def hand_recursions(source: str) -> list[str]:
    """Where ``source`` reaches nested graphs by hand: a loop or
    comprehension over ``….subgraphs`` (or ``nodes_with_subgraphs()``), or a
    function calling itself with an argument read from ``….subgraphs``."""
    found = []
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, (ast.For, ast.comprehension)) and _mentions_subgraphs(node.iter):
            found.append(f"line {getattr(node, 'lineno', node.iter.lineno)}: iterates {ast.unparse(node.iter)}")
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for call in ast.walk(fn):
            if not isinstance(call, ast.Call):
                continue
            callee = call.func
            name = callee.id if isinstance(callee, ast.Name) else callee.attr if isinstance(callee, ast.Attribute) else None
            if name == fn.name and any(_mentions_subgraphs(a) for a in [*call.args, *(k.value for k in call.keywords)]):
                found.append(f"line {call.lineno}: {fn.name} calls itself on {ast.unparse(call)}")
    return found


def module_level_weak_caches(source: str) -> list[str]:
    """Module-level assignments of a weak container (a cache keyed by objects)."""
    found = []
    for stmt in ast.parse(source).body:
        value = stmt.value if isinstance(stmt, (ast.Assign, ast.AnnAssign)) else None
        if isinstance(value, ast.Call):
            callee = value.func
            name = callee.attr if isinstance(callee, ast.Attribute) else getattr(callee, "id", None)
            if name in WEAK_CONTAINERS:
                found.append(f"line {stmt.lineno}: {ast.unparse(stmt)[:80]}")
    return found


def test_passes_reach_nested_graphs_only_through_the_walks_of_ir():
    assert len(PASS_MODULES) > 25  # the scan sees the passes
    bad = {str(p.relative_to(ROOT)): got for p in PASS_MODULES if (got := hand_recursions(p.read_text()))}
    assert bad == {}


def test_the_recursion_check_sees_the_hand_written_forms():
    assert len(hand_recursions("""
def run(self, graph):
    for node in graph:
        for sub in node.subgraphs.values():
            self.run(sub)
    return [g for n in graph.nodes_with_subgraphs() for g in n.subgraphs.values()]

def unroll(graph, node):
    return unroll(node.subgraphs["body"], node)
""")) == 4
    assert hand_recursions("body = node.subgraphs['body']\nif node.subgraphs:\n    pass\n") == []


def test_no_module_keeps_a_weak_cache():
    assert len(PROJECT_MODULES) > 100
    bad = {str(p.relative_to(ROOT)): got for p in PROJECT_MODULES if (got := module_level_weak_caches(p.read_text()))}
    assert bad == {}
    assert len(module_level_weak_caches("import weakref\n_C: dict = weakref.WeakKeyDictionary()\n_S = WeakSet()\n")) == 2
