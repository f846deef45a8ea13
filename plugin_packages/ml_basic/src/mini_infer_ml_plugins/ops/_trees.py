"""Tree ensembles made into flat arrays once, then walked for every row at once.

:func:`legacy_forest` (TreeEnsembleRegressor/Classifier, node and weight lists keyed by tree
and node id) and :func:`v5_forest` (TreeEnsemble of opset 5, indices and leaf arrays) give
one :class:`Forest`: every node of every tree in one table (feature, threshold, mode,
true/false child; a leaf's children are the range of its weights), the roots, and the leaf
weights (target, value). Its indices are checked when it is made (children, weights and
targets in range, no cycle), so the walks trust them.

:func:`evaluate` folds the leaves each row reaches into per-target scores (SUM, MIN or MAX)
and says which targets received a weight (onnxruntime's ``has_score``, which the
classifiers' binary rules read). It runs the compiled walk (``_ctrees.c``, blocks of rows
over every tree, rows split across threads) where that library was built and the forest has
no set-membership node, else the NumPy walk: all (row, tree) pairs of a chunk of trees one
level at a time, arrays of node ids, pairs that reached a leaf dropped as they go.
``MINI_INFER_ML_TREES=numpy`` forces the NumPy walk.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import Any

import numpy as np

from mini_infer_core.plugin.arrays import NDArray

__all__ = ["AGG_MAX", "AGG_MIN", "AGG_SUM", "Forest", "compiled_available", "evaluate",
           "legacy_forest", "v5_forest", "walk_call", "walk_into"]

Array = NDArray[Any]

LEAF, LEQ, LT, GTE, GT, EQ, NEQ, MEMBER = range(8)
AGG_SUM, AGG_MIN, AGG_MAX = range(3)
_LEGACY_MODES = {"LEAF": LEAF, "BRANCH_LEQ": LEQ, "BRANCH_LT": LT, "BRANCH_GTE": GTE,
                 "BRANCH_GT": GT, "BRANCH_EQ": EQ, "BRANCH_NEQ": NEQ}
#: pairs (row, tree) the NumPy walk holds at once
_CHUNK = 1 << 20
#: rows per thread below which the compiled walk does not split the rows, and the (row, tree)
#: pairs below which it does not even ask how many threads it may use (that costs ~ms)
_ROWS_PER_THREAD = 256
_PAIRS_PER_THREAD = 100_000


class ForestError(ValueError):
    """The attributes do not describe a valid ensemble (the message says what is wrong)."""


@dataclass
class Forest:
    feat: Array  # int32 [M]
    thr: Array  # float64 [M]
    mode: Array  # uint8 [M]
    tc: Array  # int32 [M]: true child, or a leaf's first weight
    fc: Array  # int32 [M]: false child, or a leaf's weight count
    mt: Array  # uint8 [M]: a NaN takes the true branch
    roots: Array  # int32 [T]
    wt_target: Array  # int32 [W]
    wt_value: Array  # float64 [W]
    n_targets: int
    members: dict[int, Array] = field(default_factory=dict)
    depth: int = 0
    packed: dict[str, Array] = field(default_factory=dict)
    nodes_by_type: dict[Any, Array] = field(default_factory=dict)
    weights_by_type: dict[Any, Array] = field(default_factory=dict)

    @property
    def n_trees(self) -> int:
        return len(self.roots)

    @cached_property
    def n_features(self) -> int:
        """Features the trees read (the largest feature id + 1)."""
        branch = self.mode != LEAF
        return int(self.feat[branch].max()) + 1 if branch.any() else 0

    @cached_property
    def is_fast(self) -> bool:
        """Every branch x <= t, no NaN rule: the compiled walk's fast loop."""
        branch = self.mode != LEAF
        return bool((self.mode[branch] == LEQ).all() and not self.mt[branch].any())

    def fast(self) -> bool:
        return self.is_fast

    def weights(self, dtype: Any) -> Array:
        """The leaf weights in ``dtype`` (kept per type)."""
        got = self.weights_by_type.get(dtype)
        if got is None:
            got = self.weights_by_type[np.dtype(dtype)] = self.wt_value.astype(dtype)
        return got

    def check(self) -> Forest:
        """Validate the indices and find the depth (refuses cycles)."""
        m, w = len(self.mode), len(self.wt_value)
        branch = self.mode != LEAF
        for name, idx in (("true", self.tc[branch]), ("false", self.fc[branch])):
            if idx.size and (idx.min() < 0 or idx.max() >= m):
                raise ForestError(f"a {name} child is not a node of the ensemble")
        leaf = ~branch
        start, count = self.tc[leaf].astype(np.int64), self.fc[leaf].astype(np.int64)
        if start.size and (start.min() < 0 or count.min() < 0 or (start + count).max() > w):
            raise ForestError("leaf weights out of range")
        if w and (self.wt_target.min() < 0 or self.wt_target.max() >= self.n_targets):
            raise ForestError(f"a weight's target is not below n_targets={self.n_targets}")
        if (self.feat[branch] < 0).any():
            raise ForestError("a negative feature id")
        if self.roots.size and (self.roots.min() < 0 or self.roots.max() >= m):
            raise ForestError("a tree root is not a node of the ensemble")
        frontier, depth = np.unique(self.roots), 0
        while frontier.size:
            inner = frontier[branch[frontier]]
            if not inner.size:
                break
            depth += 1
            if depth > m:
                raise ForestError("the trees have a cycle")
            frontier = np.unique(np.concatenate([self.tc[inner], self.fc[inner]]))
        self.depth = depth
        return self

    def nodes(self, dtype: Any) -> Array:
        """The node table in the compiled walk's layout for thresholds of ``dtype``."""
        got = self.nodes_by_type.get(dtype)  # dtype objects as keys: .name costs µs
        if got is not None:
            return got
        key = np.dtype(dtype).name
        if key not in self.packed:
            layout = np.dtype([("thr", dtype), ("feat", "<i4"), ("tc", "<i4"), ("fc", "<i4"),
                               ("mode", "u1"), ("mt", "u1"), ("pad", "u1", (2,))], align=True)
            packed = np.zeros(len(self.mode), layout)
            packed["thr"], packed["feat"], packed["mode"], packed["mt"] = (
                self.thr.astype(dtype), np.where(self.mode == LEAF, 0, self.feat), self.mode,
                self.mt)  # a leaf reads feature 0 (the C walk's lanes read, then ignore it)
            packed["tc"], packed["fc"] = self.tc, self.fc
            self.packed[key] = packed
        self.nodes_by_type[np.dtype(dtype)] = self.packed[key]
        return self.packed[key]


def _ints(values: Any, n: int | None = None, default: int = 0) -> Array:
    if values is None or (not isinstance(values, np.ndarray) and not values):
        return np.full(n or 0, default, np.int64)
    return np.asarray(values, np.int64).reshape(-1)


def _floats(*candidates: Any) -> Array:
    for c in candidates:
        if c is not None and (isinstance(c, np.ndarray) or len(c)):
            return np.asarray(c, np.float64).reshape(-1)
    return np.zeros(0, np.float64)


def legacy_forest(attrs: dict[str, Any], prefix: str, n_targets: int) -> Forest:
    """The forest of TreeEnsembleRegressor (``prefix`` "target") or TreeEnsembleClassifier
    ("class")."""
    tree_ids = _ints(attrs["nodes_treeids"])
    node_ids = _ints(attrs["nodes_nodeids"])
    m = len(tree_ids)
    modes_in = attrs["nodes_modes"] or ()
    if len(node_ids) != m or len(modes_in) != m:
        raise ForestError("nodes_treeids, nodes_nodeids and nodes_modes differ in length")
    try:
        mode = np.array([_LEGACY_MODES[s] for s in modes_in], np.uint8)
    except KeyError as exc:
        raise ForestError(f"unknown node mode {exc.args[0]!r}") from None
    thr = _floats(attrs.get("nodes_values_as_tensor"), attrs["nodes_values"])
    if not len(thr) and not (mode != LEAF).any():
        thr = np.zeros(m)  # only leaves: no thresholds needed
    if len(thr) != m:
        raise ForestError("nodes_values has not one value per node")
    span = int(node_ids.max()) + 1 if m else 1
    if m and node_ids.min() < 0:
        raise ForestError("a negative node id")
    keys = tree_ids * span + node_ids
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    if m > 1 and (np.diff(sorted_keys) == 0).any():
        raise ForestError("a node id appears twice in one tree")

    def find(trees: Array, nodes: Array, what: str) -> Array:
        k = trees * span + nodes
        pos = np.minimum(np.searchsorted(sorted_keys, k), max(m - 1, 0))
        ok = (nodes >= 0) & (nodes < span) & (sorted_keys[pos] == k) if m else nodes < 0
        if not np.all(ok):
            bad = int(np.flatnonzero(~ok)[0])
            raise ForestError(f"{what}: node {int(nodes[bad])} of tree {int(trees[bad])} "
                              "does not exist")
        return order[pos]

    branch = mode != LEAF
    tc = np.zeros(m, np.int64)
    fc = np.zeros(m, np.int64)
    tc[branch] = find(tree_ids[branch], _ints(attrs["nodes_truenodeids"], m)[branch],
                      "nodes_truenodeids")
    fc[branch] = find(tree_ids[branch], _ints(attrs["nodes_falsenodeids"], m)[branch],
                      "nodes_falsenodeids")
    mt = _ints(attrs["nodes_missing_value_tracks_true"], m).astype(np.uint8)
    if len(mt) != m:
        raise ForestError("nodes_missing_value_tracks_true has not one value per node")
    feat = _ints(attrs["nodes_featureids"], m)

    w_tree, w_node = _ints(attrs[f"{prefix}_treeids"]), _ints(attrs[f"{prefix}_nodeids"])
    w_target = _ints(attrs[f"{prefix}_ids"])
    w_value = _floats(attrs.get(f"{prefix}_weights_as_tensor"), attrs[f"{prefix}_weights"])
    if not len(w_tree) == len(w_node) == len(w_target) == len(w_value):
        raise ForestError(f"the {prefix}_* lists differ in length")
    leaf_of = find(w_tree, w_node, f"{prefix}_nodeids") if len(w_tree) else w_tree
    keep = mode[leaf_of] == LEAF  # onnxruntime ignores weights on branch nodes
    leaf_of, w_target, w_value = leaf_of[keep], w_target[keep], w_value[keep]
    by_leaf = np.argsort(leaf_of, kind="stable")
    counts = np.bincount(leaf_of, minlength=m)
    starts = np.cumsum(counts) - counts
    tc[~branch], fc[~branch] = starts[~branch], counts[~branch]

    _, first = np.unique(tree_ids, return_index=True)
    return Forest(feat=feat.astype(np.int32), thr=thr, mode=mode, tc=tc.astype(np.int32),
                  fc=fc.astype(np.int32), mt=mt, roots=np.sort(first).astype(np.int32),
                  wt_target=w_target[by_leaf].astype(np.int32),
                  wt_value=w_value[by_leaf], n_targets=n_targets).check()


def v5_forest(attrs: dict[str, Any]) -> Forest:
    """The forest of TreeEnsemble (opset 5): nodes first, then one node per leaf."""
    feat = _ints(attrs["nodes_featureids"])
    m = len(feat)
    modes = np.asarray(attrs["nodes_modes"], np.int64).reshape(-1)
    thr = _floats(attrs["nodes_splits"])
    true_ids, false_ids = _ints(attrs["nodes_truenodeids"]), _ints(attrs["nodes_falsenodeids"])
    true_leaf = _ints(attrs["nodes_trueleafs"]).astype(bool)
    false_leaf = _ints(attrs["nodes_falseleafs"]).astype(bool)
    if not all(len(a) == m for a in (modes, thr, true_ids, false_ids, true_leaf, false_leaf)):
        raise ForestError("the nodes_* attributes differ in length")
    if m and (modes.min() < 0 or modes.max() > MEMBER - 1):
        raise ForestError("a node mode is not one of 0..6")
    targets, weights = _ints(attrs["leaf_targetids"]), _floats(attrs["leaf_weights"])
    n_leaves = len(targets)
    if len(weights) != n_leaves:
        raise ForestError("leaf_targetids and leaf_weights differ in length")
    mt = _ints(attrs["nodes_missing_value_tracks_true"], m).astype(np.uint8)
    tc = np.where(true_leaf, true_ids + m, true_ids)
    fc = np.where(false_leaf, false_ids + m, false_ids)
    roots = _ints(attrs["tree_roots"])
    if roots.size and (roots.min() < 0 or roots.max() >= m):
        raise ForestError("a tree root is not a node")
    # a root whose two branches are one leaf is that tree's only leaf; onnxruntime and onnx's
    # reference take that leaf's weight at the root's index
    single = true_leaf[roots] & false_leaf[roots] & (true_ids[roots] == false_ids[roots])
    roots = np.where(single, roots + m, roots)
    members: dict[int, Array] = {}
    if (modes == MEMBER - 1).any():
        values = _floats(attrs.get("membership_values"))
        groups = np.split(values, np.flatnonzero(np.isnan(values)))
        sets = [g[~np.isnan(g)] for g in groups]
        for k, node in enumerate(np.flatnonzero(modes == MEMBER - 1).tolist()):
            if k >= len(sets):
                raise ForestError("membership_values has fewer sets than BRANCH_MEMBER nodes")
            members[node] = sets[k]
    return Forest(
        feat=np.concatenate([feat, np.zeros(n_leaves, np.int64)]).astype(np.int32),
        thr=np.concatenate([thr, np.zeros(n_leaves)]),
        mode=np.concatenate([modes + 1, np.zeros(n_leaves, np.int64)]).astype(np.uint8),
        tc=np.concatenate([tc, np.arange(n_leaves)]).astype(np.int32),
        fc=np.concatenate([fc, np.ones(n_leaves, np.int64)]).astype(np.int32),
        mt=np.concatenate([mt, np.zeros(n_leaves, np.uint8)]),
        roots=roots.astype(np.int32), wt_target=targets.astype(np.int32), wt_value=weights,
        n_targets=int(attrs["n_targets"]), members=members).check()


# -- the compiled walk ------------------------------------------------------------------------
def _load() -> Any:
    if os.environ.get("MINI_INFER_ML_TREES", "").lower() == "numpy":
        return None
    try:
        from . import _ctrees  # type: ignore[attr-defined]
    except ImportError:
        return None
    if getattr(_ctrees, "NODE_F32", 0) != 20 or getattr(_ctrees, "NODE_F64", 0) != 24:
        return None  # another layout than Forest.nodes makes (or an older build): NumPy
    return _ctrees


_LIB = _load()
_POOL: ThreadPoolExecutor | None = None
_NONE = np.zeros(0, np.float32)
_F64 = np.dtype(np.float64)
_FLOATS = (np.dtype(np.float32), _F64)


def compiled_available() -> bool:
    """Whether the compiled walk is built and in use."""
    return _LIB is not None


def _cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _parts(rows: int, trees: int) -> int:
    """Into how many row ranges (threads) a walk is split: one for small work, else as many as
    the cores and mini-infer's thread limit (``set_num_threads``, ``threadpool_limits``, which
    limit the BLAS and so ``get_num_threads``) allow."""
    if rows < 2 * _ROWS_PER_THREAD or rows * trees < 2 * _PAIRS_PER_THREAD:
        return 1
    from mini_infer_core.threads import get_num_threads

    return max(1, min(_cores(), get_num_threads(), rows // _ROWS_PER_THREAD,
                      rows * trees // _PAIRS_PER_THREAD))


def walk_into(forest: Forest, x: Array, agg: int, divisor: float, base: Array | None,
              out: Array, has: Array | None = None) -> bool:
    """The few-row path: scores written straight into ``out`` (x's type, [N, n_targets],
    C-contiguous) by one compiled call on this thread, and which targets received a weight
    into ``has`` (uint8, like ``out``) where given; False (nothing done) where it does not
    apply (no compiled walk, set-membership nodes, other types or layouts, rows enough to
    split across threads)."""
    if has is None and _LIB is not None:
        has = forest.packed.get("has")  # scratch: written, never read (threads may share it)
        if has is None or has.size < out.size:
            has = forest.packed["has"] = np.empty(max(out.size, 64), np.uint8)
        has = has[:out.size]
    call = walk_call(forest, x, agg, divisor, base, out, has)
    if call is None:
        return False
    call()
    return True


def walk_call(forest: Forest, x: Array, agg: int, divisor: float, base: Array | None,
              out: Array, has: Array | None) -> Callable[[], None] | None:
    """:func:`walk_into`'s compiled call with its arguments bound (``has``: uint8, like
    ``out``), to make once for arrays that stay (a plan's bound step); None where it does
    not apply."""
    n = x.shape[0] if x.ndim == 2 else -1
    if _LIB is None or forest.members or n < 1 or n >= 2 * _ROWS_PER_THREAD \
            or x.dtype != out.dtype or x.dtype not in _FLOATS or not x.flags.c_contiguous \
            or not out.flags.c_contiguous or out.size != n * forest.n_targets \
            or x.shape[1] < forest.n_features or has is None or has.dtype != np.uint8 \
            or has.size != out.size or not has.flags.c_contiguous:
        return None
    return partial(_LIB.walk, x.dtype == _F64, x, n, x.shape[1], forest.nodes(x.dtype),
                   forest.roots, forest.wt_target, forest.weights(x.dtype), forest.n_targets,
                   agg, int(forest.is_fast), out, has, divisor, _NONE if base is None else base)


def _compiled(forest: Forest, x: Array, agg: int, divisor: float = 0.0,
              base: Array | None = None) -> tuple[Array, Array]:
    global _POOL
    dtype = x.dtype
    f64 = dtype == np.float64
    nodes, weights = forest.nodes(dtype), forest.weights(dtype)
    n, k = x.shape[0], forest.n_targets
    scores = np.empty((n, k), dtype)
    has = np.empty((n, k), np.uint8)
    fast, stride = int(forest.is_fast), x.shape[1]
    roots, targets = forest.roots, forest.wt_target
    b = _NONE if base is None else base

    def run(r0: int, r1: int) -> None:
        _LIB.walk(f64, x[r0:r1], r1 - r0, stride, nodes, roots, targets, weights, k, agg, fast,
                  scores[r0:r1], has[r0:r1], divisor, b)

    parts = _parts(n, forest.n_trees)
    if parts <= 1:
        run(0, n)
    else:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=_cores(),
                                       thread_name_prefix="mini-infer-ml-trees")
        bounds = np.linspace(0, n, parts + 1).astype(int).tolist()
        list(_POOL.map(run, bounds[:-1], bounds[1:]))
    return scores, has.view(bool)


# -- the NumPy walk ---------------------------------------------------------------------------
def _branch(mode: Array, v: Array, t: Array) -> Array:
    out = np.zeros(v.shape, bool)
    for code, fn in ((LEQ, np.less_equal), (LT, np.less), (GTE, np.greater_equal),
                     (GT, np.greater), (EQ, np.equal), (NEQ, np.not_equal)):
        sel = mode == code
        if sel.any():
            out[sel] = fn(v[sel], t[sel])
    return out


def _leaves(forest: Forest, x: Array, trees: Array) -> Array:
    """The leaf (node index) each (row, tree) pair reaches: [N * len(trees)], row-major."""
    n, f = x.shape
    flat = x.reshape(-1)
    thr = forest.thr.astype(x.dtype)
    node = np.tile(trees, n)
    base = np.repeat(np.arange(n, dtype=np.int64) * f, len(trees))
    active = np.arange(node.size)
    same = forest.fast()
    for _ in range(forest.depth + 1):
        nd = node[active]
        inner = forest.mode[nd] != LEAF
        if not inner.all():
            active, nd = active[inner], nd[inner]
            if not active.size:
                break
        v = flat[base[active] + forest.feat[nd]]
        t = thr[nd]
        go = v <= t if same else _branch(forest.mode[nd], v, t)
        if not same:
            go |= np.isnan(v) & (forest.mt[nd] != 0)
        for member, values in forest.members.items():
            sel = nd == member
            if sel.any():
                go[sel] = np.isin(v[sel], values) | (np.isnan(v[sel]) & bool(forest.mt[member]))
        node[active] = np.where(go, forest.tc[nd], forest.fc[nd])
    return node


def _numpy(forest: Forest, x: Array, agg: int) -> tuple[Array, Array]:
    n, k = x.shape[0], forest.n_targets
    total = np.zeros(n * k)
    has = np.zeros(n * k, bool)
    if agg != AGG_SUM:
        total[:] = np.inf if agg == AGG_MIN else -np.inf
    step = max(1, _CHUNK // max(n, 1))
    for t0 in range(0, forest.n_trees, step):
        trees = forest.roots[t0:t0 + step]
        leaf = _leaves(forest, x, trees)
        counts = forest.fc[leaf].astype(np.int64)
        starts = forest.tc[leaf].astype(np.int64)
        rows = np.repeat(np.arange(n, dtype=np.int64), len(trees))
        cum = np.cumsum(counts)
        within = np.arange(int(cum[-1]) if cum.size else 0) - np.repeat(cum - counts, counts)
        w = np.repeat(starts, counts) + within
        slot = np.repeat(rows, counts) * k + forest.wt_target[w]
        values = forest.wt_value[w]
        if agg == AGG_SUM:
            total += np.bincount(slot, weights=values, minlength=n * k)
        elif agg == AGG_MIN:
            np.minimum.at(total, slot, values)
        else:
            np.maximum.at(total, slot, values)
        has[slot] = True
    total[~has] = 0
    return total.reshape(n, k).astype(x.dtype), has.reshape(n, k)


def evaluate(forest: Forest, x: Array, agg: int, divisor: float = 0.0,
             base: Array | None = None) -> tuple[Array, Array]:
    """Scores [N, n_targets] in ``x``'s type (float32 or float64; ``x`` is [N, F] with F at
    least the features the trees read) and the targets that received a weight; each score
    then divided by ``divisor`` (where > 0) and ``base`` (one value per target, in ``x``'s
    type) added."""
    x = np.ascontiguousarray(x)
    if _LIB is not None and not forest.members and x.shape[0]:
        return _compiled(forest, x, agg, divisor, base)
    s, has = _numpy(forest, x, agg)
    if divisor > 0:
        s = s / s.dtype.type(divisor)
    if base is not None and base.size:
        s = s + base
    return s, has


def rows_of(x: Array, forest: Forest, where: str) -> Array:
    """X as [N, F] float32 or float64 (integers become float32, half float32), checked to have
    the features the trees read."""
    rows = x.reshape(1, -1) if x.ndim == 1 else x
    if rows.dtype not in (np.float32, np.float64):
        rows = rows.astype(np.float32)
    if rows.shape[1] < forest.n_features:
        raise ValueError(f"{where}: X has {rows.shape[1]} features, the trees read feature "
                         f"{forest.n_features - 1}")
    return rows


def base_values(attrs: dict[str, Any]) -> Sequence[float]:
    """``base_values`` (or ``base_values_as_tensor``) as floats."""
    values: list[float] = _floats(attrs.get("base_values_as_tensor"),
                                  attrs.get("base_values")).tolist()
    return values
