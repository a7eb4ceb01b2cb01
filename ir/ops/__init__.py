"""IR op definitions, by family. Importing this package registers them all.

Use ``get_op(name)`` for an op's ``OpDef`` and ``all_ops()`` for the table.
"""

from ir.opdef import ATTR_KINDS, REQUIRED, Attr, OpDef, OpError, all_ops, get_op, register
from ir.ops import elementwise, reduction, shape, nn, control_flow, special, random  # noqa: F401  (registers the ops)

__all__ = ["ATTR_KINDS", "REQUIRED", "Attr", "OpDef", "OpError", "all_ops", "get_op", "register"]
