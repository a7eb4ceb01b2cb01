"""The Sphinx extension of the documentation: the directives that put the
generated parts (``pytensor_onnx_generated.py``) into the pages.

- ``.. supported-ops::``: the tables of ``pytensor_onnx_generated.supported_ops_rst``.
- ``.. cli-help::``: ``pytensor_onnx_generated.cli_help_texts``, one heading and block per
  command.
"""

from __future__ import annotations

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective

from pytensor_onnx_generated import cli_help_texts, supported_ops_rst


class SupportedOps(SphinxDirective):
    """``.. supported-ops::``: the tables of ``supported_ops_rst``."""

    def run(self):
        container = nodes.container()
        self.state.nested_parse(StringList(supported_ops_rst().splitlines(), source="<supported-ops>"),
                                self.content_offset, container)
        return container.children


class CliHelp(SphinxDirective):
    """``.. cli-help::``: per command a heading (rubric) and its ``--help`` text."""

    def run(self):
        result = []
        for command, text in cli_help_texts():
            result.append(nodes.rubric(text=command, ids=[nodes.make_id(command)]))
            result.append(nodes.literal_block(text, text, language="text"))
        return result


def setup(app):
    app.add_directive("supported-ops", SupportedOps)
    app.add_directive("cli-help", CliHelp)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
