"""The numerics modes of a compilation (docs/numerics.md), shared
by the passes that choose a form and by the emitter.

``"fast"`` (the default): the fastest form within the numerics contract
(exact dtypes, integer results, rounding modes, comparisons, NaN/inf
positions and shapes; float values within a bound per op family).
``"strict"``: the bit-exact forms. For a pass, a rewrite fires under
``"strict"`` only when its result equals the matched graph's bit for bit
under the IR's reference semantics (``ir.interpreter``), up to the order in
which a sum adds its terms and the sign of a zero maximum, the two
latitudes the contract grants in both modes. For the emitter, the forms
that repair the sign of a zero (ARCHITECTURE.md "Numerics modes").
"""

from __future__ import annotations

NUMERICS = ("fast", "strict")


def check_numerics(value, what: str = "numerics") -> None:
    """ValueError unless ``value`` is one of ``NUMERICS``; the message names
    ``what`` (the argument or pass field) and the accepted values."""
    if value not in NUMERICS:
        raise ValueError(f"{what} must be one of {', '.join(map(repr, NUMERICS))}; got {value!r}")
