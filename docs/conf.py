"""Sphinx configuration of the pytensor-onnx documentation (PyData theme,
as PyTensor and PyMC use). Build: ``python -m sphinx -W --keep-going -b html
docs docs/_build/html`` (``.ci/run``'s docs step); the ``docs`` extra
installs what it needs."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the checkout's compiler, not an installed copy
sys.path.insert(0, str(Path(__file__).resolve().parent / "_ext"))

project = "pytensor-onnx"
author = "the pytensor-onnx developers"
copyright = "the pytensor-onnx developers"

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",  # the docstrings' "Raises:" / "Attributes:" sections
    "myst_parser",
    "pytensor_onnx_docs",  # the generated pages: supported ops, CLI help
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build"]
myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3

autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
# compiler.pymc_model imports PyMC, which pins PyTensor 2.38: the docs build (3.0 venv) reads it without
autodoc_mock_imports = ["pymc"]
autodoc_typehints = "description"
autosummary_generate = False
napoleon_google_docstring = True
napoleon_numpy_docstring = False
# CompileOptions groups its fields under these headings: each reads like "Args:"
napoleon_custom_sections = [(h, "params_style") for h in (
    "What the model computes", "Shapes", "The ONNX model", "Debugging (each costs only when asked)")]

html_theme = "pydata_sphinx_theme"
html_title = "pytensor-onnx"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": {"**": ["page-toc", "sourcelink"], "supported-ops": []},  # its tables are wide
}
html_static_path = []
