"""IR passes. ``DEFAULT_PIPELINE`` is the ordered list ``compile_to_onnx`` runs
when no passes are given; read it top to bottom."""

from passes.base import (ANALYSES, ENTRY_POINT_GROUP, TYPES, Analyses, Pass, PassRecord, get_pass, register_pass,
                         registered_passes, resolve_passes, run_pass, run_pipeline)
# Importing a pass module registers its passes.
from passes import canonicalize, constant_folding, cse, dce  # noqa: F401
from passes import shape_folding, shape_inference, switch_sink  # noqa: F401
from passes import cumulative_scan, if_sinking, if_to_where, scan_unroll  # noqa: F401
from passes import (activations, batchnorm_folding, conv_bias, conv_recovery, filter_flip,  # noqa: F401
                    attention, flatten_recovery, gemm_fusion, norm_recovery, pool_recovery, resize_recovery)
from passes import conv_slicing, distinct_arguments, narrow_layout, special_batching  # noqa: F401

DEFAULT_PIPELINE: list[str] = [
    # -- clean up what lowering wrote ------------------------------------
    # Precise types first: the folding and the rules below read static and
    # symbolic dims from them.
    "shape-inference",
    # Bypass broadcast unsqueezes first, so a bias stays its own initializer
    # instead of being folded into a reshaped copy.
    "canonicalize",
    "constant-folding",
    # Shape arithmetic the types now determine becomes constants; fold what
    # that unlocks.
    "shape-folding",
    "constant-folding",
    # Folding makes new constants (ones, static shapes) the rules can use.
    "canonicalize",
    # mul/div of a where with a zero branch -> where of the product, as
    # PyTensor's default modes compute it (0, not NaN, where the branch is
    # not taken: gradients of switches).
    "switch-sink",
    # -- control flow ------------------------------------------------------
    # An accumulating loop becomes one cumsum; a short loop with a constant
    # trip count becomes straight-line code, which the rules below then see.
    "cumulative-scan",
    "scan-unroll",
    "canonicalize",
    "constant-folding",
    # Merge what lowering, folding and unrolling duplicated, drop the dead:
    # the single-use checks of the patterns below need exact use counts.
    "cse",
    "dce",
    # -- neural-network operators -----------------------------------------
    # convolve2d forms -> conv{flip=true}, pads, strides and groups included.
    "conv-recovery",
    # A per-channel add after a conv is its bias; then per-channel affine
    # chains (batch norm) fold into the conv's weights and bias, which must
    # happen before the kernel is flipped into a new constant.
    "conv-bias-fusion",
    "batchnorm-folding",
    # conv{flip=true} -> ONNX's cross-correlation: flipped constants.
    "filter-flip",
    # maximum(x, 0) -> relu and the other activations (pool-recovery finds
    # a pool's maxima with or without a relu's 0 among them).
    "relu-silu",
    # Reshape-max, strided-slice maxima and means -> pools; repeats -> resize.
    "pool-recovery",
    # Means, square, sqrt and division over the last axis -> layer_norm
    # (before gemm-fusion, which would take its bias add).
    "norm-recovery",
    # A causal where-mask read by softmax -> trilu + add (exact, cheaper in
    # onnxruntime); a scalar scale of q @ k^T -> of q.
    "attention",
    "resize-recovery",
    # A reshape to (N, -1) -> flatten; then matmul + bias -> gemm (the
    # flatten is the gemm's 2-D operand).
    "flatten-recovery",
    "gemm-fusion",
    # Channel slices of a conv (CSP blocks' chunk) -> convs of kernel slices.
    "conv-slicing",
    # -- conditionals --------------------------------------------------------
    # Sink branch-only work into the branches, then turn cheap, safe ifs
    # into where.
    "if-sinking",
    "if-to-where",
    # -- special functions -----------------------------------------------------
    # A special function (hundreds of ONNX nodes) of constant data runs once
    # per distinct data value; then independent calls of one function run
    # once on their arguments concatenated.
    "distinct-arguments",
    "special-batching",
    # -- layout ----------------------------------------------------------------
    # [N, k] computations with a small k run as [k, N] (onnxruntime
    # broadcasts one innermost span at a time).
    "narrow-layout",
    # -- finish ------------------------------------------------------------
    # Types as precise as the rewrites above made them; the identities they
    # now show (an expand to its input's type: slice writes of a batch).
    "shape-inference",
    "canonicalize",
    "cse",
    "dce",
    # Final types for the emitted value_info and dim_params.
    "shape-inference",
]

__all__ = ["ANALYSES", "DEFAULT_PIPELINE", "ENTRY_POINT_GROUP", "TYPES", "Analyses", "Pass", "PassRecord", "get_pass",
           "register_pass", "registered_passes", "resolve_passes", "run_pass", "run_pipeline"]
