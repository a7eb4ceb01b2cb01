"""Session fixtures: the acceptance models compiled once per mode."""

from __future__ import annotations

import pytest

from tests.control_flow.helpers import C_MODE, Bundle


@pytest.fixture(scope="session")
def default() -> Bundle:
    """Every model compiled in the default mode (Numba in PyTensor 3, C in 2.38)."""
    return Bundle(None)


@pytest.fixture(scope="session")
def c_mode() -> Bundle:
    """Every model compiled in C mode (the CVM linker with fast_run rewrites)."""
    return Bundle(C_MODE)
