"""The documentation's generated parts, as text (no Sphinx needed: the
tests read them in both PyTensor lines); ``pytensor_onnx_docs`` puts them
into the pages.

- ``supported_ops_rst()`` (the directive ``.. supported-ops::`` of
  ``supported-ops.md``, in an ``eval-rst`` block): every lowering the
  registries hold, read from them at build time
  (``compiler.lowering.registry.supported_op_types``, ``rules.scalar_ops.
  supported_scalar_ops``, ``rules.linalg.BLOCKWISE_RULES``, the random
  distributions of ``rules.random_transforms``), with ``compiler.nn`` imported so that
  its rules are registered too; ``tests/docs/test_supported_ops.py`` checks
  it names every entry.
- ``cli_help_texts()`` (``.. cli-help::`` of ``cli.md``): the ``--help`` of
  the console script and of each subcommand, from
  ``compiler.tools.cli.build_parser``.
"""

from __future__ import annotations

import argparse
import inspect
import re



def _summary(obj) -> str:
    """The first paragraph of ``obj``'s docstring on one line, or '', as
    reStructuredText: ````literals```` kept, other markup characters escaped
    (docstrings write ``*args`` and ``x_`` as plain text)."""
    doc = " ".join((inspect.getdoc(obj) or "").split("\n\n")[0].split())
    parts = re.split(r"(``.+?``)", doc)
    return "".join(part if i % 2 else re.sub(r"([\\*`|_])", r"\\\1", part) for i, part in enumerate(parts))


def _table(title: str, header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    widths = {4: "15 20 20 45", 2: "30 70"}.get(len(header), "100")
    lines = [f".. list-table:: {title}", "   :header-rows: 1", f"   :widths: {widths}", ""]
    for row in [header, *rows]:
        lines.append(f"   * - {row[0]}")
        lines.extend(f"     - {cell}" for cell in row[1:])
    return [*lines, ""]


def _family(module: str) -> str:
    """The file of a rule's module, as the page names it
    (``compiler/lowering/rules/linalg.py``)."""
    return module.replace(".", "/") + ".py"


def _op_rows(table: dict) -> list[tuple[str, ...]]:
    """One row per op class: its name, its module, the rule's name and summary."""
    return sorted((f"``{cls.__qualname__}``", f"``{cls.__module__}``", f"``{rule.__name__}``", _summary(rule))
                  for cls, rule in table.items())


def supported_ops_rst() -> str:
    """The generated part of the supported-ops page (reStructuredText): the
    lowering rules as one table per rule module (each row an op class, its
    module, the rule function and the first paragraph of its docstring), the
    scalar rules, the batched core ops and the random distributions."""
    import compiler  # noqa: F401 - registers every lowering rule
    import compiler.nn  # noqa: F401 - registers the building blocks' rules
    from compiler.lowering import find_rule, supported_op_types
    from compiler.lowering.rules import linalg, random_transforms
    from compiler.lowering.rules.scalar_ops import _SCALAR_RULES

    rules = {cls: find_rule(cls) for cls in supported_op_types()}
    out = [f"The registry holds {len(rules)} PyTensor ``Op`` classes and {len(_SCALAR_RULES)} scalar ops "
           "(generated from the registries when this page was built). A rule covers the subclasses of its "
           "class (inplace variants, ...) unless they have their own.", ""]
    header = ("Op", "from", "rule", "what it does")
    for module in sorted({rule.__module__ for rule in rules.values()}):
        family = {cls: rule for cls, rule in rules.items() if rule.__module__ == module}
        out += [f".. rubric:: ``{_family(module)}``", ""]
        out += _table(f"{len(family)} op{'s' if len(family) > 1 else ''}", header, _op_rows(family))
    out += [".. rubric:: Scalar ops", "",
            "Inside ``Elemwise`` and fused ``Composite`` ops (``@scalar_rule``, "
            "``compiler/lowering/rules/scalar_ops.py``):", ""]
    out += _table("PyTensor ``ScalarOp`` classes with a scalar rule", header, _op_rows(_SCALAR_RULES))
    out += [".. rubric:: Batched core ops", "",
            "``Blockwise`` core ops with a rule of their own (any other core op with a lowering runs as a "
            "loop over the batch):", ""]
    out += _table("Core ops of ``Blockwise`` with their own rule", ("core op", "from"),
                  sorted((f"``{cls.__qualname__}``", f"``{cls.__module__}``") for cls in linalg.BLOCKWISE_RULES))
    out += [".. rubric:: Random distributions", "",
            "Under ``random=\"inputs\"`` or ``\"onnx\"`` (``compiler/lowering/rules/random_transforms.py``):", ""]
    out += _table("Random variables with an exact noise transform", ("RandomVariable", "from"),
                  sorted((f"``{cls.__qualname__}``", f"``{cls.__module__}``") for cls in random_transforms.TRANSFORMS))
    return "\n".join(out)


def _parser() -> argparse.ArgumentParser:
    from compiler.tools.cli import build_parser

    return build_parser()


def cli_help_texts() -> list[tuple[str, str]]:
    """``[(command, help text)]``: the console script's ``--help`` and each
    subcommand's, as argparse prints them (88 columns)."""
    import os

    os.environ["COLUMNS"] = "88"
    parser = _parser()
    out = [("pytensor-onnx", parser.format_help())]
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    out += [(f"pytensor-onnx {name}", p.format_help()) for name, p in sub.choices.items()]
    return out
