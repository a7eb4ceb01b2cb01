"""The CLI page's help texts are the parser's, one per command."""

from __future__ import annotations

import argparse

from compiler.tools.cli import build_parser
from tests.docs.pages import DOCS, docs_generator


def test_the_cli_page_holds_every_commands_help():
    texts = dict(docs_generator().cli_help_texts())
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert len(sub.choices) >= 9
    assert set(texts) == {"pytensor-onnx", *(f"pytensor-onnx {name}" for name in sub.choices)}
    for name, parser in sub.choices.items():
        assert texts[f"pytensor-onnx {name}"].startswith(f"usage: pytensor-onnx {name} ")
    assert "```{cli-help}\n```" in (DOCS / "cli.md").read_text()
