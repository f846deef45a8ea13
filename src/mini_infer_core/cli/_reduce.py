"""``mini-infer debug reduce``'s search: shrink a model to a small subgraph that still fails a
check, by bisection over the graph as Polygraphy's ``debug reduce --mode bisect`` does.

Two passes over the main graph's nodes, in their (topological) order:

1. **outputs**: the smallest ``k`` such that the model cut after node ``k`` (its outputs the
   graph's outputs, only their ancestors kept) still fails;
2. **inputs**: among the nodes that model keeps, the largest ``j`` such that nodes ``j..`` alone
   (what earlier nodes computed fed as graph inputs) still fail.

The values fed at a cut are what the whole model computes there on the given inputs, taken
from an independent backend (onnxruntime, else onnx's ReferenceEvaluator), so that a subgraph
sees the inputs it would see inside the model. Like Polygraphy's bisection, each pass assumes
that a failure, once some node is included, stays (true of a wrong node's error propagating);
the result is checked, never assumed: a reduced model is only written if it fails.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InputError, MiniInferError

__all__ = ["Reduction", "free_names", "reduce_model", "subgraph"]

#: a check: does this model fail on these inputs?
Check = Callable[[Any, dict[str, np.ndarray[Any, Any]]], bool]


@dataclass
class Reduction:
    """What the search found: the reduced model, its inputs, and the checks it made."""

    model: Any
    feeds: dict[str, np.ndarray[Any, Any]]
    nodes: list[str]
    original_nodes: int
    checks: list[dict[str, Any]] = field(default_factory=list)


def free_names(graph: Any) -> set[str]:
    """The names a (sub)graph reads from outside itself: inputs of its nodes, and of the graphs
    in their attributes, that none of its nodes, inputs or initializers define."""
    defined = {i.name for i in graph.input} | {t.name for t in graph.initializer}
    used: set[str] = set()
    for node in graph.node:
        used.update(_node_inputs(node))
        defined.update(o for o in node.output if o)
    return used - defined


def _node_inputs(node: Any) -> list[str]:
    """A node's inputs, with what its subgraph attributes read from outside them."""
    names = [i for i in node.input if i]
    for attr in node.attribute:
        for g in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
            names.extend(sorted(free_names(g)))
    return names


def _value_info(name: str, value: Any) -> Any:
    from onnx import helper

    arr = np.asarray(value)
    return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(arr.dtype),
                                         list(arr.shape))


def subgraph(model: Any, nodes: Iterable[int], outputs: list[str],
             values: Mapping[str, Any]) -> tuple[Any, dict[str, np.ndarray[Any, Any]]]:
    """A model of the main graph's ``nodes`` (indices) computing ``outputs``: what those nodes
    read and none of them makes becomes a graph input (fed with ``values``) unless it is an
    initializer; only the initializers they read are kept. Returns the model and its feeds."""
    import onnx

    g = model.graph
    kept = [g.node[i] for i in sorted(nodes)]
    made = {o for n in kept for o in n.output if o}
    inits = {t.name: t for t in g.initializer}
    reads: list[str] = []
    for n in kept:
        reads.extend(x for x in _node_inputs(n) if x not in made and x not in reads)
    feeds = {x: np.asarray(values[x]) for x in reads if x not in inits}
    graph = onnx.helper.make_graph(
        kept, f"{g.name or 'graph'}_reduced",
        [_value_info(x, v) for x, v in feeds.items()],
        [_value_info(o, values[o]) for o in outputs],
        [inits[x] for x in reads if x in inits])
    reduced = onnx.helper.make_model(graph, opset_imports=list(model.opset_import),
                                     ir_version=model.ir_version)
    reduced.functions.extend(model.functions)
    return reduced, feeds


def _is_array(value: Any) -> bool:
    return isinstance(value, np.ndarray)


def reduce_model(model: Any, values: Mapping[str, Any], fails: Check,
                 log: Callable[[str], None] = lambda _: None) -> Reduction:
    """Bisect ``model`` (whose every tensor's value on the chosen inputs is in ``values``)
    down to a subgraph that ``fails``; an error if the whole model does not fail."""
    g = model.graph
    n = len(g.node)
    checks: list[dict[str, Any]] = []

    def attempt(stage: str, nodes: list[int], outputs: list[str]) -> bool:
        sub, feeds = subgraph(model, nodes, outputs, values)
        failed = fails(sub, feeds)
        checks.append({"stage": stage, "nodes": len(nodes), "failed": failed})
        log(f"  {stage}: {len(nodes)} node(s) -> {'fails' if failed else 'passes'}")
        return failed

    outputs = [o.name for o in g.output]
    if not attempt("whole model", list(range(n)), outputs):
        raise InputError("the whole model passes the check: there is no failure to reduce "
                         "(check the command, the inputs or the tolerances)")
    # pass 1: the smallest prefix, cut after node k, that still fails
    def ancestors(k: int) -> list[int]:
        maker = {o: i for i, nd in enumerate(g.node[: k + 1]) for o in nd.output if o}
        keep, todo = set(), [k]
        while todo:
            i = todo.pop()
            if i in keep:
                continue
            keep.add(i)
            todo.extend(maker[x] for x in _node_inputs(g.node[i]) if x in maker)
        return sorted(keep)

    def cut_outputs(k: int) -> list[str]:
        return [o for o in g.node[k].output if o and _is_array(values.get(o))]

    cuts = [k for k in range(n) if cut_outputs(k)]
    best_nodes, best_outputs = list(range(n)), outputs
    lo, hi = 0, len(cuts) - 1
    if cuts and attempt("outputs", ancestors(cuts[hi]), cut_outputs(cuts[hi])):
        best_nodes, best_outputs = ancestors(cuts[hi]), cut_outputs(cuts[hi])
        while lo < hi:  # invariant: cuts[hi] fails
            mid = (lo + hi) // 2
            if attempt("outputs", ancestors(cuts[mid]), cut_outputs(cuts[mid])):
                hi = mid
            else:
                lo = mid + 1
        best_nodes, best_outputs = ancestors(cuts[hi]), cut_outputs(cuts[hi])
    # pass 2: the shortest suffix of those nodes that still fails with its inputs fed
    def feedable(j: int) -> bool:
        made = {o for i in best_nodes[j:] for o in g.node[i].output if o}
        inits = {t.name for t in g.initializer}
        return all(_is_array(values.get(x)) for i in best_nodes[j:]
                   for x in _node_inputs(g.node[i]) if x not in made and x not in inits)

    starts = [j for j in range(len(best_nodes)) if j == 0 or feedable(j)]
    lo, hi = 0, len(starts) - 1  # invariant: starts[lo] fails (0: the pass-1 result)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if attempt("inputs", best_nodes[starts[mid]:], best_outputs):
            lo = mid
        else:
            hi = mid - 1
    final = best_nodes[starts[lo]:]
    reduced, feeds = subgraph(model, final, best_outputs, values)
    if not fails(reduced, feeds):  # a flaky check: say so rather than write a passing model
        raise MiniInferError("the reduced model passes the check on a second run: the check "
                             "is not deterministic; make it so (a fixed --seed, a "
                             "deterministic command) and reduce again")
    names = [g.node[i].name or f"<{g.node[i].op_type} #{i}>" for i in final]
    return Reduction(reduced, feeds, names, n, checks)
