"""The ``pytensor-onnx`` console script's entry point, outside the
``compiler`` package: importing ``compiler`` loads PyTensor and the whole
compile path (and registers the PyTensor mode "ONNX"), seconds that
``--help``, ``--version`` and a usage error should not pay. ``main`` loads
``compiler/tools/cli.py`` (standard library imports only) by its path; each
subcommand then imports what it needs, the ``compiler`` package included.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``compiler.tools.cli.main(argv)`` (see there) and return its exit
    status; the module is the one already imported if any."""
    cli = sys.modules.get("compiler.tools.cli")
    if cli is None:
        path = Path(__file__).resolve().parent / "compiler" / "tools" / "cli.py"
        spec = importlib.util.spec_from_file_location("pytensor_onnx_cli._cli", path)
        cli = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(cli)
    return cli.main(argv)


if __name__ == "__main__":
    sys.exit(main())
