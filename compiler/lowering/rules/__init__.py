"""Lowering rules, one module per PyTensor op family. Each module registers
its rules with ``@lowers`` when imported here."""

import importlib
import pkgutil

for _mod in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_mod.name}")
