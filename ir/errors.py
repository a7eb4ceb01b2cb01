"""The error hierarchy of pytensor-onnx, rooted here so every layer (IR,
passes, emitter, PyTensor front end) raises a subclass of one base:

    CompileError
    ├── OpError              a node's inputs or attributes break its op's rules (ir.ops)
    ├── IRParseError         IR text that does not parse (ir.parser)
    ├── VerificationError    IR that breaks an invariant (ir.verifier)
    ├── ShapeInferenceError  a type rule contradicts a declared dim (passes.shape_inference)
    ├── PassOrderError       a pass list breaks a pass's ``after`` contract (passes.base)
    ├── EmitError            IR with no exact ONNX form (backends.onnx.registry)
    ├── UnsupportedOpsError  PyTensor ops without a lowering, all at once (compiler.lowering.errors)
    ├── LoweringError        a lowering rule disagrees with PyTensor's types (compiler.lowering.errors)
    ├── InputShapeError      input_shapes/example_inputs contradict the graph (compiler.core.shapes)
    ├── DynamicShapeError    check_dynamic found a wrong symbolic dim (compiler.core.shapes)
    └── PassCheckError       a pass changed the interpreter's results (compiler.core.pass_check)

Errors that were ``ValueError`` (or ``AssertionError``) before the hierarchy
existed still are, so ``except ValueError`` keeps working.
"""

from __future__ import annotations

from typing import Any


class CompileError(Exception):
    """Base class of every error raised while compiling a graph to ONNX: bad
    input, an unsupported op, or (a bug) IR that breaks an invariant."""


class OpError(CompileError, ValueError):
    """A node's inputs or attributes do not satisfy its op's rules."""


class IRParseError(CompileError, ValueError):
    """The text is not valid IR. The message gives ``line:column``, the
    offending line and a caret under the position.

    Attributes:
        line, column: 1-based position of the error.
    """

    def __init__(self, message: str, line: int, column: int):
        super().__init__(message)
        self.line = line
        self.column = column


class VerificationError(CompileError, ValueError):
    """The IR breaks an invariant. The message names the failing node or value
    and shows the printed IR around it.

    Attributes:
        anchor: the failing ``Node``, ``Value`` or ``Graph`` (None if unknown).
    """

    def __init__(self, message: str, anchor: Any = None):
        super().__init__(message)
        self.anchor = anchor


class ShapeInferenceError(CompileError, ValueError):
    """A type rule contradicts a declared static dim or rejects the inputs
    once their shapes are known. The message names the value, the declared
    and the inferred types, and shows the node's line of IR.

    Attributes:
        node: the failing ``Node``.
    """

    def __init__(self, message: str, node: Any):
        super().__init__(message)
        self.node = node


class EmitError(CompileError, ValueError):
    """The IR graph cannot be emitted as ONNX: an op has no rule, or a rule
    has no exact ONNX form for the given dtype (the message names both)."""


class PassOrderError(CompileError, ValueError):
    """A pass list runs a pass before one it must follow (``Pass.after``).

    Attributes:
        pass_name: the pass that runs too early.
        must_follow: the pass it must run after.
    """

    def __init__(self, message: str, pass_name: str, must_follow: str):
        super().__init__(message)
        self.pass_name = pass_name
        self.must_follow = must_follow
