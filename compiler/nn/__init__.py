"""Neural-network building blocks for PyTensor users.

Each helper builds an ordinary PyTensor graph, which PyTensor evaluates and
differentiates (``pytensor.grad``), so models train in PyTensor; the graph is
wrapped in an ``OpFromGraph`` subclass (``compiler.nn.base.NNOp``) naming the
operation and holding its parameters, which ``compile_to_onnx`` lowers to one
ONNX operator. Hand-written equivalents (``convolve2d`` plus ``sum``,
reshape-max pooling, ``maximum(x, 0)``, ...) reach the same operators through
the rewrite passes.

Layout is NCHW. ``conv2d`` is a cross-correlation (ONNX ``Conv``, PyTorch),
not the flipped convolution of ``pytensor.tensor.signal.convolve2d``.

Compile the raw graph (``compile_to_onnx([x], outputs=[y])``): a compiled
``pytensor.function`` has the helpers' graphs inlined (see ``NNOp``).
"""

from compiler.nn.activations import Gelu, Relu, Silu, gelu, relu, silu
from compiler.nn.base import NNOp
from compiler.nn.conv import Conv2d, conv2d
from compiler.nn.layers import (BatchNorm, Flatten, Linear, UpsampleNearest2d, batch_norm, dropout, flatten, linear,
                                upsample_nearest2d)
from compiler.nn.pool import (AvgPool2d, GlobalAvgPool2d, GlobalMaxPool2d, MaxPool2d, avg_pool2d, global_avg_pool2d,
                              global_max_pool2d, max_pool2d)
from compiler.nn import lowering as _lowering  # noqa: F401  registers the helpers' lowering rules

__all__ = [
    "conv2d", "max_pool2d", "avg_pool2d", "global_avg_pool2d", "global_max_pool2d", "batch_norm", "relu", "silu",
    "gelu", "upsample_nearest2d", "flatten", "linear", "dropout",
    "NNOp", "Conv2d", "MaxPool2d", "AvgPool2d", "GlobalAvgPool2d", "GlobalMaxPool2d", "BatchNorm", "Relu", "Silu",
    "Gelu", "UpsampleNearest2d", "Flatten", "Linear",
]
