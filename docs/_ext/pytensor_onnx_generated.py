"""The documentation's generated parts, as text (no Sphinx needed: the
tests read them in both PyTensor lines); ``pytensor_onnx_docs`` puts them
into the pages.

- ``supported_ops_rst()`` (the directive ``.. supported-ops::`` of
  ``supported-ops.md``, in an ``eval-rst`` block): every lowering the
  registries hold, read from them at build time
  (``compiler.lowering.registry.supported_op_types``, ``rules.scalar_ops.
  supported_scalar_ops``, ``rules.linalg.BLOCKWISE_RULES``, the random
  distributions of ``rules.random``), with ``compiler.nn`` imported so that
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


def _class_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _table(title: str, header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    lines = [f".. list-table:: {title}", "   :header-rows: 1", "   :widths: auto", ""]
    for row in [header, *rows]:
        lines.append(f"   * - {row[0]}")
        lines.extend(f"     - {cell}" for cell in row[1:])
    return [*lines, ""]


def supported_ops_rst() -> str:
    """The generated part of the supported-ops page (reStructuredText): one
    table per registry, each row an op class (module and name), the rule's
    module and function, and the first paragraph of its docstring."""
    import compiler  # noqa: F401 - registers every lowering rule
    import compiler.nn  # noqa: F401 - registers the building blocks' rules
    from compiler.lowering import find_rule, supported_op_types
    from compiler.lowering.rules import linalg, random
    from compiler.lowering.rules.scalar_ops import NO_CLOSED_FORM, _SCALAR_RULES

    def rows(table: dict) -> list[tuple[str, ...]]:
        return sorted((f"``{_class_name(cls)}``", f"``{rule.__module__}.{rule.__name__}``", _summary(rule))
                      for cls, rule in table.items())

    rules = {cls: find_rule(cls) for cls in supported_op_types()}
    out = [f"The registry holds {len(rules)} PyTensor ``Op`` classes and {len(_SCALAR_RULES)} scalar ops "
           "(generated from the registries when this page was built).", ""]
    out += [".. rubric:: Ops", ""]
    out += _table("PyTensor ``Op`` classes with a lowering rule (``@lowers``; subclasses use their base's rule)",
                  ("Op", "rule", "what it does"), rows(rules))
    out += [".. rubric:: Scalar ops", "",
            "Inside ``Elemwise`` and fused ``Composite`` ops (``@scalar_rule``):", ""]
    out += _table("PyTensor ``ScalarOp`` classes with a scalar rule", ("scalar op", "rule", "what it does"),
                  rows(_SCALAR_RULES))
    out += [".. rubric:: Batched core ops", "",
            "``Blockwise`` core ops with a rule of their own (any other core op with a lowering runs as a "
            "loop over the batch):", ""]
    out += _table("Core ops of ``Blockwise`` with their own rule", ("core op",),
                  sorted((f"``{_class_name(cls)}``",) for cls in linalg.BLOCKWISE_RULES))
    out += [".. rubric:: Random distributions", "",
            "Under ``random=\"inputs\"`` or ``\"onnx\"`` (``compiler/lowering/rules/random.py``):", ""]
    out += _table("Random variables with an exact noise transform", ("RandomVariable",),
                  sorted((f"``{_class_name(cls)}``",) for cls in random._TRANSFORMS))
    out += [".. rubric:: Special functions left unsupported", ""]
    out += _table("Scalar ops the error names, with its reason", ("scalar op", "reason"),
                  sorted((f"``{name}``", reason) for name, reason in NO_CLOSED_FORM.items()))
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
