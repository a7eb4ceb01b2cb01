"""The ``pytensor-onnx demo`` job: train an MLP on real data in PyTensor,
compile its inference graph to ONNX, and check onnxruntime against PyTensor.

The data is scikit-learn's bundled digits set (``sklearn.datasets.load_digits``:
1797 8x8 grey images of the digits 0-9, 17 grey levels, no download). The model
is ``softmax(relu(x @ W1 + b1) @ W2 + b2)`` with a hidden layer of 64 units,
trained with minibatch Adam (Kingma & Ba 2015, Algorithm 1) on the mean
cross-entropy; gradients come from ``pytensor.grad``. Everything is float32.

Each step is a function usable on its own (``load_digits_split``,
``train_mlp``, ``inference_graph``, ``run_demo``); ``compiler.cli`` is a thin
wrapper around ``run_demo`` and ``format_report``.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

DEFAULT_EPOCHS = 10
DEFAULT_SEED = 0
HIDDEN = 64
BATCH_SIZE = 32
LEARNING_RATE = 0.01
# The acceptance budget: the 2-layer MLP compiles to at most this many
# ONNX nodes, and onnxruntime matches PyTensor to this absolute tolerance.
NODE_BUDGET = 6
PROB_TOLERANCE = 1e-6


@dataclass(frozen=True)
class DigitsSplit:
    """The digits data, split 80/20 with stratification.

    Attributes:
        x_train, x_test: float32 ``(n, 64)`` pixel intensities scaled to [0, 1].
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
    Returns a ``DigitsSplit`` (1437 train and 360 test rows).
    """
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.2, random_state=seed, stratify=y)
    return DigitsSplit(x_train, x_test, y_train, y_test)


def init_params(n_in: int, n_hidden: int, n_out: int, seed: int) -> dict:
    """Glorot-uniform weights and zero biases as float32 PyTensor shared
    variables named ``W1`` ``(n_in, n_hidden)``, ``b1`` ``(n_hidden,)``,
    ``W2`` ``(n_hidden, n_out)`` and ``b2`` ``(n_out,)``."""
    import pytensor

    rng = np.random.default_rng(seed)

    def glorot(fan_in: int, fan_out: int) -> np.ndarray:
        limit = np.sqrt(6.0 / (fan_in + fan_out))
        return rng.uniform(-limit, limit, size=(fan_in, fan_out)).astype(np.float32)

    values = {"W1": glorot(n_in, n_hidden), "b1": np.zeros(n_hidden, np.float32),
              "W2": glorot(n_hidden, n_out), "b2": np.zeros(n_out, np.float32)}
    return {name: pytensor.shared(v, name=name) for name, v in values.items()}


def mlp_logits(x, params: dict):
    """The pre-softmax scores ``relu(x @ W1 + b1) @ W2 + b2`` (ReLU as
    ``maximum(h, 0)``) for a float32 ``(batch, n_in)`` PyTensor matrix ``x``."""
    import pytensor.tensor as pt

    hidden = pt.maximum(x @ params["W1"] + params["b1"], 0)
    return hidden @ params["W2"] + params["b2"]


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
    """What ``train_mlp`` returns: the trained shared variables (``W1``,
    ``b1``, ``W2``, ``b2``), the mean minibatch loss and the train accuracy
    after each epoch, and the wall time."""

    params: dict
    losses: list[float]
    train_accuracies: list[float]
    seconds: float


def train_mlp(data: DigitsSplit, epochs: int = DEFAULT_EPOCHS, seed: int = DEFAULT_SEED,
              hidden: int = HIDDEN, batch_size: int = BATCH_SIZE, lr: float = LEARNING_RATE,
              log: Callable[[str], None] | None = print) -> TrainResult:
    """Train the MLP on ``data.x_train`` with minibatch Adam on the mean
    cross-entropy ``-mean(log_softmax(logits)[i, y_i])``.

    Minibatches are drawn from a permutation of the training rows each epoch
    (``np.random.default_rng(seed)``); the functions are compiled in
    PyTensor's default mode. ``log`` receives one progress line per epoch
    (epoch, mean loss, train accuracy); None is silent.

    Returns:
        A ``TrainResult``.
    """
    import pytensor
    import pytensor.tensor as pt
    from pytensor.tensor.special import log_softmax

    start = time.perf_counter()
    n_classes = int(data.y_train.max()) + 1
    params = init_params(data.x_train.shape[1], hidden, n_classes, seed)
    x = pt.matrix("x", dtype="float32")
    y = pt.vector("y", dtype="int64")
    logits = mlp_logits(x, params)
    loss = -pt.mean(log_softmax(logits, axis=-1)[pt.arange(y.shape[0]), y])
    shared = list(params.values())
    train_step = pytensor.function([x, y], loss, updates=adam_updates(shared, pytensor.grad(loss, shared), lr))
    predict = pytensor.function([x], pt.argmax(logits, axis=-1))

    rng = np.random.default_rng(seed)
    n = len(data.x_train)
    losses, accuracies = [], []
    for epoch in range(1, epochs + 1):
        order = rng.permutation(n)
        batch_losses = [float(train_step(data.x_train[idx], data.y_train[idx]))
                        for idx in np.array_split(order, max(1, n // batch_size))]
        losses.append(float(np.mean(batch_losses)))
        accuracies.append(float(np.mean(predict(data.x_train) == data.y_train)))
        if log is not None:
            log(f"epoch {epoch:3d}/{epochs}  loss {losses[-1]:.4f}  train accuracy {accuracies[-1]:.4f}")
    return TrainResult(params, losses, accuracies, time.perf_counter() - start)


def inference_graph(params: dict) -> tuple[list, list]:
    """The inference graph of the trained MLP: input ``x``, a float32
    ``(batch, n_in)`` matrix (``n_in`` static, the batch free), and output
    ``probs = softmax(logits, axis=-1)``, float32 ``(batch, n_classes)``. The
    parameters stay shared variables (``compile_to_onnx`` bakes them into
    initializers).

    Returns:
        ``([x], [probs])``.
    """
    import pytensor.tensor as pt
    from pytensor.tensor.special import softmax

    x = pt.tensor("x", dtype="float32", shape=(None, params["W1"].get_value(borrow=True).shape[0]))
    probs = softmax(mlp_logits(x, params), axis=-1)
    probs.name = "probs"
    return [x], [probs]


def op_histogram(model) -> dict[str, int]:
    """ONNX ``op_type`` -> count over the main graph of ``model``, in order of
    first appearance."""
    return dict(Counter(node.op_type for node in model.graph.node))


def format_histogram(histogram: dict[str, int]) -> str:
    """``{"MatMul": 2, "Add": 1}`` -> ``"MatMul x2, Add x1"``."""
    return ", ".join(f"{op} x{n}" for op, n in histogram.items())


@dataclass
class DemoReport:
    """The numbers of one demo run.

    Attributes:
        epochs, seed: the training settings.
        final_loss, train_accuracy: after the last epoch.
        test_accuracy_pytensor, test_accuracy_onnx: accuracy on the test split
            of PyTensor's compiled inference function and of onnxruntime.
        predictions_identical: the argmax predictions agree on every test row.
        max_abs_diff: max |p_onnxruntime - p_pytensor| over all test probabilities.
        node_count, op_histogram: ONNX nodes of the model and their op types.
        compile_seconds: ``CompiledModel.compile_seconds``.
        train_seconds: wall time of training (PyTensor compilation included).
        model_path: the ``.onnx`` file written.
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
    ir_files: list[Path] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """onnxruntime agrees with PyTensor: identical predictions and
        probabilities within ``PROB_TOLERANCE``."""
        return self.predictions_identical and self.max_abs_diff <= PROB_TOLERANCE


def run_demo(out_dir: str | Path = "demo-out", epochs: int = DEFAULT_EPOCHS, seed: int = DEFAULT_SEED,
             log: Callable[[str], None] | None = print) -> DemoReport:
    """Train the MLP, compile its inference graph to ``out_dir/model.onnx``
    (IR dumps in ``out_dir/ir``), and compare onnxruntime with PyTensor on
    the test split.

    Args:
        out_dir: output directory (created if missing).
        epochs: training epochs.
        seed: seeds the split, the initialization and the minibatch order.
        log: receives the progress lines; None is silent.

    Returns:
        A ``DemoReport``; it does not raise when the two disagree (see
        ``DemoReport.ok``).

    Raises:
        compiler.errors.CompileError: the inference graph does not compile.
    """
    import pytensor

    from compiler.driver import compile_to_onnx

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    data = load_digits_split(seed)
    if log is not None:
        log(f"digits: {len(data.x_train)} train / {len(data.x_test)} test images, "
            f"{data.x_train.shape[1]} features; training {epochs} epochs of minibatch Adam")
    trained = train_mlp(data, epochs=epochs, seed=seed, log=log)

    inputs, outputs = inference_graph(trained.params)
    probs_pytensor = np.asarray(pytensor.function(inputs, outputs[0])(data.x_test))
    ir_dir = out / "ir"
    compiled = compile_to_onnx(inputs, outputs=outputs, dump_ir=ir_dir)
    model_path = out / "model.onnx"
    compiled.save(model_path)
    (probs_onnx,) = compiled.run(data.x_test)

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
        ir_files=sorted(ir_dir.glob("*.ir")),
    )


def format_report(report: DemoReport) -> str:
    """The human-readable report ``pytensor-onnx demo`` prints."""
    same = "yes" if report.predictions_identical else "NO"
    budget = "" if report.node_count <= NODE_BUDGET else f"  (over the budget of {NODE_BUDGET})"
    lines = [
        "== pytensor-onnx demo: digits MLP ==",
        f"test accuracy (PyTensor):     {report.test_accuracy_pytensor:.4f}",
        f"test accuracy (onnxruntime):  {report.test_accuracy_onnx:.4f}",
        f"identical predictions:        {same}",
        f"max abs probability diff:     {report.max_abs_diff:.3e}  (tolerance {PROB_TOLERANCE:.0e})",
        f"ONNX nodes:                   {report.node_count}{budget}",
        f"ONNX ops:                     {format_histogram(report.op_histogram)}",
        f"compile time:                 {report.compile_seconds * 1000:.1f} ms",
        f"training time:                {report.train_seconds:.2f} s",
        f"wrote:                        {report.model_path}",
    ]
    lines += [f"                              {p}" for p in report.ir_files]
    lines.append("result:                       " + ("OK" if report.ok else "MISMATCH between PyTensor and onnxruntime"))
    return "\n".join(lines)
