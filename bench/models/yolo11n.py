"""A YOLO11n-class detector, written once and built two ways: as a PyTensor
graph from ``compiler.nn`` helpers and as a PyTorch ``nn.Module`` twin with
the same weights.

The architecture follows Ultralytics' ``yolo11.yaml`` at scale ``n`` (depth
0.50, width 0.25, max channels 1024; Ultralytics 8.3 ``nn/modules``), with
80 classes, batch 1 and a 320x320 float32 input:

    backbone  Conv(16,3,2) Conv(32,3,2) C3k2(64,e=0.25) Conv(64,3,2)
              C3k2(128,e=0.25) Conv(128,3,2) C3k2(128,c3k) Conv(256,3,2)
              C3k2(256,c3k) SPPF(256,5) C2PSA(256)
    head      Upsample(2x nearest) Concat C3k2(128) Upsample Concat C3k2(64)
              Conv(64,3,2) Concat C3k2(128) Conv(128,3,2) Concat C3k2(256,c3k)
              Detect(P3/8, P4/16, P5/32; reg_max 16, DFL, anchors, sigmoid)

``Conv`` is Conv2d (no bias) + BatchNorm (eps 1e-3, inference statistics) +
SiLU; ``C3k2``/``C3k``/``Bottleneck``/``SPPF``/``C2PSA``/``PSABlock``/
``Attention``/``Detect``/``DFL`` compute what Ultralytics' modules of those
names compute in eval mode. The output is (1, 84, 2100): box centre and size
in pixels (4 rows) and the 80 class probabilities, for 40x40 + 20x20 + 10x10
anchors.

Differences from Ultralytics (none changes the operator mix):

- Weights are random (a seeded normal scaled by ``1/sqrt(fan_in)``; batch-norm
  statistics and affine parameters random around 0 and 1), not trained.
- BatchNorm is kept unfused in the graphs: ``compile_to_onnx`` folds it into
  the conv (``batchnorm-folding``) and onnxruntime fuses Conv + BatchNormalization
  in the torch export; Ultralytics fuses it in PyTorch before export.
- ``chunk``/``split`` are channel slices, ``view`` is ``reshape``; the
  anchors and strides are constants computed for 320x320 (Ultralytics
  computes them from the feature shapes at run time, constant-folded by its
  exporter alike).

``build_pytensor(seed)`` returns the PyTensor input and output with weights
as shared variables named like Ultralytics' ``state_dict`` keys;
``build_torch(seed)`` returns the twin (imports torch, which is optional:
the ``bench`` extra). ``weights(seed)`` is the dict both use.
"""

from __future__ import annotations

import math
import numpy as np

IMAGE_SIZE = 320
NUM_CLASSES = 80
REG_MAX = 16
STRIDES = (8, 16, 32)
BN_EPS = 1e-3
INPUT_SHAPE = (1, 3, IMAGE_SIZE, IMAGE_SIZE)


def input_shape(image_size: int = IMAGE_SIZE) -> tuple[int, int, int, int]:
    """The (1, 3, size, size) input shape; ``size`` a multiple of 32."""
    if image_size % 32 or image_size < 32:
        raise ValueError(f"image_size must be a positive multiple of 32, got {image_size}")
    return (1, 3, image_size, image_size)


class _Weights:
    """Named float32 weights drawn in call order from one seeded generator,
    so that walking the architecture once fills the dict every build reads."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.values: dict[str, np.ndarray] = {}

    def conv(self, name: str, cout: int, cin_per_group: int, k: int, bias: bool):
        fan_in = cin_per_group * k * k
        self.values[f"{name}.weight"] = (self.rng.standard_normal((cout, cin_per_group, k, k))
                                         / math.sqrt(fan_in)).astype(np.float32)
        if bias:
            self.values[f"{name}.bias"] = (0.1 * self.rng.standard_normal(cout)).astype(np.float32)

    def bn(self, name: str, c: int):
        r = self.rng
        self.values[f"{name}.weight"] = r.uniform(0.7, 1.3, c).astype(np.float32)
        self.values[f"{name}.bias"] = (0.1 * r.standard_normal(c)).astype(np.float32)
        self.values[f"{name}.running_mean"] = (0.1 * r.standard_normal(c)).astype(np.float32)
        self.values[f"{name}.running_var"] = r.uniform(0.5, 1.5, c).astype(np.float32)


class _Ops:
    """The primitive operations the architecture is written in; subclassed
    per framework. ``p(name)`` returns the framework's value of a weight."""

    def p(self, name): raise NotImplementedError
    def conv(self, x, w, b, stride, padding, groups): raise NotImplementedError
    def bn(self, x, prefix): raise NotImplementedError
    def silu(self, x): raise NotImplementedError
    def sigmoid(self, x): raise NotImplementedError
    def softmax(self, x, axis): raise NotImplementedError
    def cat(self, xs, axis): raise NotImplementedError
    def max_pool(self, x, k, padding): raise NotImplementedError
    def upsample2x(self, x): raise NotImplementedError
    def permute(self, x, axes): raise NotImplementedError
    def const(self, array): raise NotImplementedError


class _Arch:
    """YOLO11n written against an ``_Ops``. Tensors travel as ``(value,
    shape)`` pairs so reshapes stay static; with ``ops=None`` and
    ``weights`` set, values are None and the walk only draws the weights."""

    def __init__(self, ops: _Ops | None, weights: _Weights | None, image_size: int = IMAGE_SIZE):
        self.ops = ops
        self.draw = weights  # drawing pass when set
        self.shape = input_shape(image_size)

    # ---- Ultralytics modules -------------------------------------------
    def conv(self, x, name, cout, k=1, s=1, g=1, act=True, bias=False, bn=True):
        value, shape = x
        cin = shape[1]
        if self.draw is not None:
            self.draw.conv(f"{name}.conv" if bn else name, cout, cin // g, k, bias)
            if bn:
                self.draw.bn(f"{name}.bn", cout)
        oh = (shape[2] + 2 * (k // 2) - k) // s + 1
        ow = (shape[3] + 2 * (k // 2) - k) // s + 1
        out_shape = (shape[0], cout, oh, ow)
        if value is None:
            return None, out_shape
        o = self.ops
        wname = f"{name}.conv" if bn else name
        y = o.conv(value, o.p(f"{wname}.weight"), o.p(f"{wname}.bias") if bias else None, s, k // 2, g)
        if bn:
            y = o.bn(y, f"{name}.bn")
        if act:
            y = o.silu(y)
        return y, out_shape

    def add(self, a, b):
        return (None if a[0] is None else a[0] + b[0]), a[1]

    def split(self, x, sizes):
        value, shape = x
        out, start = [], 0
        for n in sizes:
            s = (shape[0], n) + shape[2:]
            out.append((None if value is None else value[:, start:start + n], s))
            start += n
        return out

    def cat(self, xs):
        shape = (xs[0][1][0], sum(x[1][1] for x in xs)) + xs[0][1][2:]
        if xs[0][0] is None:
            return None, shape
        return self.ops.cat([x[0] for x in xs], 1), shape

    def bottleneck(self, x, name, c2, shortcut, k=(3, 3), e=0.5):
        c_ = int(c2 * e)
        y = self.conv(self.conv(x, f"{name}.cv1", c_, k[0]), f"{name}.cv2", c2, k[1])
        return self.add(x, y) if shortcut and x[1][1] == c2 else y

    def c3k(self, x, name, c2, n=2, shortcut=True, e=0.5, k=3):
        c_ = int(c2 * e)
        a = self.conv(x, f"{name}.cv1", c_)
        for i in range(n):
            a = self.bottleneck(a, f"{name}.m.{i}", c_, shortcut, (k, k), 1.0)
        b = self.conv(x, f"{name}.cv2", c_)
        return self.conv(self.cat([a, b]), f"{name}.cv3", c2)

    def c3k2(self, x, name, c2, n=1, c3k=False, e=0.5, shortcut=True):
        c = int(c2 * e)
        y = self.split(self.conv(x, f"{name}.cv1", 2 * c), (c, c))
        for i in range(n):
            m = f"{name}.m.{i}"
            y.append(self.c3k(y[-1], m, c, 2, shortcut) if c3k else self.bottleneck(y[-1], m, c, shortcut))
        return self.conv(self.cat(y), f"{name}.cv2", c2)

    def sppf(self, x, name, c2, k=5):
        c_ = x[1][1] // 2
        y = [self.conv(x, f"{name}.cv1", c_)]
        for _ in range(3):
            v, s = y[-1]
            y.append((None if v is None else self.ops.max_pool(v, k, k // 2), s))
        return self.conv(self.cat(y), f"{name}.cv2", c2)

    def attention(self, x, name, num_heads, attn_ratio=0.5):
        _, (b, c, h, w) = x
        head_dim = c // num_heads
        key_dim = int(head_dim * attn_ratio)
        nh_kd = key_dim * num_heads
        qkv = self.conv(x, f"{name}.qkv", c + 2 * nh_kd, act=False)
        n = h * w
        if qkv[0] is None:
            self.conv(x, f"{name}.proj", c, act=False)
            self.conv((None, (b, c, h, w)), f"{name}.pe", c, 3, g=c, act=False)
            return None, (b, c, h, w)
        o = self.ops
        t = qkv[0].reshape((b, num_heads, 2 * key_dim + head_dim, n))
        q, k, v = t[:, :, :key_dim], t[:, :, key_dim:2 * key_dim], t[:, :, 2 * key_dim:]
        attn = o.permute(q, (0, 1, 3, 2)) @ k * np.float32(key_dim ** -0.5)
        attn = o.softmax(attn, -1)
        y = (v @ o.permute(attn, (0, 1, 3, 2))).reshape((b, c, h, w))
        pe = self.conv((v.reshape((b, c, h, w)), (b, c, h, w)), f"{name}.pe", c, 3, g=c, act=False)
        return self.conv((y + pe[0], (b, c, h, w)), f"{name}.proj", c, act=False)

    def psa_block(self, x, name, num_heads):
        c = x[1][1]
        x = self.add(x, self.attention(x, f"{name}.attn", num_heads))
        f = self.conv(self.conv(x, f"{name}.ffn.0", 2 * c), f"{name}.ffn.1", c, act=False)
        return self.add(x, f)

    def c2psa(self, x, name, c2, n=1, e=0.5):
        c = int(c2 * e)
        a, b = self.split(self.conv(x, f"{name}.cv1", 2 * c), (c, c))
        for i in range(n):
            b = self.psa_block(b, f"{name}.m.{i}", c // 64)
        return self.conv(self.cat([a, b]), f"{name}.cv2", c2)

    def upsample(self, x):
        v, (b, c, h, w) = x
        return (None if v is None else self.ops.upsample2x(v)), (b, c, 2 * h, 2 * w)

    def detect(self, feats, name):
        ch = [f[1][1] for f in feats]
        c2 = max(16, ch[0] // 4, REG_MAX * 4)
        c3 = max(ch[0], min(NUM_CLASSES, 100))
        outs = []
        for i, x in enumerate(feats):
            box = self.conv(self.conv(x, f"{name}.cv2.{i}.0", c2, 3), f"{name}.cv2.{i}.1", c2, 3)
            box = self.conv(box, f"{name}.cv2.{i}.2", 4 * REG_MAX, bn=False, act=False, bias=True)
            cx = x[1][1]
            cls = self.conv(self.conv(x, f"{name}.cv3.{i}.0.0", cx, 3, g=cx), f"{name}.cv3.{i}.0.1", c3)
            cls = self.conv(self.conv(cls, f"{name}.cv3.{i}.1.0", c3, 3, g=c3), f"{name}.cv3.{i}.1.1", c3)
            cls = self.conv(cls, f"{name}.cv3.{i}.2", NUM_CLASSES, bn=False, act=False, bias=True)
            outs.append(self.cat([box, cls]))
        no = NUM_CLASSES + 4 * REG_MAX
        anchors, strides = make_anchors([o[1][2:] for o in outs])
        a = anchors.shape[1]
        if outs[0][0] is None:
            return None, (1, 4 + NUM_CLASSES, a)
        o = self.ops
        x_cat = o.cat([v.reshape((1, no, s[2] * s[3])) for v, s in outs], 2)
        box, cls = x_cat[:, :4 * REG_MAX], x_cat[:, 4 * REG_MAX:]
        # DFL: expected value of a softmax over 16 bins, as a 1x1 conv with weights 0..15
        d = o.softmax(o.permute(box.reshape((1, 4, REG_MAX, a)), (0, 2, 1, 3)), 1)
        d = o.conv(d, o.const(np.arange(REG_MAX, dtype=np.float32).reshape(1, REG_MAX, 1, 1)),
                   None, 1, 0, 1).reshape((1, 4, a))
        lt, rb = d[:, :2], d[:, 2:]
        anchor = o.const(anchors[None])
        x1y1, x2y2 = anchor - lt, anchor + rb
        dbox = o.cat([(x1y1 + x2y2) / np.float32(2), x2y2 - x1y1], 1) * o.const(strides[None])
        return o.cat([dbox, o.sigmoid(cls)], 1), (1, 4 + NUM_CLASSES, a)

    # ---- the network -------------------------------------------------------
    def __call__(self, images):
        x = self.conv((images, self.shape), "model.0", 16, 3, 2)
        x = self.conv(x, "model.1", 32, 3, 2)
        x = self.c3k2(x, "model.2", 64, e=0.25, c3k=False)
        p3 = x = self.c3k2(self.conv(x, "model.3", 64, 3, 2), "model.4", 128, e=0.25, c3k=False)
        p4 = x = self.c3k2(self.conv(x, "model.5", 128, 3, 2), "model.6", 128, c3k=True)
        x = self.c3k2(self.conv(x, "model.7", 256, 3, 2), "model.8", 256, c3k=True)
        x = self.sppf(x, "model.9", 256)
        p5 = x = self.c2psa(x, "model.10", 256)
        x = self.c3k2(self.cat([self.upsample(x), p4]), "model.13", 128, c3k=False)
        h4 = x
        x = self.c3k2(self.cat([self.upsample(x), p3]), "model.16", 64, c3k=False)
        h3 = x
        x = self.c3k2(self.cat([self.conv(x, "model.17", 64, 3, 2), h4]), "model.19", 128, c3k=False)
        h4b = x
        x = self.c3k2(self.cat([self.conv(x, "model.20", 128, 3, 2), p5]), "model.22", 256, c3k=True)
        return self.detect([h3, h4b, x], "model.23")[0]


def make_anchors(sizes, offset: float = 0.5):
    """Anchor centres (2, A) in grid units and strides (1, A), float32, for
    feature maps of the given (H, W) sizes and ``STRIDES`` (Ultralytics
    ``make_anchors``)."""
    points, strides = [], []
    for (h, w), s in zip(sizes, STRIDES):
        sy, sx = np.meshgrid(np.arange(h) + offset, np.arange(w) + offset, indexing="ij")
        points.append(np.stack([sx, sy], -1).reshape(-1, 2))
        strides.append(np.full(h * w, s))
    return (np.concatenate(points).T.astype(np.float32),
            np.concatenate(strides)[None].astype(np.float32))


def weights(seed: int = 0) -> dict[str, np.ndarray]:
    """The model's weights: name (Ultralytics ``state_dict`` style) -> float32
    array, drawn from ``seed``."""
    w = _Weights(seed)
    _Arch(None, w)(None)
    return w.values


class _PyTensorOps(_Ops):
    def __init__(self, params: dict):
        import pytensor.tensor as pt

        from compiler import nn
        self.pt, self.nn, self.params = pt, nn, params

    def p(self, name):
        return self.params[name]

    def conv(self, x, w, b, stride, padding, groups):
        return self.nn.conv2d(x, w, b, stride=stride, padding=padding, groups=groups)

    def bn(self, x, prefix):
        p = self.params
        return self.nn.batch_norm(x, p[f"{prefix}.weight"], p[f"{prefix}.bias"], p[f"{prefix}.running_mean"],
                                  p[f"{prefix}.running_var"], eps=BN_EPS)

    def silu(self, x):
        return self.nn.silu(x)

    def sigmoid(self, x):
        return self.pt.sigmoid(x)

    def softmax(self, x, axis):
        return self.pt.special.softmax(x, axis=axis)

    def cat(self, xs, axis):
        return self.pt.concatenate(xs, axis=axis)

    def max_pool(self, x, k, padding):
        return self.nn.max_pool2d(x, k, stride=1, padding=padding)

    def upsample2x(self, x):
        return self.nn.upsample_nearest2d(x, 2)

    def permute(self, x, axes):
        return x.transpose(axes)

    def const(self, array):
        return self.pt.constant(array)


def build_pytensor(seed: int = 0, image_size: int = IMAGE_SIZE):
    """The detector as a PyTensor graph from ``compiler.nn`` helpers.

    Args:
        seed: weight seed (``weights(seed)``).
        image_size: input side, a multiple of 32 (320 by default).

    Returns:
        ``(images, output, params)``: the input variable ``images``
        (1, 3, size, size) float32, the output (1, 84, A) with
        ``A = 21 * (size / 32) ** 2`` anchors (2100 at 320) and the dict of
        shared weight variables (named by their keys).

    Raises:
        ValueError: ``image_size`` not a positive multiple of 32.
    """
    import pytensor
    import pytensor.tensor as pt

    params = {k: pytensor.shared(v, name=k) for k, v in weights(seed).items()}
    images = pt.tensor("images", dtype="float32", shape=input_shape(image_size))
    return images, _Arch(_PyTensorOps(params), None, image_size)(images), params


def build_torch(seed: int = 0, image_size: int = IMAGE_SIZE):
    """The PyTorch twin: an ``nn.Module`` in eval mode with the weights of
    ``weights(seed)`` as parameters/buffers (names with ``__`` for ``.``);
    ``module(images)`` on (1, 3, size, size) float32 returns the (1, 84, A)
    output of ``build_pytensor``. Imports torch (the ``bench`` extra)."""
    import torch
    import torch.nn.functional as F

    class _TorchOps(_Ops):
        def __init__(self, module):
            self.m = module

        def p(self, name):
            return self.m.get_parameter(name.replace(".", "__"))

        def conv(self, x, w, b, stride, padding, groups):
            return F.conv2d(x, w, b, stride=stride, padding=padding, groups=groups)

        def bn(self, x, prefix):
            g = self.m.get_parameter
            k = prefix.replace(".", "__")
            return F.batch_norm(x, self.m.get_buffer(f"{k}__running_mean"), self.m.get_buffer(f"{k}__running_var"),
                                g(f"{k}__weight"), g(f"{k}__bias"), training=False, eps=BN_EPS)

        def silu(self, x):
            return F.silu(x)

        def sigmoid(self, x):
            return torch.sigmoid(x)

        def softmax(self, x, axis):
            return x.softmax(axis)

        def cat(self, xs, axis):
            return torch.cat(xs, axis)

        def max_pool(self, x, k, padding):
            return F.max_pool2d(x, k, stride=1, padding=padding)

        def upsample2x(self, x):
            return F.interpolate(x, scale_factor=2.0, mode="nearest")

        def permute(self, x, axes):
            return x.permute(axes)

        def const(self, array):
            return torch.from_numpy(np.ascontiguousarray(array))

    class Yolo11n(torch.nn.Module):
        """YOLO11n-class detector (see ``bench.models.yolo11n``)."""

        def __init__(self, values: dict[str, np.ndarray]):
            super().__init__()
            self.image_size = image_size
            for name, v in values.items():
                key = name.replace(".", "__")
                t = torch.from_numpy(v.copy())
                if name.endswith(("running_mean", "running_var")):
                    self.register_buffer(key, t)
                else:
                    self.register_parameter(key, torch.nn.Parameter(t, requires_grad=False))

        def forward(self, images):
            return _Arch(_TorchOps(self), None, self.image_size)(images)

    return Yolo11n(weights(seed)).eval()

