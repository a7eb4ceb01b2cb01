"""The ``pytensor-onnx demo`` job: train a CNN (or an MLP) on real data in
PyTensor, compile its inference graph to ONNX, and check onnxruntime against
PyTensor.

The data is scikit-learn's bundled digits set (``sklearn.datasets.load_digits``:
1797 8x8 grey images of the digits 0-9, 17 grey levels, no download). Models:

- ``cnn`` (the default), built with ``compiler.nn``: conv 1->16 3x3 pad 1,
  relu, max pool 2, conv 16->32 3x3 pad 1, relu, max pool 2, flatten,
  dense 10, softmax. It compiles to Conv (with bias), Relu, MaxPool, Conv,
  Relu, MaxPool, Flatten, Gemm, Softmax.
- ``mlp``: ``softmax(relu(x @ W1 + b1) @ W2 + b2)`` on the 64 pixels of each
  image as one row, 64 hidden units, written with plain PyTensor
  (``maximum``, ``@``, ``+``): Gemm, Relu, Gemm, Softmax after the passes.

Both train with minibatch Adam (Kingma & Ba 2015, Algorithm 1) on the mean
cross-entropy; gradients come from ``pytensor.grad``. Everything is float32.

Each step is a function usable on its own (``load_digits_split``,
``train``, ``inference_graph``, ``run_demo``); ``compiler.tools.cli`` is a thin
wrapper around ``run_demo`` and ``format_report``.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from compiler import nn
from compiler.core.driver import compile_to_onnx

DEFAULT_MODEL = "cnn"
DEFAULT_EPOCHS = 10
DEFAULT_SEED = 0
# PyTensor's Python linker with the cheap rewrites: nothing is compiled to C
# or Numba, so a first run trains as fast as later ones (PyTensor's default
# mode compiles the training graph first, which takes minutes on a cold cache).
DEFAULT_MODE = "FAST_COMPILE"
BATCH_SIZE = 32
LEARNING_RATE = 0.01
IMAGE_SHAPE = (1, 8, 8)  # one channel of 8x8 pixels
N_CLASSES = 10


@dataclass(frozen=True)
class DigitsSplit:
    """The digits data, split 80/20 with stratification.

    Attributes:
        x_train, x_test: float32 ``(n, 1, 8, 8)`` images (NCHW), pixel
            intensities scaled to [0, 1].
        y_train, y_test: int64 ``(n,)`` class labels 0-9.
    """

    x_train: np.ndarray
    x_test: np.ndarray
    y_train: np.ndarray
    y_test: np.ndarray


def load_digits_split(seed: int = DEFAULT_SEED) -> DigitsSplit:
    """Load scikit-learn's digits and split them 80/20, stratified by label
    (``train_test_split(..., test_size=0.2, random_state=seed, stratify=y)``).

    Pixels (integers 0-16) are divided by 16 into float32 values in [0, 1].
    Returns a ``DigitsSplit`` (1437 train and 360 test images).
    """
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32).reshape((-1, *IMAGE_SHAPE))
    y = digits.target.astype(np.int64)
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.2, random_state=seed, stratify=y)
    return DigitsSplit(x_train, x_test, y_train, y_test)


# -- models ----------------------------------------------------------------
def _shared(values: dict) -> dict:
    import pytensor

    return {name: pytensor.shared(v, name=name) for name, v in values.items()}


def _uniform(rng: np.random.Generator, limit: float, shape: tuple) -> np.ndarray:
    return rng.uniform(-limit, limit, size=shape).astype(np.float32)


def init_cnn_params(seed: int) -> dict:
    """He-uniform conv kernels (limit ``sqrt(6 / fan_in)``, for ReLU), a
    Glorot-uniform dense layer (limit ``sqrt(6 / (fan_in + fan_out))``) and
    zero biases, as float32 shared variables: ``W1`` (16, 1, 3, 3), ``b1``
    (16,), ``W2`` (32, 16, 3, 3), ``b2`` (32,), ``W3`` (128, 10), ``b3`` (10,)."""
    rng = np.random.default_rng(seed)
    return _shared({
        "W1": _uniform(rng, np.sqrt(6 / 9), (16, 1, 3, 3)), "b1": np.zeros(16, np.float32),
        "W2": _uniform(rng, np.sqrt(6 / 144), (32, 16, 3, 3)), "b2": np.zeros(32, np.float32),
        "W3": _uniform(rng, np.sqrt(6 / 138), (128, N_CLASSES)), "b3": np.zeros(N_CLASSES, np.float32),
    })


def cnn_logits(x, params: dict):
    """The CNN's pre-softmax scores for a float32 ``(batch, 1, 8, 8)``
    PyTensor tensor ``x``: two blocks of conv 3x3 (padding 1), relu and
    2x2 max pooling (8x8 -> 4x4 -> 2x2), then flatten and a dense layer.
    Returns a ``(batch, 10)`` tensor."""
    h = nn.max_pool2d(nn.relu(nn.conv2d(x, params["W1"], params["b1"], padding=1)), 2)
    h = nn.max_pool2d(nn.relu(nn.conv2d(h, params["W2"], params["b2"], padding=1)), 2)
    return nn.linear(nn.flatten(h), params["W3"], params["b3"])


def init_mlp_params(seed: int, hidden: int = 64) -> dict:
    """Glorot-uniform weights and zero biases as float32 shared variables:
    ``W1`` (64, hidden), ``b1`` (hidden,), ``W2`` (hidden, 10), ``b2`` (10,)."""
    rng = np.random.default_rng(seed)
    n_in = int(np.prod(IMAGE_SHAPE))
    return _shared({
        "W1": _uniform(rng, np.sqrt(6 / (n_in + hidden)), (n_in, hidden)), "b1": np.zeros(hidden, np.float32),
        "W2": _uniform(rng, np.sqrt(6 / (hidden + N_CLASSES)), (hidden, N_CLASSES)),
        "b2": np.zeros(N_CLASSES, np.float32),
    })


def mlp_logits(x, params: dict):
    """The MLP's pre-softmax scores ``relu(x @ W1 + b1) @ W2 + b2`` (ReLU as
    ``maximum(h, 0)``) for a float32 ``(batch, 64)`` PyTensor matrix ``x``."""
    import pytensor.tensor as pt

    hidden = pt.maximum(x @ params["W1"] + params["b1"], 0)
    return hidden @ params["W2"] + params["b2"]


@dataclass(frozen=True)
class ModelSpec:
    """One demo model.

    Attributes:
        name, title: CLI name and printed title.
        input_shape: the shape of one example (the input is float32
            ``(batch, *input_shape)``, batch size free).
        init: ``seed -> dict`` of float32 shared variables.
        logits: ``(x, params) -> (batch, 10)`` scores.
        expected_ops: the ONNX op histogram the default pipeline makes of
            its inference graph (what a person would write).
        tolerance: max |p_onnxruntime - p_pytensor| accepted.
    """

    name: str
    title: str
    input_shape: tuple[int, ...]
    init: Callable[[int], dict]
    logits: Callable
    expected_ops: dict[str, int]
    tolerance: float

    @property
    def node_budget(self) -> int:
        return sum(self.expected_ops.values())

    def input(self, name: str = "x"):
        """The PyTensor input: float32 ``(batch, *input_shape)``, batch free."""
        import pytensor.tensor as pt

        return pt.tensor(name, dtype="float32", shape=(None, *self.input_shape))

    def examples(self, images: np.ndarray) -> np.ndarray:
        """``images`` (n, 1, 8, 8) in this model's input layout."""
        return images.reshape((-1, *self.input_shape))


MODELS: dict[str, ModelSpec] = {
    # Conv accumulates its products in another order than PyTensor's im2col
    # matrix product: float32 rounding, well inside the 1e-5.
    "cnn": ModelSpec("cnn", "digits CNN", IMAGE_SHAPE, init_cnn_params, cnn_logits,
                     {"Conv": 2, "Relu": 2, "MaxPool": 2, "Flatten": 1, "Gemm": 1, "Softmax": 1}, 1e-5),
    "mlp": ModelSpec("mlp", "digits MLP", (int(np.prod(IMAGE_SHAPE)),), init_mlp_params, mlp_logits,
                     {"Gemm": 2, "Relu": 1, "Softmax": 1}, 1e-6),
}


def model_spec(name: str) -> ModelSpec:
    """The ``ModelSpec`` called ``name``; ValueError lists the known ones."""
    try:
        return MODELS[name]
    except KeyError:
        raise ValueError(f"unknown model {name!r}; known: {', '.join(MODELS)}") from None


# -- training --------------------------------------------------------------
def adam_updates(params: list, grads: list, lr: float = LEARNING_RATE, beta1: float = 0.9,
                 beta2: float = 0.999, eps: float = 1e-8) -> list:
    """PyTensor update pairs for one Adam step (Kingma & Ba 2015, Algorithm 1,
    with bias-corrected moments), all in float32.

    Args:
        params: float32 shared variables.
        grads: their gradients (same shapes and dtypes).
        lr, beta1, beta2, eps: Adam's step size, moment decay rates and the
            denominator's epsilon.

    Returns:
        A list of ``(shared_variable, new_value)`` pairs for ``pytensor.function``:
        the step counter, both moments of every parameter, and the parameters.
    """
    import pytensor
    import pytensor.tensor as pt

    f32 = np.float32
    step = pytensor.shared(f32(0), name="adam_t")
    t = step + f32(1)
    # Bias corrections folded into the step size: the paper's efficient form (end of its Section 2).
    alpha = f32(lr) * pt.sqrt(f32(1) - f32(beta2) ** t) / (f32(1) - f32(beta1) ** t)
    updates = [(step, t)]
    for p, g in zip(params, grads, strict=True):
        m = pytensor.shared(np.zeros_like(p.get_value()), name=f"{p.name}_m")
        v = pytensor.shared(np.zeros_like(p.get_value()), name=f"{p.name}_v")
        m_new = f32(beta1) * m + f32(1 - beta1) * g
        v_new = f32(beta2) * v + f32(1 - beta2) * pt.sqr(g)
        updates += [(m, m_new), (v, v_new), (p, p - alpha * m_new / (pt.sqrt(v_new) + f32(eps)))]
    return updates


@dataclass
class TrainResult:
    """What ``train`` returns: the trained shared variables, the mean
    minibatch loss and the train accuracy after each epoch, and the wall
    time (PyTensor's compilation included)."""

    params: dict
    losses: list[float]
    train_accuracies: list[float]
    seconds: float


def train(data: DigitsSplit, model: str = DEFAULT_MODEL, epochs: int = DEFAULT_EPOCHS, seed: int = DEFAULT_SEED,
          batch_size: int = BATCH_SIZE, lr: float = LEARNING_RATE, mode: str | None = DEFAULT_MODE,
          log: Callable[[str], None] | None = print) -> TrainResult:
    """Train ``model`` (a name in ``MODELS``) on ``data.x_train`` with
    minibatch Adam on the mean cross-entropy ``-mean(log_softmax(logits)[i, y_i])``.

    Minibatches are drawn from a permutation of the training images each
    epoch (``np.random.default_rng(seed)``); the PyTensor functions are
    compiled in ``mode`` (None: PyTensor's default). ``log`` receives one
    progress line per epoch (epoch, mean loss, train accuracy); None is
    silent.

    Returns:
        A ``TrainResult``.

    Raises:
        ValueError: unknown model.
    """
    import pytensor
    import pytensor.tensor as pt
    from pytensor.tensor.special import log_softmax

    spec = model_spec(model)
    start = time.perf_counter()
    params = spec.init(seed)
    x = spec.input()
    y = pt.vector("y", dtype="int64")
    logits = spec.logits(x, params)
    loss = -pt.mean(log_softmax(logits, axis=-1)[pt.arange(y.shape[0]), y])
    shared = list(params.values())
    train_step = pytensor.function([x, y], loss, updates=adam_updates(shared, pytensor.grad(loss, shared), lr),
                                   mode=mode)
    predict = pytensor.function([x], pt.argmax(logits, axis=-1), mode=mode)

    rng = np.random.default_rng(seed)
    examples = spec.examples(data.x_train)
    n = len(examples)
    losses, accuracies = [], []
    for epoch in range(1, epochs + 1):
        order = rng.permutation(n)
        batch_losses = [float(train_step(examples[idx], data.y_train[idx]))
                        for idx in np.array_split(order, max(1, n // batch_size))]
        losses.append(float(np.mean(batch_losses)))
        accuracies.append(float(np.mean(predict(examples) == data.y_train)))
        if log is not None:
            log(f"epoch {epoch:3d}/{epochs}  loss {losses[-1]:.4f}  train accuracy {accuracies[-1]:.4f}")
    return TrainResult(params, losses, accuracies, time.perf_counter() - start)


def inference_graph(params: dict, model: str = DEFAULT_MODEL) -> tuple[list, list]:
    """The inference graph of ``model`` with ``params``: input ``x``, float32
    ``(batch, *input_shape)`` (batch free; ``(batch, 1, 8, 8)`` for the CNN,
    ``(batch, 64)`` for the MLP), and output ``probs = softmax(logits,
    axis=-1)``, float32 ``(batch, 10)``. The parameters stay shared variables
    (``compile_to_onnx`` bakes them into initializers).

    Returns:
        ``([x], [probs])``.

    Raises:
        ValueError: unknown model.
    """
    from pytensor.tensor.special import softmax

    spec = model_spec(model)
    x = spec.input()
    probs = softmax(spec.logits(x, params), axis=-1)
    probs.name = "probs"
    return [x], [probs]


# -- the job -----------------------------------------------------------------
def op_histogram(model) -> dict[str, int]:
    """ONNX ``op_type`` -> count over the main graph of ``model``, in order of
    first appearance."""
    return dict(Counter(node.op_type for node in model.graph.node))


def format_histogram(histogram: dict[str, int]) -> str:
    """``{"Conv": 2, "Relu": 1}`` -> ``"Conv x2, Relu x1"``."""
    return ", ".join(f"{op} x{n}" for op, n in histogram.items())


@dataclass
class DemoReport:
    """The numbers of one demo run.

    Attributes:
        epochs, seed: the training settings.
        final_loss, train_accuracy: after the last epoch.
        test_accuracy_pytensor, test_accuracy_onnx: accuracy on the test split
            of PyTensor's inference function and of onnxruntime.
        predictions_identical: the argmax predictions agree on every test image.
        max_abs_diff: max |p_onnxruntime - p_pytensor| over all test probabilities.
        node_count, op_histogram: ONNX nodes of the model and their op types.
        compile_seconds: ``CompiledModel.compile_seconds``.
        train_seconds: wall time of training (PyTensor compilation included).
        model_path: the ``.onnx`` file written.
        model: the name of the model in ``MODELS``.
        ir_files: the IR dumps written (one per stage), in order.
    """

    epochs: int
    seed: int
    final_loss: float
    train_accuracy: float
    test_accuracy_pytensor: float
    test_accuracy_onnx: float
    predictions_identical: bool
    max_abs_diff: float
    node_count: int
    op_histogram: dict[str, int]
    compile_seconds: float
    train_seconds: float
    model_path: Path
    model: str = DEFAULT_MODEL
    ir_files: list[Path] = field(default_factory=list)

    @property
    def spec(self) -> ModelSpec:
        return model_spec(self.model)

    @property
    def ok(self) -> bool:
        """onnxruntime agrees with PyTensor: identical predictions and
        probabilities within the model's tolerance."""
        return self.predictions_identical and self.max_abs_diff <= self.spec.tolerance


def run_demo(out_dir: str | Path = "demo-out", model: str = DEFAULT_MODEL, epochs: int = DEFAULT_EPOCHS,
             seed: int = DEFAULT_SEED, mode: str | None = DEFAULT_MODE,
             log: Callable[[str], None] | None = print) -> DemoReport:
    """Train ``model``, compile its inference graph with the default pipeline
    to ``out_dir/model.onnx`` (IR dumps in ``out_dir/ir``), and compare
    onnxruntime with PyTensor on the test split.

    Args:
        out_dir: output directory (created if missing).
        model: ``"cnn"`` or ``"mlp"``.
        epochs: training epochs.
        seed: seeds the split, the initialization and the minibatch order.
        mode: PyTensor mode of the training and reference functions (None:
            PyTensor's default).
        log: receives the progress lines; None is silent.

    Returns:
        A ``DemoReport``; it does not raise when the two disagree (see
        ``DemoReport.ok``).

    Raises:
        ValueError: unknown model.
        compiler.lowering.errors.CompileError: the inference graph does not compile.
    """
    import pytensor


    spec = model_spec(model)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    data = load_digits_split(seed)
    if log is not None:
        log(f"digits: {len(data.x_train)} train / {len(data.x_test)} test images of "
            f"{'x'.join(map(str, IMAGE_SHAPE))}; training the {spec.title} for {epochs} epochs of minibatch Adam")
    trained = train(data, model=model, epochs=epochs, seed=seed, mode=mode, log=log)

    inputs, outputs = inference_graph(trained.params, model)
    x_test = spec.examples(data.x_test)
    probs_pytensor = np.asarray(pytensor.function(inputs, outputs[0], mode=mode)(x_test))
    ir_dir = out / "ir"
    compiled = compile_to_onnx(inputs, outputs=outputs, dump_ir=ir_dir)
    model_path = out / "model.onnx"
    compiled.save(model_path)
    (probs_onnx,) = compiled.run(x_test)

    pred_pytensor = probs_pytensor.argmax(axis=-1)
    pred_onnx = probs_onnx.argmax(axis=-1)
    return DemoReport(
        epochs=epochs, seed=seed,
        final_loss=trained.losses[-1] if trained.losses else float("nan"),
        train_accuracy=trained.train_accuracies[-1] if trained.train_accuracies else float("nan"),
        test_accuracy_pytensor=float(np.mean(pred_pytensor == data.y_test)),
        test_accuracy_onnx=float(np.mean(pred_onnx == data.y_test)),
        predictions_identical=bool(np.array_equal(pred_pytensor, pred_onnx)),
        max_abs_diff=float(np.max(np.abs(probs_onnx.astype(np.float64) - probs_pytensor))),
        node_count=len(compiled.model.graph.node),
        op_histogram=op_histogram(compiled.model),
        compile_seconds=compiled.compile_seconds,
        train_seconds=trained.seconds,
        model_path=model_path,
        model=model,
        ir_files=sorted(ir_dir.glob("*.ir")),
    )


def format_report(report: DemoReport) -> str:
    """The human-readable report ``pytensor-onnx demo`` prints."""
    spec = report.spec
    same = "yes" if report.predictions_identical else "NO"
    budget = "" if report.node_count <= spec.node_budget else f"  (over the budget of {spec.node_budget})"
    lines = [
        f"== pytensor-onnx demo: {spec.title} ==",
        f"test accuracy (PyTensor):     {report.test_accuracy_pytensor:.4f}",
        f"test accuracy (onnxruntime):  {report.test_accuracy_onnx:.4f}",
        f"identical predictions:        {same}",
        f"max abs probability diff:     {report.max_abs_diff:.3e}  (tolerance {spec.tolerance:.0e})",
        f"ONNX nodes:                   {report.node_count}{budget}",
        f"ONNX ops:                     {format_histogram(report.op_histogram)}",
        f"compile time:                 {report.compile_seconds * 1000:.1f} ms",
        f"training time:                {report.train_seconds:.2f} s",
        f"wrote:                        {report.model_path}",
    ]
    if report.ir_files:
        first, last = report.ir_files[0], report.ir_files[-1]
        lines.append(f"IR dumps:                     {first.parent}/ ({len(report.ir_files)} files: "
                     f"{first.name} ... {last.name})")
    lines.append("result:                       " + ("OK" if report.ok else "MISMATCH between PyTensor and onnxruntime"))
    return "\n".join(lines)
