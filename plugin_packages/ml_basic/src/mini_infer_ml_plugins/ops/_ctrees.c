/*
 * The extension module mini_infer_ml_plugins.ops._ctrees: tree-ensemble traversal in plain C.
 * Its one Python function, walk(), takes the arrays through the buffer protocol (about a
 * microsecond for a call, where ctypes took several), releases the GIL while it walks (so
 * that _trees.py may split the rows across threads) and calls:
 *
 *   mi_forest_f32 / mi_forest_f64: for rows [0, n_rows) of X (row stride `stride` elements),
 *   walk every tree from its root to a leaf and fold the leaf's weights into that row's
 *   scores (n_targets per row): SUM adds, MIN/MAX keep the extreme; `has` marks each target
 *   that received a weight. Rows are taken in blocks of 64, every tree over the block, so that
 *   a tree's upper nodes stay in cache; in the fast case (every branch x <= t, no NaN rule)
 *   LANES rows of a block walk a tree together, so that their node loads overlap.
 *
 * A node is a branch (mode 1..6: x <= t, x < t, x >= t, x > t, x == t, x != t; a NaN x takes
 * the true branch where `mt` says so) whose children are node indices `tc` (true) and `fc`
 * (false), or a leaf (mode 0) whose weights are wt_target[tc .. tc + fc) / wt_value[...].
 * The caller (_trees.py) has checked every index: children, features below `stride`, weights
 * and targets in range, and no cycles, so the loops here trust them; walk() checks the sizes
 * of the buffers it is given against the counts.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "_ctrees.h"

enum { LEAF = 0, LEQ = 1, LT = 2, GTE = 3, GT = 4, EQ = 5, NEQ = 6 };
enum { AGG_SUM = 0, AGG_MIN = 1, AGG_MAX = 2 };

#define BLOCK 64
#define LANES 8

#define DEFINE_FOREST(SUFFIX, T, NODE)                                                        \
    static inline const NODE *walk_##SUFFIX(const NODE *nodes, const NODE *n, const T *x,   \
                                            int fast) {                                     \
        if (fast) {                                                                         \
            while (n->mode) n = nodes + (x[n->feat] <= n->thr ? n->tc : n->fc);            \
            return n;                                                                       \
        }                                                                                   \
        while (n->mode) {                                                                   \
            T v = x[n->feat];                                                               \
            int go;                                                                         \
            switch (n->mode) {                                                              \
                case LEQ: go = v <= n->thr; break;                                          \
                case LT: go = v < n->thr; break;                                            \
                case GTE: go = v >= n->thr; break;                                          \
                case GT: go = v > n->thr; break;                                            \
                case EQ: go = v == n->thr; break;                                           \
                default: go = v != n->thr; break;                                           \
            }                                                                               \
            if (!go && n->mt && isnan(v)) go = 1;                                           \
            n = nodes + (go ? n->tc : n->fc);                                               \
        }                                                                                   \
        return n;                                                                           \
    }                                                                                       \
                                                                                            \
    /* the fast loop for LANES rows at once: their walks are independent, so the loads of  \
     * one row's next node overlap with the others' instead of waiting in a chain */        \
    static inline void walk_lanes_##SUFFIX(const NODE *nodes, const NODE *root, const T *x, \
                                           int64_t stride, const NODE **out) {             \
        const NODE *n[LANES];                                                               \
        for (int i = 0; i < LANES; ++i) n[i] = root;                                        \
        for (;;) {                                                                          \
            int moving = 0;                                                                 \
            for (int i = 0; i < LANES; ++i) {                                               \
                const NODE *c = n[i];                                                       \
                const int32_t next = x[i * stride + c->feat] <= c->thr ? c->tc : c->fc;   \
                n[i] = c->mode ? nodes + next : c;                                          \
                moving |= c->mode;                                                          \
            }                                                                               \
            if (!moving) break;                                                             \
        }                                                                                   \
        for (int i = 0; i < LANES; ++i) out[i] = n[i];                                      \
    }                                                                                       \
                                                                                            \
    int mi_forest_##SUFFIX(const T *X, int64_t n_rows, int64_t stride, const NODE *nodes,   \
                           const int32_t *roots, int64_t n_trees, const int32_t *wt_target, \
                           const T *wt_value, int64_t n_targets, int32_t agg, int32_t fast, \
                           T *scores, uint8_t *has) {                                       \
        if (n_rows < 0 || n_trees < 0 || n_targets < 1) return -1;                          \
        memset(scores, 0, (size_t)(n_rows * n_targets) * sizeof(T));                        \
        memset(has, 0, (size_t)(n_rows * n_targets));                                       \
        for (int64_t r0 = 0; r0 < n_rows; r0 += BLOCK) {                                    \
            int64_t r1 = r0 + BLOCK < n_rows ? r0 + BLOCK : n_rows;                         \
            for (int64_t t = 0; t < n_trees; ++t) {                                         \
                const NODE *root = nodes + roots[t];                                        \
                const NODE *lane[LANES];                                                    \
                int64_t lanes_end = fast && stride > 0 ? r0 + (r1 - r0) / LANES * LANES : r0;\
                for (int64_t r = r0; r < r1; ++r) {                                         \
                    const NODE *leaf;                                                       \
                    if (r < lanes_end) {                                                    \
                        if ((r - r0) % LANES == 0)                                          \
                            walk_lanes_##SUFFIX(nodes, root, X + r * stride, stride, lane); \
                        leaf = lane[(r - r0) % LANES];                                      \
                    } else {                                                                \
                        leaf = walk_##SUFFIX(nodes, root, X + r * stride, fast);            \
                    }                                                                       \
                    T *s = scores + r * n_targets;                                          \
                    uint8_t *h = has + r * n_targets;                                       \
                    const int32_t end = leaf->tc + leaf->fc;                                \
                    for (int32_t w = leaf->tc; w < end; ++w) {                              \
                        const int32_t k = wt_target[w];                                     \
                        const T v = wt_value[w];                                            \
                        if (agg == AGG_SUM) s[k] += v;                                      \
                        else if (!h[k] || (agg == AGG_MIN ? v < s[k] : v > s[k])) s[k] = v; \
                        h[k] = 1;                                                           \
                    }                                                                       \
                }                                                                           \
            }                                                                               \
        }                                                                                   \
        return 0;                                                                           \
    }

DEFINE_FOREST(f32, float, node_f32)
DEFINE_FOREST(f64, double, node_f64)

/* walk(f64, x, n_rows, stride, nodes, roots, wt_target, wt_value, n_targets, agg, fast, scores,
 *      has, divisor, base): x float64 where f64 is set, else float32 (wt_value, scores and
 *      base of the same type), then each score divided by `divisor` (when > 0) and base[k]
 *      added (when base is not empty), as the regressors' AVERAGE and base values ask. */
static PyObject *py_walk(PyObject *self, PyObject *args) {
    Py_buffer x, nodes, roots, wt_target, wt_value, scores, has, base;
    Py_ssize_t n_rows, stride, n_targets;
    int f64, agg, fast;
    double divisor;
    (void)self;
    if (!PyArg_ParseTuple(args, "py*nny*y*y*y*niiw*w*dy*", &f64, &x, &n_rows, &stride, &nodes,
                          &roots,
                          &wt_target, &wt_value, &n_targets, &agg, &fast, &scores, &has,
                          &divisor, &base))
        return NULL;
    Py_buffer *all[] = {&x, &nodes, &roots, &wt_target, &wt_value, &scores, &has, &base};
    const Py_ssize_t tsize = f64 ? 8 : 4, nsize = f64 ? sizeof(node_f64) : sizeof(node_f32);
    const Py_ssize_t n_trees = roots.len / 4;
    int rc = -1;
    if (n_rows < 0 || stride < 0 || n_targets < 1 || roots.len % 4 ||
        x.len < n_rows * stride * tsize || scores.len < n_rows * n_targets * tsize ||
        has.len < n_rows * n_targets || wt_value.len / tsize != wt_target.len / 4 ||
        (base.len && base.len != n_targets * tsize) || nodes.len % nsize) {
        PyErr_SetString(PyExc_ValueError, "_ctrees.walk: buffer sizes do not match the counts");
    } else {
        Py_BEGIN_ALLOW_THREADS
        if (f64)
            rc = mi_forest_f64(x.buf, n_rows, stride, nodes.buf, roots.buf, n_trees,
                               wt_target.buf, wt_value.buf, n_targets, agg, fast, scores.buf,
                               has.buf);
        else
            rc = mi_forest_f32(x.buf, n_rows, stride, nodes.buf, roots.buf, n_trees,
                               wt_target.buf, wt_value.buf, n_targets, agg, fast, scores.buf,
                               has.buf);
        if (rc == 0 && (divisor > 0 || base.len)) {
            const Py_ssize_t total = n_rows * n_targets;
            if (f64) {
                double *s = scores.buf;
                const double *b = base.buf, d = divisor;
                for (Py_ssize_t i = 0; i < total; ++i) {
                    if (d > 0) s[i] = s[i] / d;
                    if (base.len) s[i] = s[i] + b[i % n_targets];
                }
            } else {
                float *s = scores.buf;
                const float *b = base.buf, d = (float)divisor;
                for (Py_ssize_t i = 0; i < total; ++i) {
                    if (d > 0) s[i] = s[i] / d;
                    if (base.len) s[i] = s[i] + b[i % n_targets];
                }
            }
        }
        Py_END_ALLOW_THREADS
        if (rc) PyErr_SetString(PyExc_ValueError, "_ctrees.walk: refused its arguments");
    }
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); ++i) PyBuffer_Release(all[i]);
    if (rc) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"walk", py_walk, METH_VARARGS,
     "walk(f64, x, n_rows, stride, nodes, roots, wt_target, wt_value, n_targets, agg, fast, "
     "scores, has, divisor, base): fold every tree's leaf weights into scores (in place)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_ctrees", "Tree-ensemble traversal.", -1, methods,
    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__ctrees(void) {
    PyObject *m = PyModule_Create(&module);
    /* the node layouts' sizes, which _trees.py checks against its own */
    if (m && (PyModule_AddIntConstant(m, "NODE_F32", (long)sizeof(node_f32)) ||
              PyModule_AddIntConstant(m, "NODE_F64", (long)sizeof(node_f64)))) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
