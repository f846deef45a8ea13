"""How the core talks to the three interface levels, in one place.

TensorRT's rules: an IPluginV2 sees only static shapes and one data type for all tensors; an
IPluginV2Ext chooses output types; an IPluginV2DynamicExt sees dimension expressions and
negotiates each position's type and format.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from ..errors import PluginInterfaceError
from . import _capabilities as cap
from ._dims import DimsExprs, ExprBuilder
from ._fields import PluginFieldCollection
from ._interfaces import IPluginCreator, IPluginV2, IPluginV2DynamicExt, IPluginV2Ext
from ._kinds import TENSOR, ValueKind, ValueSpec
from ._subgraph import IUsesSubgraphs, SubgraphFactory
from ._types import DataType, DynamicPluginTensorDesc, PluginTensorDesc, TensorFormat
from ._v3 import V3Plugin, as_v2

__all__ = ["interface_level", "check_input_count", "infer_outputs", "check_formats",
           "configure_concrete", "configure_build", "format_combination", "offers_formats",
           "supports_at", "workspace_size",
           "create", "deserialize",
           "ability_of", "values_of", "fusion_of", "packing_of", "tactics_of",
           "is_data_dependent", "dynamic_of", "bound_run_of", "in_place_of", "subgraphs_of",
           "may_fold", "graph_safe", "clone", "refused_kind", "output_kinds", "check_kinds"]

_BUILDER = ExprBuilder()
A = TypeVar("A")


def interface_level(plugin: IPluginV2) -> str:
    if isinstance(plugin, V3Plugin):
        return "IPluginV3"
    if isinstance(plugin, IPluginV2DynamicExt):
        return "IPluginV2DynamicExt"
    if isinstance(plugin, IPluginV2Ext):
        return "IPluginV2Ext"
    return "IPluginV2"


def _count(lo: int, hi: int | None) -> str:
    if hi is None:
        return f"at least {lo} input{'s' if lo != 1 else ''}"
    if hi == lo:
        return f"exactly {lo} input{'s' if lo != 1 else ''}"
    return f"{lo} to {hi} inputs"


def check_input_count(plugin: IPluginV2, n_inputs: int, where: str) -> None:
    """Refuse a node whose input count the plugin does not take (``IInputCount``)."""
    counted = ability_of(plugin, cap.IInputCount)
    count = counted.input_count() if counted is not None else None
    if count is None:
        return
    lo, hi = count
    if n_inputs < lo or (hi is not None and n_inputs > hi):
        raise PluginInterfaceError(
            f"{where}: the node has {n_inputs} input{'s' if n_inputs != 1 else ''}, the "
            f"plugin takes {_count(lo, hi)}: fix the model (onnx.checker.check_model reports "
            "such nodes of ONNX operators); if the node is right, the plugin declares a wrong "
            "count: pin another provider (--pin) or report it to the plugin's distribution")


def infer_outputs(plugin: IPluginV2, in_dims: Sequence[DimsExprs | None],
                  in_types: Sequence[DataType | None], where: str
                  ) -> tuple[list[DimsExprs], list[DataType]]:
    runner = subgraphs_of(plugin)
    if runner is not None:
        runner.bind_input_types(in_types)
    n = plugin.num_outputs
    present = [d for d in in_dims if d is not None]
    types = [t if t is not None else DataType.FLOAT for t in in_types]
    if isinstance(plugin, IPluginV2DynamicExt):
        for idx in plugin.shape_inputs:
            shape_in = in_dims[idx] if idx < len(in_dims) else None
            if shape_in is not None and shape_in.values is None:
                raise PluginInterfaceError(
                    f"{where}: input {idx} must be known when the engine is built (the plugin "
                    "reads its values to compute output shapes), but it is computed at run time")
        dims = [plugin.get_output_dimensions(i, in_dims, _BUILDER) for i in range(n)]  # type: ignore[arg-type]
        out_types = [plugin.get_output_data_type(i, types) for i in range(n)]
        return dims, out_types
    dynamic = [str(d) for dims in present for d in dims if not d.is_constant()]
    if dynamic:
        raise PluginInterfaceError(
            f"{where}: the plugin implements {interface_level(plugin)}, which supports static "
            f"shapes only, but its inputs have dynamic dimension(s) {sorted(set(dynamic))}. "
            "Implement IPluginV2DynamicExt (get_output_dimensions with dimension expressions) "
            "or build with fixed input shapes")
    shapes = [d.to_tuple() for d in present]
    dims = [DimsExprs(plugin.get_output_shape(i, shapes)) for i in range(n)]
    if isinstance(plugin, IPluginV2Ext):
        out_types = [plugin.get_output_data_type(i, types) for i in range(n)]
    else:
        out_types = [types[0] if types else DataType.FLOAT] * n
    return dims, out_types


def check_formats(plugin: IPluginV2, in_types: Sequence[DataType | None],
                  out_types: Sequence[DataType], where: str) -> None:
    if isinstance(plugin, IPluginV2DynamicExt):
        from ._base import OnnxPlugin

        types = [*in_types, *out_types]
        if type(plugin).supports_format_combination is OnnxPlugin.supports_format_combination:
            # its answer without asking (a build checks every node): LINEAR at every
            # position, an input's type where the class's ``dtypes`` lists it
            dtypes = plugin.dtypes  # type: ignore[attr-defined]
            refused = None if dtypes is None else next(
                (pos for pos, t in enumerate(in_types) if t is not None and t not in dtypes),
                None)
        else:
            descs = [PluginTensorDesc((), t if t is not None else DataType.FLOAT)
                     for t in types]
            refused = next((pos for pos, t in enumerate(types) if t is not None and not
                            plugin.supports_format_combination(pos, descs, len(in_types))),
                           None)
        if refused is not None:
            t = types[refused]
            assert t is not None
            role = (f"input {refused}" if refused < len(in_types)
                    else f"output {refused - len(in_types)}")
            raise PluginInterfaceError(
                f"{where}: the plugin does not support {t.name} in linear format at {role}")
        return
    for t in [*in_types, *out_types]:
        if t is not None and not plugin.supports_format(t, TensorFormat.LINEAR):
            raise PluginInterfaceError(
                f"{where}: the plugin ({interface_level(plugin)}) does not support {t.name} "
                "in linear format")


Formats = Sequence[TensorFormat] | None


def _fmt(formats: Formats, k: int) -> TensorFormat:
    return formats[k] if formats is not None else TensorFormat.LINEAR


def configure_build(plugin: IPluginV2, in_descs: Sequence[tuple[DimsExprs, DataType] | None],
                    out_descs: Sequence[tuple[DimsExprs, DataType]],
                    in_formats: Formats = None, out_formats: Formats = None) -> None:
    """Build-time configure with possibly symbolic shapes (only DynamicExt sees them) and
    the formats negotiated (LINEAR where not given)."""
    if isinstance(plugin, IPluginV2DynamicExt):
        def dyn(d: tuple[DimsExprs, DataType], f: TensorFormat) -> DynamicPluginTensorDesc:
            shape = tuple(x.get_constant_value() if x.is_constant() else -1 for x in d[0])
            return DynamicPluginTensorDesc(PluginTensorDesc(shape, d[1], f), d[0])
        plugin.configure_plugin(
            [dyn(d, _fmt(in_formats, k)) if d is not None else None  # type: ignore[misc]
             for k, d in enumerate(in_descs)],
            [dyn(d, _fmt(out_formats, k)) for k, d in enumerate(out_descs)])
    else:
        configure_concrete(plugin,
                           [(d[0].to_tuple(), d[1]) if d is not None else None for d in in_descs],
                           [(d[0].to_tuple(), d[1]) for d in out_descs], in_formats,
                           out_formats)


def configure_concrete(plugin: IPluginV2,
                       in_descs: Sequence[tuple[tuple[int, ...], DataType] | None],
                       out_descs: Sequence[tuple[tuple[int, ...], DataType]],
                       in_formats: Formats = None, out_formats: Formats = None) -> None:
    """Configure with concrete (logical) shapes and the negotiated formats."""
    ins = [PluginTensorDesc(d[0], d[1], _fmt(in_formats, k)) if d is not None else None
           for k, d in enumerate(in_descs)]
    outs = [PluginTensorDesc(s, t, _fmt(out_formats, k)) for k, (s, t) in enumerate(out_descs)]
    if isinstance(plugin, V3Plugin):
        plugin.on_shape_change(ins, outs)
    elif isinstance(plugin, IPluginV2DynamicExt):
        plugin.configure_plugin(
            [DynamicPluginTensorDesc(d, DimsExprs(d.shape), d.shape, d.shape)  # type: ignore[misc]
             if d is not None else None for d in ins],
            [DynamicPluginTensorDesc(d, DimsExprs(d.shape), d.shape, d.shape) for d in outs])
    elif isinstance(plugin, IPluginV2Ext):
        plugin.configure_plugin([d for d in ins if d is not None], outs)
    else:
        present = [d for d in ins if d is not None]
        dtype = present[0].dtype if present else (outs[0].dtype if outs else DataType.FLOAT)
        fmt = present[0].format if present else (outs[0].format if outs else
                                                 TensorFormat.LINEAR)
        plugin.configure_with_format([d.shape for d in present], [d.shape for d in outs], dtype,
                                     fmt, 1)


def offers_formats(plugin: IPluginV2) -> bool:
    """Whether the plugin may take a format other than LINEAR: it overrides
    ``supports_format_combination`` (``supports_format`` for IPluginV2 / IPluginV2Ext)
    rather than keeping the LINEAR-only default. A quick test, so that the formats pass
    asks nothing of the plugins that cannot answer yes (nearly all)."""
    from ._base import OnnxPlugin
    from ._v3 import IPluginV3OneBuild

    if isinstance(plugin, V3Plugin):
        return type(plugin.build).supports_format_combination is not \
            IPluginV3OneBuild.supports_format_combination
    if isinstance(plugin, IPluginV2DynamicExt):
        return type(plugin).supports_format_combination not in (
            OnnxPlugin.supports_format_combination,
            IPluginV2DynamicExt.supports_format_combination)
    return type(plugin).supports_format is not IPluginV2.supports_format


def supports_at(plugin: IPluginV2, pos: int, in_out: Sequence[PluginTensorDesc],
                num_inputs: int) -> bool:
    """Whether the plugin takes ``in_out[pos]`` (type and format) in this combination."""
    if isinstance(plugin, IPluginV2DynamicExt):
        return bool(plugin.supports_format_combination(pos, in_out, num_inputs))
    return bool(plugin.supports_format(in_out[pos].dtype, in_out[pos].format))


def format_combination(plugin: IPluginV2,
                       descs: Sequence[tuple[tuple[int, ...], DataType] | None],
                       num_inputs: int, eligible: Sequence[bool], fmt: TensorFormat
                       ) -> list[TensorFormat] | None:
    """The formats, per position (inputs then outputs), the plugin takes when offered ``fmt``
    wherever ``eligible`` (LINEAR elsewhere): position by position, as TensorRT's builder
    asks ``supportsFormatCombination`` (the positions before ``pos`` are settled, the later
    ones hold the candidate), ``fmt`` where the plugin takes it there, else LINEAR. None
    where the plugin takes neither at some position, or takes ``fmt`` nowhere.

    ``descs`` shapes hold -1 for a dimension unknown at build time; an absent input (None)
    is not asked about. An IPluginV2 or IPluginV2Ext has one format for all its
    tensors (``supports_format``): ``fmt`` everywhere or nothing."""
    chosen = [fmt if ok else TensorFormat.LINEAR for ok in eligible]
    if not isinstance(plugin, IPluginV2DynamicExt):
        if not all(eligible) or not all(plugin.supports_format(d[1], fmt)
                                        for d in descs if d is not None):
            return None
        return chosen
    filled = [d if d is not None else ((), DataType.FLOAT) for d in descs]
    # the descriptions made once, the asked position's remade per option (each question
    # still gets a list of its own)
    given = [PluginTensorDesc(s, t, f) for (s, t), f in zip(filled, chosen, strict=True)]
    for pos in range(len(descs)):
        if descs[pos] is None:
            continue
        shape, dtype = filled[pos]
        for option in dict.fromkeys([chosen[pos], TensorFormat.LINEAR]):
            chosen[pos] = option
            if given[pos].format is not option:
                given[pos] = PluginTensorDesc(shape, dtype, option)
            if plugin.supports_format_combination(pos, list(given), num_inputs):
                break
        else:
            return None
    return chosen if fmt in chosen else None


def workspace_size(plugin: IPluginV2,
                   in_descs: Sequence[tuple[tuple[int, ...], DataType] | None],
                   out_descs: Sequence[tuple[tuple[int, ...], DataType]],
                   in_formats: Formats = None, out_formats: Formats = None) -> int:
    """The plugin's workspace for these (logical) shapes and the formats the engine runs
    them in (LINEAR where not given): a node running blocked may need none."""
    if isinstance(plugin, IPluginV2DynamicExt):
        return int(plugin.get_workspace_size(
            [PluginTensorDesc(d[0], d[1], _fmt(in_formats, k))  # type: ignore[misc]
             if d is not None else None for k, d in enumerate(in_descs)],
            [PluginTensorDesc(s, t, _fmt(out_formats, k))
             for k, (s, t) in enumerate(out_descs)]))
    return int(plugin.get_workspace_size(1))


# -- construction -------------------------------------------------------------------------
def _made(plugin: IPluginV2, creator: IPluginCreator, subgraphs: SubgraphFactory | None
          ) -> IPluginV2:
    plugin = as_v2(plugin)
    plugin.plugin_namespace = creator.plugin_namespace
    runner = subgraphs_of(plugin)
    if subgraphs is not None and runner is not None:
        runner.attach_subgraphs(subgraphs)
    return plugin


def create(creator: IPluginCreator, name: str, fields: PluginFieldCollection,
           subgraphs: SubgraphFactory | None = None) -> IPluginV2:
    """A creator's plugin for a node, as the engine runs it (a V3 plugin wrapped), with the
    services it declares it uses attached (``subgraphs``)."""
    return _made(creator.create_plugin(name, fields), creator, subgraphs)


def deserialize(creator: IPluginCreator, name: str, data: bytes,
                subgraphs: SubgraphFactory | None = None) -> IPluginV2:
    """A plugin rebuilt from an engine file's bytes, as the engine runs it."""
    return _made(creator.deserialize_plugin(name, data), creator, subgraphs)


def clone(plugin: IPluginV2) -> IPluginV2:
    """A copy for another execution context, with the same services attached."""
    twin = plugin.clone()
    runner, twin_runner = subgraphs_of(plugin), subgraphs_of(twin)
    if runner is not None and runner.subgraphs is not None and twin_runner is not None:
        twin_runner.attach_subgraphs(runner.subgraphs)
    return twin


# -- optional abilities: the one place the core asks for them ------------------------------
def ability_of(plugin: IPluginV2, interface: type[A]) -> A | None:
    """The plugin as ``interface`` (a row of ``CAPABILITIES``), when it has that ability:
    it derives from the interface (a V3 plugin: its build or runtime object does) and, where
    the row says how, uses it (a plugin class may derive from every interface)."""
    if not isinstance(plugin, interface):
        return None
    entry = cap.BY_INTERFACE[interface]
    return plugin if entry.in_use is None or entry.in_use(plugin) else None


def values_of(plugin: IPluginV2) -> cap.IValueInference | None:
    return ability_of(plugin, cap.IValueInference)


def fusion_of(plugin: IPluginV2) -> cap.IFusion | None:
    """The plugin's fusion ability, when it has operators it may absorb."""
    return ability_of(plugin, cap.IFusion)


def packing_of(plugin: IPluginV2) -> cap.IConstantPacking | None:
    return ability_of(plugin, cap.IConstantPacking)


def tactics_of(plugin: IPluginV2) -> cap.ITactics | None:
    return ability_of(plugin, cap.ITactics)


def dynamic_of(plugin: IPluginV2) -> cap.IDataDependentShapes | None:
    """The plugin, when its output shapes depend on values known only at run time."""
    return ability_of(plugin, cap.IDataDependentShapes)


def is_data_dependent(plugin: IPluginV2) -> bool:
    return dynamic_of(plugin) is not None


def bound_run_of(plugin: IPluginV2) -> cap.IBoundRun | None:
    return ability_of(plugin, cap.IBoundRun)


def in_place_of(plugin: IPluginV2) -> cap.IInPlaceInputs | None:
    return ability_of(plugin, cap.IInPlaceInputs)


def subgraphs_of(plugin: IPluginV2) -> IUsesSubgraphs | None:
    return ability_of(plugin, IUsesSubgraphs)


def may_fold(plugin: IPluginV2) -> bool:
    """Whether the builder may replace the plugin's node by constants (it is not
    ``INondeterministic``)."""
    return ability_of(plugin, cap.INondeterministic) is None


def graph_safe(plugin: IPluginV2) -> bool:
    """Whether a run may be captured as a device graph with this plugin in it (a plugin
    that does not say is trusted, as TensorRT trusts an enqueue)."""
    safety = ability_of(plugin, cap.IGraphSafety)
    return safety is None or safety.graph_safe


def _accepted(plugin: IPluginV2, pos: int) -> str:
    declared = ability_of(plugin, cap.IValueKinds)
    kinds = declared.input_kinds if declared is not None else ()
    return kinds[min(pos, len(kinds) - 1)] if kinds else "tensor"


def refused_kind(plugin: IPluginV2, in_kinds: Sequence[ValueKind | None]) -> str | None:
    """Why the plugin cannot take inputs of these kinds (None: it can)."""
    for pos, kind in enumerate(in_kinds):
        if kind is None:
            continue
        want = _accepted(plugin, pos)
        if want != "any" and kind.outer not in want.split("|"):
            return (f"input {pos} is a {kind.type_string(None).replace('tensor(?)', 'tensor')}"
                    f", the plugin takes {want.replace('|', ' or ')} there")
    return None


def output_kinds(plugin: IPluginV2, inputs: Sequence[ValueSpec | None]) -> list[ValueKind]:
    """The kind of each output (``IValueKinds``; tensors for a plugin without it)."""
    kinds: list[ValueKind] = []
    declared = ability_of(plugin, cap.IValueKinds)
    if declared is not None:
        kinds = list(declared.output_kinds(inputs) or [])
    kinds += [TENSOR] * (plugin.num_outputs - len(kinds))
    return kinds[: plugin.num_outputs]


def check_kinds(plugin: IPluginV2, in_kinds: Sequence[ValueKind | None],
                out_kinds: Sequence[ValueKind], where: str) -> None:
    """A plugin that takes or gives a value that is not a tensor must be data-dependent:
    such values are returned by the node, never planned in an arena."""
    if any(k is not None and not k.is_tensor for k in [*in_kinds, *out_kinds]) and \
            not is_data_dependent(plugin):
        raise PluginInterfaceError(
            f"{where}: the plugin takes or gives sequences, optionals or maps but is not "
            "data-dependent; such values are returned by the node (IDataDependentShapes)")
