"""The supported-ops page is generated from the lowering registries and
names every entry they hold (issue 28: "lists every lowering the registry
holds")."""

from __future__ import annotations

import compiler.nn  # noqa: F401 - its rules register on import, as the docs build imports it
from compiler.lowering import find_rule, supported_op_types
from compiler.lowering.rules import linalg, random_transforms
from compiler.lowering.rules.scalar_ops import supported_scalar_ops
from tests.docs.pages import DOCS, docs_generator


def _row(cls: type) -> str:
    """The start of ``cls``'s row: its name and its module."""
    return f"   * - ``{cls.__qualname__}``\n     - ``{cls.__module__}``\n"


def test_the_page_lists_every_lowering_rule_and_scalar_rule():
    text = docs_generator().supported_ops_rst()
    ops, scalars = supported_op_types(), supported_scalar_ops()
    assert len(ops) > 60 and len(scalars) > 60  # the registries were filled (compiler.nn's rules included)
    assert any(cls.__module__.startswith("compiler.nn") for cls in ops)
    for cls in ops:
        rule = find_rule(cls)
        family = text.index(f".. rubric:: ``{rule.__module__.replace('.', '/')}.py``")
        row = text.index(f"{_row(cls)}     - ``{rule.__name__}``\n")
        assert family < row < text.index(".. rubric::", family + 1), cls  # in its rule module's table
    for cls in scalars:
        assert _row(cls) in text, cls
    assert f"holds {len(ops)} PyTensor ``Op`` classes and {len(scalars)} scalar ops" in text
    # each class once per table: the rows are the registries, nothing added
    assert text.count("\n   * - ``") == (len(ops) + len(scalars) + len(linalg.BLOCKWISE_RULES)
                                        + len(random_transforms.TRANSFORMS))


def test_the_batched_core_ops_and_distributions_are_listed():
    text = docs_generator().supported_ops_rst()
    assert len(linalg.BLOCKWISE_RULES) >= 1 and len(random_transforms.TRANSFORMS) == 35
    for cls in [*linalg.BLOCKWISE_RULES, *random_transforms.TRANSFORMS]:
        assert _row(cls) in text, cls


def test_the_page_is_the_generated_table():
    page = (DOCS / "supported-ops.md").read_text()
    assert "```{eval-rst}\n.. supported-ops::\n```" in page
