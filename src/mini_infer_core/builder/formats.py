"""The formats pass: each node's tensor formats, negotiated with its plugin, and Reformat
steps where neighbours disagree (TensorRT's format negotiation; ``TensorFormat`` lists the
formats).

1. **Ask.** For each node and each format ``F`` (CHW16, CHW8, CHW4, HWC, in that order of
   preference), the plugin is asked position by position, as TensorRT asks
   ``supportsFormatCombination``, whether it takes ``F`` there (``adapter.format_combination``).
   ``F`` is offered only where a tensor can hold it: an activation or graph input of rank 3
   or more (a blocked format: with a known channel count); constants, absent inputs,
   sequences and the core steps (Copy, Cast) stay LINEAR. A plugin that says nothing
   (``OnnxPlugin``'s default, every third-party plugin today) takes LINEAR only. When no node
   takes any other format the pass changes nothing.
2. **Choose**, by a cost model counted in elements moved: a Reformat step costs the elements
   of its tensor; a node that runs in a format other than LINEAR saves :data:`BLOCKED_GAIN`
   times its outputs' elements (the plugin offers the format because it computes faster
   there; this is the assumption timing would replace). First, per format, each connected
   group of nodes that take it (linked by tensors both sides hold in it) switches as a whole
   where that lowers the cost; then each node alone, a few sweeps, takes the cheapest of its
   combinations. A run of one or two such nodes between LINEAR ones therefore stays LINEAR
   (two reformats cost more than they save); longer runs, and runs that share their inputs,
   go blocked with reformats only at their edges. The choice is deterministic: builds of a
   model make the same engine. With tactic timing on, format_timing.py times the groups
   instead (their nodes and the Reformat steps that serve them against LINEAR).
3. **Insert** a ``Reformat`` step before each read of a tensor in a format other than its
   producer's (one per tensor and format, shared by its readers): the plugin of the best
   creator registered for ``mini_infer.core::Reformat`` that takes the combination (fields
   ``src``, ``dst``; cpu_native's is compiled), else the core's (engine/builtins.py).
   Graph inputs and outputs stay LINEAR: an output produced in another format is renamed
   ``NAME@FORMAT`` and reformatted into ``NAME``.
4. **Configure** the plugins again with the formats chosen (``configure_build``); the
   engine's tensors record their format (the engine file's ``"format"``), the runtime
   allocates each in its format's physical shape and tells every plugin its formats.

``BuilderConfig(negotiate_formats=False)`` keeps every tensor LINEAR. Engines with
data-dependent nodes are not negotiated (their segments plan shapes at run time).
"""

from __future__ import annotations

from collections.abc import Iterable

from .._record import record, replace
from .._version import __version__
from ..engine.builtins import CORE_NAMESPACE, ReformatPlugin
from ..engine.engine import EngineNode
from ..plugin import DataType, DimsExprs, IPluginV2, TensorFormat, fields_from_values
from ..plugin import _adapter as adapter
from ..plugin._layouts import may_take
from .state import BuildState

__all__ = ["BLOCKED_GAIN", "CANDIDATES", "FormatPlan", "apply_formats", "negotiate_formats"]

LINEAR = TensorFormat.LINEAR
#: the formats offered to plugins, most preferred first
CANDIDATES = (TensorFormat.CHW16, TensorFormat.CHW8, TensorFormat.CHW4, TensorFormat.HWC)
#: what a node running in a format other than LINEAR is assumed to save, in elements per
#: output element (a Reformat step costs 1 per element)
BLOCKED_GAIN = 1.0
#: sweeps of the per-node refinement
SWEEPS = 3

Combo = tuple[TensorFormat, ...]


def negotiate_formats(state: BuildState) -> None:
    """The formats pass (see the module's text): sets ``state.formats`` and inserts the
    Reformat steps into ``state.nodes``."""
    if not getattr(state.config, "negotiate_formats", True) or any(
            adapter.is_data_dependent(nd.plugin) for nd in state.nodes):
        return
    options = {i: combos for i, nd in enumerate(state.nodes)
               if (combos := _combinations(state, nd))}
    if not options:
        return
    choice = _choose(state, options)
    state.format_plan = FormatPlan(list(state.nodes), options, _widest(state, options), choice)
    if choice:
        apply_formats(state, choice)


@record
class FormatPlan:
    """What the timing of formats (format_timing.py) starts from: the nodes before any
    Reformat step, each node's combinations, and the groups of nodes that take a format
    (``(format, {node index: combination})``, each node in the first group that takes it)."""

    nodes: list[EngineNode]
    options: dict[int, list[Combo]]
    groups: list[tuple[TensorFormat, dict[int, Combo]]]
    #: the cost model's choice
    chosen: dict[int, Combo]


def _widest(state: BuildState, options: dict[int, list[Combo]]
            ) -> list[tuple[TensorFormat, dict[int, Combo]]]:
    """Every node in the most preferred format it takes, as connected groups."""
    costs = _Costs(state, {})
    seen: set[int] = set()
    groups = []
    for fmt in CANDIDATES:
        takes = {i: c for i, combos in options.items() for c in combos if fmt in c}
        for group in _groups(state.nodes, takes, costs):
            members = {i: takes[i] for i in group if i not in seen}
            if members:
                seen.update(members)
                groups.append((fmt, members))
    return groups


def _shape(state: BuildState, name: str) -> tuple[int, ...]:
    return tuple(d.get_constant_value() if d.is_constant() else -1 for d in state.dims[name])


def _eligible(state: BuildState, name: str) -> bool:
    """Whether a tensor may be held in another format than LINEAR (before asking which)."""
    return bool(name) and name not in state.constants and name not in state.kinds and \
        state.types[name] is not DataType.STRING and len(state.dims[name]) >= 3


def _combinations(state: BuildState, nd: EngineNode) -> list[Combo]:
    """The node's combinations other than all-LINEAR, one per candidate format it takes."""
    if nd.domain == CORE_NAMESPACE or not adapter.offers_formats(nd.plugin):
        return []
    names = [*nd.inputs, *nd.outputs]
    if not any(_eligible(state, n) for n in names):
        return []
    descs = [(_shape(state, n), state.types[n]) if n else None for n in names]
    # each tensor's shape (None: unknown) where it may leave LINEAR, else None: found once,
    # asked of every candidate format
    known = [[None if x < 0 else x for x in d[0]] if d is not None and _eligible(state, n)
             else None for n, d in zip(names, descs, strict=True)]
    found: list[Combo] = []
    for fmt in CANDIDATES:
        eligible = [shape is not None and may_take(shape, fmt) for shape in known]
        if not any(eligible):
            continue
        combo = adapter.format_combination(nd.plugin, descs, len(nd.inputs), eligible, fmt)
        if combo is not None and tuple(combo) not in found:
            found.append(tuple(combo))
    return found


def _elements(state: BuildState, name: str) -> int:
    n = 1
    for d in state.dims[name]:
        n *= d.get_constant_value() if d.is_constant() else 1
    return n


class _Costs:
    """The cost model over the current choice (``choice``: node index -> combination; the
    nodes not in it run all-LINEAR)."""

    def __init__(self, state: BuildState, choice: dict[int, Combo]) -> None:
        self.state, self.choice = state, choice
        self.producer: dict[str, tuple[int, int]] = {}
        self.readers: dict[str, list[tuple[int, int]]] = {}
        for i, nd in enumerate(state.nodes):
            for pos, o in enumerate(nd.outputs):
                self.producer[o] = (i, len(nd.inputs) + pos)
            for pos, x in enumerate(nd.inputs):
                if x:
                    self.readers.setdefault(x, []).append((i, pos))
        self.outputs = set(state.output_names)
        #: each tensor's element count, counted once (the sweeps ask for it again and again)
        self.elements: dict[str, int] = {}

    def count(self, name: str) -> int:
        n = self.elements.get(name)
        if n is None:
            n = self.elements[name] = _elements(self.state, name)
        return n

    def at(self, i: int, pos: int) -> TensorFormat:
        combo = self.choice.get(i)
        return combo[pos] if combo is not None else LINEAR

    def tensor(self, name: str) -> float:
        made = self.at(*self.producer[name]) if name in self.producer else LINEAR
        wanted = {self.at(i, pos) for i, pos in self.readers.get(name, [])}
        if name in self.outputs:
            wanted.add(LINEAR)
        return float(self.count(name) * len(wanted - {made}))

    def node(self, i: int) -> float:
        combo = self.choice.get(i)
        if combo is None or all(f is LINEAR for f in combo):
            return 0.0
        return -BLOCKED_GAIN * sum(self.count(o) for o in self.state.nodes[i].outputs)

    def of(self, nodes: Iterable[int]) -> float:
        nodes = list(nodes)
        touched = {n for i in nodes for n in (*self.state.nodes[i].inputs,
                                               *self.state.nodes[i].outputs) if n}
        return sum(self.node(i) for i in nodes) + sum(self.tensor(n) for n in touched)


def _choose(state: BuildState, options: dict[int, list[Combo]]) -> dict[int, Combo]:
    choice: dict[int, Combo] = {}
    costs = _Costs(state, choice)
    nodes = state.nodes
    for fmt in CANDIDATES:
        takes = {i: c for i, combos in options.items() for c in combos if fmt in c}
        for group in _groups(nodes, takes, costs):
            group = [i for i in group if i not in choice]
            if not group:
                continue
            before = costs.of(group)
            for i in group:
                choice[i] = takes[i]
            if costs.of(group) >= before:
                for i in group:
                    del choice[i]
    for _ in range(SWEEPS):
        changed = False
        for i, combos in options.items():
            current = choice.get(i)
            best, best_cost = current, costs.of([i])
            for combo in [None, *combos]:
                if combo == current:
                    continue
                _set(choice, i, combo)
                cost = costs.of([i])
                if cost < best_cost:
                    best, best_cost = combo, cost
            _set(choice, i, best)
            changed |= best != current
        if not changed:
            break
    return choice


def _set(choice: dict[int, Combo], i: int, combo: Combo | None) -> None:
    if combo is None:
        choice.pop(i, None)
    else:
        choice[i] = combo


def _groups(nodes: list[EngineNode], takes: dict[int, Combo], costs: _Costs
            ) -> list[list[int]]:
    """The connected groups of ``takes``' nodes: linked by a tensor its producer gives and a
    reader takes in another format than LINEAR (both in their ``takes`` combination)."""
    parent = {i: i for i in takes}

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for name, (i, out_pos) in costs.producer.items():
        if i not in takes or takes[i][out_pos] is LINEAR:
            continue
        for j, pos in costs.readers.get(name, []):
            if j in takes and takes[j][pos] is not LINEAR:
                parent[root(j)] = root(i)
    groups: dict[int, list[int]] = {}
    for i in sorted(takes):
        groups.setdefault(root(i), []).append(i)
    return list(groups.values())


def _reformatter(state: BuildState, have: TensorFormat, want: TensorFormat,
                 desc: tuple[DimsExprs, DataType], device: str
                 ) -> tuple[IPluginV2, tuple[str, str, str, str | None, str | None]]:
    """The plugin of a Reformat step and its record's key (name, version, namespace,
    distribution and its version): the best plugin registered for the core's ``Reformat`` on
    ``device`` that takes this combination (a compiled one is faster than the core's NumPy
    copy: cpu_native's), else the core's :class:`ReformatPlugin`. A plugin is created with
    the fields ``src`` and ``dst`` (the formats' values) and asked as any node is."""
    shape = tuple(d.get_constant_value() if d.is_constant() else -1 for d in desc[0])
    fields = fields_from_values({"src": have.value, "dst": want.value})
    for rec in state.registry.candidates(CORE_NAMESPACE, "Reformat", device):
        try:
            plugin = rec.creator.create_plugin("Reformat", fields)
            taken = adapter.format_combination(plugin, [(shape, desc[1])] * 2, 1,
                                               [True, True], have if have is not LINEAR
                                               else want)
        except Exception as exc:  # noqa: BLE001 - a plugin's failure: the core's step serves
            state.info.setdefault("reformat_refusals", {})[rec.provider] = str(exc)[:200]
            continue
        if taken == [have, want]:
            c = rec.creator
            return plugin, (c.name, c.plugin_version, c.plugin_namespace, rec.distribution,
                            rec.distribution_version)
    return ReformatPlugin(have, want), ("Reformat", "1", CORE_NAMESPACE, "mini-infer-core",
                                        __version__)


def apply_formats(state: BuildState, choice: dict[int, Combo]) -> dict[str, int]:
    """Make ``state.nodes`` the nodes of ``state.format_plan`` with the formats of ``choice``
    (node index -> combination; the others LINEAR): Reformat steps inserted, every tensor's
    format in ``state.formats``, the plugins configured for theirs. Returns, per Reformat
    step, the index of the node it serves (its reader, or its producer where it reformats to
    LINEAR)."""
    plan = state.format_plan
    assert plan is not None
    formats = state.formats = {}
    served: dict[str, int] = {}
    outputs = set(state.output_names)
    made: dict[tuple[str, TensorFormat], str] = {}
    #: a graph output produced in another format -> the name its producer now writes
    source: dict[str, str] = {}
    out: list[EngineNode] = []

    def step(src: str, have: TensorFormat, want: TensorFormat, name: str, device: str
             ) -> None:
        state.dims[name], state.types[name] = state.dims[src], state.types[src]
        if want is not LINEAR:
            formats[name] = want
        desc = [(state.dims[src], state.types[src])]
        plugin, key = _reformatter(state, have, want, desc[0], device)
        adapter.configure_build(plugin, desc, desc, [have], [want])
        out.append(EngineNode(
            f"reformat {src} {have.value}->{want.value}", "Reformat", CORE_NAMESPACE, 1,
            device, plugin, *key, (src,), (name,)))

    producer = {o: i for i, nd in enumerate(plan.nodes) for o in nd.outputs}
    for i, nd in enumerate(plan.nodes):
        combo = choice.get(i)
        inputs = []
        for pos, x in enumerate(nd.inputs):
            want = combo[pos] if combo is not None else LINEAR
            held = source.get(x, x)  # the name holding x in its producer's format
            have = formats.get(held, LINEAR) if x else LINEAR
            if not x or want is have:
                inputs.append(held)
            elif want is LINEAR and x in source:
                inputs.append(x)
            else:
                if (x, want) not in made:
                    made[(x, want)] = f"{x}@{want.value}"
                    step(held, have, want, made[(x, want)], nd.device)
                    served[out[-1].name] = i if want is not LINEAR else producer[x]
                inputs.append(made[(x, want)])
        names = []
        for pos, o in enumerate(nd.outputs):
            fmt = combo[len(nd.inputs) + pos] if combo is not None else LINEAR
            if fmt is not LINEAR and o in outputs:
                source[o] = f"{o}@{fmt.value}"
                state.dims[source[o]], state.types[source[o]] = state.dims[o], state.types[o]
            names.append(source.get(o, o))
            if fmt is not LINEAR:
                formats[names[-1]] = fmt
        out.append(replace(nd, inputs=tuple(inputs), outputs=tuple(names)))
        for o in nd.outputs:
            if o in source:
                step(source[o], formats[source[o]], LINEAR, o, nd.device)
                served[out[-1].name] = i
        if i in plan.options:  # configured again: an earlier choice may have differed
            adapter.configure_build(
                nd.plugin, [(state.dims[x], state.types[x]) if x else None for x in inputs],
                [(state.dims[o], state.types[o]) for o in names],
                combo[: len(nd.inputs)] if combo else None,
                combo[len(nd.inputs):] if combo else None)
    counts: dict[str, int] = {}
    for fmt in formats.values():
        counts[fmt.value] = counts.get(fmt.value, 0) + 1
    if counts:
        state.info["formats"] = {
            "reformats": sum(1 for nd in out if nd.op_type == "Reformat"
                             and nd.domain == CORE_NAMESPACE),
            "tensors": dict(sorted(counts.items()))}
    else:
        state.info.pop("formats", None)
    state.nodes = out
    return served
