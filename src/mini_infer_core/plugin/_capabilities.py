"""The optional abilities a plugin may declare, as typed interfaces with defaults.

TensorRT's IPluginV3 lets the builder ask a plugin for *capability interfaces* instead of
probing one ever-growing class. mini-infer does the same for the abilities its builder,
engine and runtime use beyond the IPluginV2 contract. A plugin declares an ability by
deriving from its interface (:class:`~mini_infer_core.plugin.OnnxPlugin` derives from all of
them, with defaults that mean "nothing to do"); the core asks for it in one place
(``plugin/_adapter.py``: ``ability_of``), never with ``getattr``.

Every ability is one row of :data:`CAPABILITIES`: the adapter asks through it, and the
IPluginV3 wrapper (``plugin/_v3.py``) forwards each member of each interface a V3 build or
runtime object implements from it. A new ability is a new interface and a new row.

======================  =========  ====================================================
interface               phase      what the core does with it
======================  =========  ====================================================
IValueInference         build      keeps build-time values of small integer tensors
IFusion                 build      lets the plugin absorb the node that consumes its output
IConstantPacking        build      stores constant inputs in the layout the kernel reads
ITactics                build/run  times the plugin's ways of computing, keeps the fastest
IDataDependentShapes    build/run  runs the node with outputs it allocates itself
IInPlaceInputs          plan       lets an input live inside one of the outputs
IGraphSafety            run        decides whether a run may be captured as a device graph
IBoundRun               plan       runs a step by a call made for its very arrays
IValueKinds             build/run  takes or gives sequences, optionals, maps (not tensors)
IInputCount             build      refuses a node with too few or too many inputs
IUsesSubgraphs          build/run  receives the core's subgraph runner (If, Loop, Scan)
INondeterministic       build      never folds the node into constants (random operators)
======================  =========  ====================================================
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from .._record import record
from ..errors import PluginInterfaceError
from ._dims import DimsExprs, IntLike
from ._kinds import ValueKind, ValueSpec
from ._subgraph import IUsesSubgraphs
from ._types import DataType

if TYPE_CHECKING:
    from ._fusion import Fusion

# EveryCapability (all of them, for the plugin base classes) is not public
__all__ = [
    "CAPABILITIES",
    "Capability",
    "IBoundRun",
    "IConstantPacking",
    "IDataDependentShapes",
    "IFusion",
    "IGraphSafety",
    "IInPlaceInputs",
    "IInputCount",
    "INondeterministic",
    "ITactics",
    "IValueInference",
    "IValueKinds",
    "TensorDesc",
    "quiet_fp",
]

#: a tensor as the planner sees it: concrete shape and element type
TensorDesc = tuple[tuple[int, ...], DataType]


class IValueInference:
    """Build-time *values* of small integer outputs (shape arithmetic).

    Shape returns its input's dimensions; Gather, Concat, Slice, Cast, Add... combine
    ``inputs[i].values``. What comes back is checked by the builder and kept in the output's
    ``DimsExprs.values``; values that are all constants fold the node without running it.
    Values of integer and bool outputs are kept; those of float outputs only where
    ``float_values`` says the operator's value inference is exact on whole numbers (Add,
    Mul, Cast... are; Div is not: 3.0 / 2.0 is no whole number).
    """

    #: the values it gives for float outputs are exact (whole numbers in, whole numbers out)
    float_values: ClassVar[bool] = False

    def output_values(self, inputs: Sequence[DimsExprs]
                      ) -> Sequence[Sequence[IntLike] | None] | None:
        """One flattened sequence per output (None: unknown), or None for all."""
        return None


class IFusion:
    """Absorbing the node that consumes this plugin's output (Conv + BatchNormalization +
    Relu, MatMul + bias ...). The builder offers only a single-consumer output that is not a
    graph output, with the consumer on the same device."""

    #: operator types this plugin may absorb
    fusable: ClassVar[frozenset[str]] = frozenset()

    def fuse(self, op_type: str, attrs: dict[str, Any], consumer_constants: Sequence[Any],
             consumer_dims: Sequence[DimsExprs | None], position: int,
             own_constants: Sequence[Any]) -> Fusion | None:
        """Take the consumer's work on, or return None. ``consumer_constants`` and
        ``own_constants`` hold the constant inputs' values (None for runtime inputs),
        ``consumer_dims`` the consumer's input shapes; ``position`` is where this output
        enters the consumer. Record the fusion in the plugin's fields so it survives
        serialization."""
        return None


class IConstantPacking:
    """Constant inputs stored in the memory layout the kernel reads (build-time work)."""

    def pack_constants(self, inputs: Sequence[tuple[DimsExprs, DataType] | None],
                       constants: Sequence[Any]) -> Mapping[int, Any] | None:
        """``{input index: array}``: the same values in another layout, or a
        :class:`~mini_infer_core.plugin.Repacked` (elements in the kernel's own order)."""
        return None


class ITactics:
    """Several ways to compute the node; the builder times them on the real shapes and keeps
    the fastest (TensorRT's tactics). The choice is kept among the serialized fields."""

    def get_tactics(self, input_shapes: Sequence[tuple[int, ...] | None]) -> Sequence[str]:
        """The tactics for these concrete input shapes; fewer than two: nothing to choose."""
        return ()

    def set_tactic(self, tactic: str) -> None:
        raise PluginInterfaceError(f"{type(self).__name__} offers no tactic {tactic!r}")


class IDataDependentShapes:
    """Output shapes that depend on input *values* known only at run time (NonZero, Unique,
    If, Loop). Such a plugin declares the unknown dimensions as fresh symbols at build time;
    at run time the engine calls :meth:`enqueue_dynamic`, which returns the outputs."""

    #: class default; an instance may turn data-dependent at build time (its shapes read
    #: values that turned out to be computed at run time)
    data_dependent: bool = False

    def enqueue_dynamic(self, inputs: Sequence[Any], workspace: Any, stream: Any
                        ) -> list[Any]:
        raise PluginInterfaceError(
            f"{type(self).__name__} is data-dependent but does not implement enqueue_dynamic")


class IInPlaceInputs:
    """Inputs that may live inside an output (Concat's inputs in its result, an Identity):
    the producer then writes straight into the output and the plugin copies nothing."""

    #: whether the plugin has nothing left to do once every input it asks for in place is
    #: placed so (an Identity, a Reshape: the output is those bytes): the engine then leaves
    #: its step out of the runs of those shapes
    in_place_only: bool = False

    def in_place_inputs(self, inputs: Sequence[TensorDesc | None],
                        outputs: Sequence[TensorDesc]) -> Mapping[int, tuple[int, int]] | None:
        """``{input index: (output index, element offset)}`` for these concrete shapes."""
        return None


class IGraphSafety:
    """Whether ``enqueue`` allocates nothing on the device after its first run with given
    shapes, so that a run captured as a device graph may be replayed."""

    @property
    def graph_safe(self) -> bool:
        return True


class IBoundRun:
    """A step run by a call the plugin makes once for the step's arrays (a ufunc with its
    operands and output bound, say) rather than through ``enqueue`` on every run: the
    Python between the engine and the kernel is most of a tiny node's time."""

    def bind_run(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any
                 ) -> Callable[[], None] | None:
        """A call with no arguments that does what ``enqueue(inputs, outputs, workspace,
        stream)`` does, for as long as these very arrays are the step's (the plan makes it
        when it views them and drops it with them); None: run through ``enqueue``. The
        engine never binds a step whose arrays change between runs (graph inputs and
        outputs), nor when each enqueue is logged.

        A call whose NumPy kernel may overflow or meet NaN (exp, power, a float-to-int copy)
        may carry the attribute ``quiet_fp = True`` (:func:`quiet_fp`) instead of entering
        ``np.errstate`` itself: a run of a plan that holds such a call runs all its steps
        inside one ``np.errstate(all="ignore")`` (one context per run, not one per step)."""
        return None


def quiet_fp(call: Callable[[], None]) -> Callable[[], None]:
    """``call`` (a ``functools.partial`` or function) marked to run with NumPy's
    floating-point warnings off (:meth:`IBoundRun.bind_run`)."""
    call.quiet_fp = True  # type: ignore[attr-defined]
    return call


class IValueKinds:
    """Inputs or outputs that are not tensors: sequences (Python lists at run time),
    optionals (None or the value) and maps (dicts); see ``plugin/_kinds.py``.

    Their dimensions and element types are those of the innermost tensor (a sequence's
    elements), answered by the usual shape and type inference; this says what wraps them.
    Such values have no place in a memory plan, so a plugin that takes or gives one must be
    data-dependent (:class:`IDataDependentShapes`: it returns its outputs). A plugin without
    this ability takes and gives tensors only; the builder then runs the node on the
    fallback device if that plugin takes the value, or says which input it refuses.
    """

    #: what each input takes, by position: ``"tensor"``, ``"sequence"``, ``"optional"``,
    #: ``"map"``, alternatives joined by ``|`` (``"sequence|tensor"``), or ``"any"``; the last
    #: entry stands for every later input. Empty (the default): tensors only.
    input_kinds: ClassVar[tuple[str, ...]] = ()

    def output_kinds(self, inputs: Sequence[ValueSpec | None]) -> Sequence[ValueKind] | None:
        """The kind of every output for inputs of these kinds, element types and ranks
        (``(kind, dtype, rank)``, rank None where unknown; None: an absent input), asked
        before the output shapes and types; None: every output is a tensor."""
        return None


class IInputCount:
    """How many inputs a node of this plugin may have. The builder checks every node against
    it before asking for shapes, so that a node with a wrong count is a build error that
    names the node and the count expected, not a failure inside the kernel at run time."""

    def input_count(self) -> tuple[int, int | None] | None:
        """``(fewest, most)`` inputs (most None: any number); inputs past the fewest are
        optional, and an absent one (or one named ``""`` in the model) reaches the kernel as
        None. None: not declared, nothing is checked."""
        return None


class EveryCapability(IValueInference, IFusion, IConstantPacking, ITactics,
                      IDataDependentShapes, IInPlaceInputs, IGraphSafety, IBoundRun,
                      IValueKinds, IInputCount):
    """Every optional capability, each with its default: the base of a plugin class that
    declares its abilities by overriding methods (``OnnxPlugin``)."""


class INondeterministic:
    """Outputs that may differ between two runs on the same inputs (random generators): the
    node is never folded into constants at build time, whatever its inputs, and neither is
    what reads its outputs. A seed does not withdraw it: what a seed means (the same values
    on every run, or one stream across runs) is the kernel's to decide, at run time. A
    marker: it has no members (``mini_infer_core.ops.random_ops``' schemas derive from it)."""


@record(frozen=True)
class Capability:
    """One optional ability: its interface, when the core uses it and what for.

    ``members`` are what the core reads or calls on it (every public name the interface
    defines); ``tell`` those of them that configure the plugin, so that a V3 plugin's build
    and runtime objects both hear them when both implement the interface; ``in_use`` says
    whether a plugin that derives from the interface actually has the ability (a plugin
    class may derive from every interface, with defaults that mean "nothing to do")."""

    interface: type[Any]
    phase: str
    what: str
    tell: frozenset[str] = frozenset()
    in_use: Callable[[Any], bool] | None = None

    @property
    def name(self) -> str:
        return self.interface.__name__

    @property
    def members(self) -> tuple[str, ...]:
        return tuple(m for m in vars(self.interface) if not m.startswith("_"))


#: every optional ability, the one table the adapter and the IPluginV3 wrapper are made from
CAPABILITIES: tuple[Capability, ...] = (
    Capability(IValueInference, "build",
               "keeps build-time values of small integer tensors (shape arithmetic)"),
    Capability(IFusion, "build", "lets the plugin absorb the node that consumes its output",
               in_use=lambda p: bool(p.fusable)),
    Capability(IConstantPacking, "build",
               "stores constant inputs in the layout the kernel reads"),
    Capability(ITactics, "build, run",
               "times the plugin's ways of computing, keeps the fastest",
               tell=frozenset({"set_tactic"})),
    Capability(IDataDependentShapes, "build, run",
               "runs the node with outputs it returns itself",
               in_use=lambda p: bool(p.data_dependent)),
    Capability(IInPlaceInputs, "plan", "lets an input live inside one of the outputs"),
    Capability(IGraphSafety, "run",
               "decides whether a run may be captured as a device graph"),
    Capability(IBoundRun, "plan",
               "runs a step by a call made once for its very arrays, not through enqueue"),
    Capability(IValueKinds, "build, run",
               "takes or gives sequences, optionals, maps (not tensors)"),
    Capability(IInputCount, "build", "refuses a node with too few or too many inputs"),
    Capability(IUsesSubgraphs, "build, run",
               "receives the core's subgraph runner (If, Loop, Scan)",
               tell=frozenset({"attach_subgraphs", "bind_input_types"})),
    Capability(INondeterministic, "build",
               "never folds the node into constants: its outputs differ from run to run"),
)

#: the table by interface
BY_INTERFACE: dict[type[Any], Capability] = {c.interface: c for c in CAPABILITIES}
