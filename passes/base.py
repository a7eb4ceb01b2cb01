"""The pass interface, the pass registry and the pipeline runner.

A pass is a frozen dataclass with a kebab-case ``name`` and its options as
fields; ``run(graph)`` rewrites the graph in place and returns whether it
changed anything. Passes register with ``@register_pass``; third-party passes
are found through the entry-point group ``pytensor_onnx.passes`` (each entry
point loads a ``Pass`` subclass). A duplicate name is an error.

``run_pipeline`` runs passes in order and calls one hook after each: the
driver's hook verifies, dumps and times; passes contain none of that.

A pass that chooses between forms whose numbers differ declares the field
``numerics: str | None = None`` (``ir.numerics``): None when it runs alone
means ``"fast"``, and ``compile_to_onnx`` fills it with the compilation's
mode (``compiler.core.options.CompileOptions.configure_passes``); a value
given by the caller is kept. Under ``"strict"`` the pass rewrites only where
the result stays the matched graph's bit for bit (``ir.numerics``). A plugin
pass may declare the same field.

A pass states its place in a pipeline with ``after``: the names of passes
that, when the same list holds them, must run before it (a fact it reads
that they establish, or a rewrite that must see their result first; a
list without them is fine). ``check_order`` rejects a list where such a
pass appears only later, with a ``PassOrderError`` naming both.

The pipeline owns the analyses passes read (``ANALYSES``; LLVM's new pass
manager tracks preserved analyses the same way, onnx_ir's passes declare
``requires``/``ensures``). A pass declares the analyses it ``requires``
fresh, those it ``ensures`` (computes) and those a run that changed the
graph ``preserves``; ``run_pipeline`` runs the pass computing a required
analysis first when it does not hold (``Analyses``). The one analysis is
``types``: every value has the type ``shape-inference`` gives it. The
mutation API keeps it (``Graph.replace_all_uses`` re-infers the readers of
a value replaced by one of another type), so every pass of this package
preserves it; a plugin preserves nothing unless it says so.
"""

from __future__ import annotations

import abc
import time
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Callable, ClassVar, Sequence

from ir import Graph
from ir.errors import PassOrderError
from ir.numerics import check_numerics

ENTRY_POINT_GROUP = "pytensor_onnx.passes"

TYPES = "types"
ANALYSES: dict[str, str] = {
    # every value has the type shape-inference gives it: symbolic dims, and the dims
    # that shape vectors' contents determine (a reshape to concat(shape(x)[0], [-1])),
    # given the graph's size facts (new ones, ``Rewriter.assume``, decide more: it ends)
    TYPES: "shape-inference",
}
"""The analyses the pipeline keeps, each with the pass that computes it."""


@dataclass(frozen=True)
class Pass(abc.ABC):
    """Base class of IR passes. Subclasses set ``name`` (and, if their
    place in a pipeline matters, ``after``) and implement ``run``.

    ``requires``: the analyses (``ANALYSES``) that must hold when ``run``
    starts; ``run_pipeline`` runs the pass computing one that does not
    (a pass deciding from dims that only ``shape-inference`` makes known
    requires ``TYPES``).

    ``ensures``: the analyses a run computes (``shape-inference``: ``TYPES``).

    ``preserves``: the analyses that still hold after a run that changed
    the graph. A pass that changes the IR only through the mutation API
    (never assigning ``Value.type``) preserves ``TYPES``: the API re-infers
    what a replacement changes. Every analysis for the passes of this
    package; a pass from elsewhere (a plugin) defaults to none, so the
    pipeline recomputes what a later pass requires.

    ``visits_nested_graphs``: whether ``run`` rewrites the graphs nested in
    ``graph`` (loop and if bodies) too, through the walks of
    ``ir.transforms``; every pass of this package states it
    (``tests/architecture``). Default False: the top-level graph only.

    ``deterministic``: what ``run`` does depends only on the graph and the
    pass's options (no state kept elsewhere, no randomness), and ``run``
    returns True whenever it changed the graph. Then a run that found nothing
    to change finds nothing again on the same graph, so ``run_pipeline``
    skips an equal pass (same class and options) when its last run returned
    False and no pass has changed the graph since. True for the passes of
    this package; a pass from elsewhere defaults to False (always run).

    ``numerics`` (a field some passes declare, see the module docstring) is
    checked when the pass is made: ValueError unless None, ``"fast"`` or
    ``"strict"``; ``strict`` says whether it is ``"strict"``.
    """

    name: ClassVar[str] = ""
    after: ClassVar[tuple[str, ...]] = ()
    requires: ClassVar[tuple[str, ...]] = ()
    ensures: ClassVar[tuple[str, ...]] = ()
    preserves: ClassVar[tuple[str, ...]] = ()
    visits_nested_graphs: ClassVar[bool] = False
    deterministic: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        ours = cls.__module__.partition(".")[0] == __name__.partition(".")[0]
        if "preserves" not in cls.__dict__:
            cls.preserves = tuple(ANALYSES) if ours else ()
        if "deterministic" not in cls.__dict__:
            cls.deterministic = ours

    def __post_init__(self):
        numerics = getattr(self, "numerics", None)
        if numerics is not None:
            check_numerics(numerics, f"{self.name}: numerics")

    @property
    def strict(self) -> bool:
        """Whether the pass runs under ``numerics="strict"`` (a declared
        ``numerics`` field holding it; None and ``"fast"`` are fast)."""
        return getattr(self, "numerics", None) == "strict"

    @abc.abstractmethod
    def run(self, graph: Graph) -> bool:
        """Rewrite ``graph`` in place; return True if it changed."""


_PASSES: dict[str, type[Pass]] = {}
_entry_points_loaded = False


def register_pass(cls: type[Pass]) -> type[Pass]:
    """Class decorator adding a pass to the registry under ``cls.name``.

    Raises:
        ValueError: empty name, or the name is already taken.
    """
    if not cls.name:
        raise ValueError(f"pass class {cls.__name__} has no name")
    if cls.name in _PASSES and _PASSES[cls.name] is not cls:
        raise ValueError(f"pass name {cls.name!r} is registered twice: "
                         f"{_PASSES[cls.name].__module__} and {cls.__module__}")
    _PASSES[cls.name] = cls
    return cls


def _load_entry_points() -> None:
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        cls = ep.load()
        if not (isinstance(cls, type) and issubclass(cls, Pass)):
            raise TypeError(f"entry point {ep.name} = {ep.value} is not a Pass subclass")
        if cls.name != ep.name:
            raise ValueError(f"entry point {ep.name} loads pass named {cls.name!r}")
        register_pass(cls)


def get_pass(name: str, **options) -> Pass:
    """An instance of the pass registered as ``name`` (built-in or from an
    entry point), with ``options`` as its fields.

    Raises:
        KeyError: no such pass (the message lists the known names).
    """
    _load_entry_points()
    try:
        cls = _PASSES[name]
    except KeyError:
        raise KeyError(f"unknown pass {name!r}; known passes: {', '.join(sorted(_PASSES))}") from None
    return cls(**options)


def registered_passes() -> dict[str, type[Pass]]:
    """Every known pass class by name (built-in and entry points)."""
    _load_entry_points()
    return dict(_PASSES)


def resolve_passes(passes: Sequence[Pass | str]) -> list[Pass]:
    """Pass objects for a list of pass objects and/or registered names."""
    return [get_pass(p) if isinstance(p, str) else p for p in passes]


@dataclass(frozen=True)
class PassRecord:
    """What one stage (lowering or a pass) did.

    Attributes:
        name: the stage (``"lowered"`` or the pass's name).
        changed: whether it changed the IR.
        seconds: its wall time (the driver's hook not included).
        nodes: the number of nodes of the top-level graph after it.
        ir_text: the IR text after it, or None when the compilation was not
            asked to keep it (``compile_to_onnx(keep_ir=True)`` or
            ``dump_ir=``). The graph keeps changing after a stage, so its text
            can only be taken then: it is never reconstructed later.
    """

    name: str
    changed: bool
    seconds: float
    nodes: int = 0
    ir_text: str | None = None


AfterPassHook = Callable[[Pass, Graph, bool, float], None]
BeforePassHook = Callable[[Pass, Graph], bool]


def check_order(passes: Sequence[Pass]) -> None:
    """Check ``passes`` against every pass's ``after`` contract: a pass
    ``p`` may not run at position i when a pass named in ``p.after`` appears
    in the list, but only after position i. Linear in the list's length
    times the contracts' lengths.

    Raises:
        PassOrderError: the first violation, naming both passes and why the
            order matters (the contract's source: the pass's docstring).
        ValueError: an ``after`` entry names no registered pass, or a
            ``requires``/``ensures``/``preserves`` entry no analysis.
    """
    known = registered_passes()
    first = {}
    for i, p in enumerate(passes):
        first.setdefault(p.name, i)
    for i, p in enumerate(passes):
        for analysis in (*p.requires, *p.ensures, *p.preserves):
            if analysis not in ANALYSES:
                raise ValueError(f"pass {p.name!r} names the analysis {analysis!r}; the analyses are "
                                 f"{', '.join(sorted(ANALYSES))}")
        for name in p.after:
            if name not in known:
                raise ValueError(f"pass {p.name!r} declares after={p.after!r}, but no pass is named {name!r}")
            if name in first and first[name] > i:
                raise PassOrderError(
                    f"pass {p.name!r} (position {i}) must run after {name!r}, which first runs at position "
                    f"{first[name]}: move {name!r} before it (see {type(p).__module__}.{type(p).__name__})",
                    p.name, name)


class Analyses:
    """Which analyses (``ANALYSES``) hold for ``graph`` while passes run on
    it: none at first (the lowered graph's types are PyTensor's); after a
    pass runs, also those it ``ensures``; after a run that changed the
    graph, only those it ``ensures`` or ``preserves``. ``TYPES`` also ends
    when a run adds size facts (``Graph.size_bounds``, from
    ``Rewriter.assume``): they decide shape arithmetic (a crop's end
    computed from ``max(H, 3)``) that ``shape-inference`` then reads again."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.fresh: set[str] = set()
        self._bounds = graph.size_bounds  # the size facts the analyses were computed with

    def missing(self, p: Pass) -> list[Pass]:
        """The passes to run before ``p``: one computing each analysis ``p``
        requires that does not hold, in ``p.requires`` order."""
        return [get_pass(ANALYSES[a]) for a in dict.fromkeys(p.requires) if a not in self.fresh]

    def ran(self, p: Pass, changed: bool) -> None:
        """Note that ``p`` ran and whether it changed the graph."""
        if changed:
            self.fresh.intersection_update(p.preserves)
        if self.graph.size_bounds != self._bounds:
            self.fresh.discard(TYPES)
            self._bounds = self.graph.size_bounds
        self.fresh.update(p.ensures)


def run_pass(p: Pass, graph: Graph, analyses: Analyses | None = None) -> bool:
    """``p.run(graph)`` as a bool. With ``analyses`` (what holds for
    ``graph``; updated), the passes computing the analyses ``p`` requires
    that do not hold run first (``Analyses.missing``)."""
    if analyses is None:
        return bool(p.run(graph))
    for q in analyses.missing(p):
        analyses.ran(q, bool(q.run(graph)))
    changed = bool(p.run(graph))
    analyses.ran(p, changed)
    return changed


def run_pipeline(graph: Graph, passes: Sequence[Pass], after_pass: AfterPassHook | None = None,
                 before_pass: BeforePassHook | None = None) -> None:
    """Run ``passes`` on ``graph`` in order, calling ``after_pass(pass, graph,
    changed, seconds)`` after each. A pass for which ``before_pass(pass,
    graph)`` returns False is skipped (no ``after_pass`` call).

    Before a pass that ``requires`` an analysis that does not hold (none
    does at first; a pass that does not ``preserve`` one ends it when it
    changes the graph), the pass computing it runs, with both hooks called
    for it as for a listed pass (so ``shape-inference`` runs before
    ``pool-recovery`` in a list without it, or after a plugin pass).

    A ``deterministic`` pass equal to one whose last run changed nothing,
    when no pass has changed the graph since, is not run again (it would
    find nothing again); ``after_pass`` still reports it, as unchanged, with
    0 seconds. So the repeated ``canonicalize``, ``constant-folding``,
    ``cse`` and ``dce`` of the default pipeline cost nothing on a graph
    they have nothing to do on.

    Raises:
        PassOrderError: the list breaks an ``after`` contract (``check_order``),
            before any pass runs.
    """
    check_order(passes)
    analyses = Analyses(graph)
    changes = 0  # how many pass runs have changed the graph so far
    clean_at: dict[Pass, int] = {}  # pass -> ``changes`` when a run of it last changed nothing

    def run(p: Pass) -> None:
        nonlocal changes
        key = _skip_key(p)
        start = time.perf_counter()
        changed = bool(p.run(graph))
        seconds = time.perf_counter() - start
        analyses.ran(p, changed)
        if changed:
            changes += 1
        elif key is not None:
            clean_at[key] = changes
        if after_pass is not None:
            after_pass(p, graph, changed, seconds)

    for p in passes:
        key = _skip_key(p)
        if key is not None and clean_at.get(key) == changes:
            if before_pass is None or before_pass(p, graph):
                if after_pass is not None:
                    after_pass(p, graph, False, 0.0)
            continue
        for q in analyses.missing(p):
            if before_pass is None or before_pass(q, graph):
                run(q)
        if before_pass is not None and not before_pass(p, graph):
            continue
        run(p)


def _skip_key(p: Pass) -> Pass | None:
    """``p`` as a key of ``run_pipeline``'s table of clean runs, or None when
    it may not be skipped (not ``deterministic``, or unhashable options)."""
    if not p.deterministic:
        return None
    try:
        hash(p)
    except TypeError:
        return None
    return p
