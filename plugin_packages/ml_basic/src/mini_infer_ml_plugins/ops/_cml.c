/*
 * The extension module mini_infer_ml_plugins.ops._cml: the parts of the ai.onnx.ml kernels
 * (besides the tree walk, _ctrees.c) whose NumPy form costs far more in per-call overhead
 * than in arithmetic at a few rows. Optional, like _ctrees: where it is not built the
 * kernels keep their NumPy form, which these functions reproduce operation for operation
 * (float32 throughout, as onnxruntime computes them).
 *
 *   svm_probabilities(scores, prob_a, prob_b, k, out): for each row of scores [N, k(k-1)/2]
 *   (one decision value per pair of classes), libsvm's Platt scaling of each pair
 *   (1 - logistic(s * a + b), clipped to [1e-7, 1 - 1e-7]) and its pairwise coupling
 *   (multiclass_probability) into one probability per class, out [N, k].
 *
 *   svm_pairwise(kern, n, coef, starts, rho, k, scores, votes): libsvm's one-vs-one decision
 *   for each row of kernel values kern [n, V] (float64): for classes i < j, the support
 *   vectors of i weighted by coef[j - 1] and those of j by coef[i] (coef [(k-1), V]), plus
 *   rho[pair] (float32), summed in float64 and stored in float32 as scores [n, pairs]; a vote
 *   for i where the value is above 0, else for j (votes [n, k], int64).
 *
 *   linear(x, n, w, k, b, post, expand, out, chosen): the linear models' scores
 *   x [n, f] . w [k, f]^T + b [k] (b may be empty), then post (0 NONE, 1 LOGISTIC, 2 SOFTMAX)
 *   over each row of k >= 2 scores; a single score column (k == 1) stays as it is, or with
 *   `expand` becomes two, 1 - p and p (p the logistic of the score under LOGISTIC), as
 *   onnxruntime does for a binary classifier; chosen [n] (int64, may be empty) gets each
 *   row's class: the first largest score, or for k == 1 whether the score is above 0.
 *
 *   normalize(x, n, norm, out): each row of x [n, f] divided by its MAX (0; NaNs skipped, as
 *   onnxruntime's std::max from the lowest float does), L1 (1) norm, or for L2 (2)
 *   sign(x) * sqrt(x * x / sum(x * x)); a row whose norm is 0 is copied.
 *
 *   scale(x, offset, scale, out): (x - offset) * scale along the last axis (offset and scale
 *   one value per feature, or one for all).
 *
 *   classify(s, n, k, post, out, chosen, has): a classifier's finish over float32 scores
 *   s [n, k] (k >= 1): chosen [n] (int64) each row's first largest score (the first NaN, as
 *   NumPy's argmax), out [n, k] (float32) the scores under post (0 NONE, 1 LOGISTIC,
 *   2 SOFTMAX). With has [n, k] (uint8; empty: every class scored) a class without a score
 *   takes part as 0 in out and as -inf in the choice (the tree classifiers' masking).
 *
 *   rbf(x, n, f, v, m, gamma, out): the RBF kernel of every float32 row of x [n, f] with
 *   every float64 support vector of v [m, f]: out [n, m] (float64) = exp(-gamma * |x - v|^2),
 *   the squared distance summed in float64.
 *
 *   zipmap(x, n, k, keys, columns): ZipMap's list of n dicts from float32 scores x [n, k]:
 *   row i's dict maps keys[j] to the Python float of x[i, columns[j]] (columns [k], int64),
 *   inserted in the order of keys (a tuple of k labels), as the Python form builds them.
 *
 *   take(x, size, index, itemsize, out): ArrayFeatureExtractor's gather along the last axis
 *   of x (rows of `size` items of `itemsize` bytes, any fixed-size type): out [rows, m] gets
 *   x[r, index[j]] for the m int64 indices; returns None, or the first index out of
 *   [0, size) (nothing written then), which the caller reports.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* release every buffer a function took (its arguments' Py_buffers, in any order) */
#define RELEASE(...)                                                                        \
    do {                                                                                    \
        Py_buffer *bufs_[] = {__VA_ARGS__};                                                 \
        for (size_t i_ = 0; i_ < sizeof bufs_ / sizeof bufs_[0]; i_++)                      \
            PyBuffer_Release(bufs_[i_]);                                                    \
    } while (0)

static float logistic(float x) {
    const float v = 1.0f / (1.0f + expf(-fabsf(x)));
    return x < 0 ? 1.0f - v : v;
}

/* libsvm's multiclass_probability, as onnxruntime writes it (ml_common.h) and svm.py's
 * _coupling computes it: r [k, k] pairwise probabilities, p [k] out; q [k*k], qp [k] work */
static void coupling(int k, const float *r, float *p, float *q, float *qp) {
    const float eps = 0.005f / (float)k;
    for (int i = 0; i < k * k; ++i) q[i] = 0;
    for (int i = 0; i < k; ++i) {
        p[i] = 1.0f / (float)k;
        for (int j = 0; j < k; ++j) {
            if (j == i) continue;
            q[i * k + i] += r[j * k + i] * r[j * k + i];
            q[i * k + j] = -r[j * k + i] * r[i * k + j];
        }
    }
    for (int loop = 0; loop < 100; ++loop) {
        float pqp = 0;
        for (int i = 0; i < k; ++i) {
            float s = 0;
            for (int j = 0; j < k; ++j) s += q[i * k + j] * p[j];
            qp[i] = s;
            pqp += p[i] * qp[i];
        }
        float max_error = 0;
        for (int i = 0; i < k; ++i) {
            const float e = fabsf(qp[i] - pqp);
            if (e > max_error) max_error = e;
        }
        if (max_error < eps) break;
        for (int t = 0; t < k; ++t) {
            const float diff = (-qp[t] + pqp) / q[t * k + t];
            p[t] += diff;
            pqp = (pqp + diff * (diff * q[t * k + t] + 2 * qp[t])) / (1 + diff) / (1 + diff);
            for (int j = 0; j < k; ++j) qp[j] = (qp[j] + diff * q[t * k + j]) / (1 + diff);
            for (int j = 0; j < k; ++j) p[j] /= (1 + diff);
        }
    }
}

static PyObject *py_svm_probabilities(PyObject *self, PyObject *args) {
    Py_buffer scores, prob_a, prob_b, out;
    int k;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*iw*", &scores, &prob_a, &prob_b, &k, &out)) return NULL;
    const Py_ssize_t pairs = (Py_ssize_t)k * (k - 1) / 2;
    const Py_ssize_t n = k > 0 ? out.len / (Py_ssize_t)(sizeof(float) * k) : 0;
    int ok = k >= 2 && k <= 4096 && out.len == n * k * (Py_ssize_t)sizeof(float) &&
             scores.len == n * pairs * (Py_ssize_t)sizeof(float) &&
             prob_a.len >= pairs * (Py_ssize_t)sizeof(float) &&
             prob_b.len >= pairs * (Py_ssize_t)sizeof(float);
    float *work = ok ? malloc(sizeof(float) * ((size_t)k * k * 2 + k)) : NULL;
    if (ok && !work) {
        PyErr_NoMemory();
        ok = -1;
    } else if (!ok) {
        PyErr_SetString(PyExc_ValueError, "_cml.svm_probabilities: sizes do not match");
    } else {
        const float *s = scores.buf, *a = prob_a.buf, *b = prob_b.buf;
        float *o = out.buf, *r = work, *q = work + (size_t)k * k, *qp = q + (size_t)k * k;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t row = 0; row < n; ++row) {
            const float *sr = s + row * pairs;
            for (int i = 0; i < k * k; ++i) r[i] = 0;
            Py_ssize_t c = 0;
            for (int i = 0; i < k - 1; ++i) {
                for (int j = i + 1; j < k; ++j, ++c) {
                    float v = 1.0f - logistic(sr[c] * a[c] + b[c]);
                    v = v < 1e-7f ? 1e-7f : v > 1.0f - 1e-7f ? 1.0f - 1e-7f : v;
                    r[i * k + j] = v;
                    r[j * k + i] = 1 - v;
                }
            }
            coupling(k, r, o + row * k, q, qp);
        }
        Py_END_ALLOW_THREADS
    }
    free(work);
    RELEASE(&scores, &prob_a, &prob_b, &out);
    if (ok != 1) return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_svm_pairwise(PyObject *self, PyObject *args) {
    Py_buffer kern, coef, starts, rho, scores, votes;
    Py_ssize_t n;
    int k;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*ny*y*y*iw*w*", &kern, &n, &coef, &starts, &rho, &k, &scores,
                          &votes))
        return NULL;
    const Py_ssize_t pairs = (Py_ssize_t)k * (k - 1) / 2;
    const Py_ssize_t v = k > 1 ? coef.len / ((Py_ssize_t)sizeof(double) * (k - 1)) : 0;
    const int64_t *st = starts.buf;
    int ok = n >= 0 && k >= 2 && coef.len == (Py_ssize_t)sizeof(double) * (k - 1) * v &&
             kern.len == (Py_ssize_t)sizeof(double) * n * v &&
             starts.len == (Py_ssize_t)sizeof(int64_t) * (k + 1) &&
             rho.len >= (Py_ssize_t)sizeof(float) * pairs &&
             scores.len == (Py_ssize_t)sizeof(float) * n * pairs &&
             votes.len == (Py_ssize_t)sizeof(int64_t) * n * k;
    for (int i = 0; ok && i <= k; ++i)
        ok = st[i] >= 0 && st[i] <= v && (i == 0 || st[i] >= st[i - 1]);
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "_cml.svm_pairwise: sizes do not match");
    } else {
        const double *K = kern.buf, *C = coef.buf;
        const float *R = rho.buf;
        float *S = scores.buf;
        int64_t *V = votes.buf;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t r = 0; r < n; ++r) {
            const double *kr = K + r * v;
            int64_t *vr = V + r * k;
            for (int i = 0; i < k; ++i) vr[i] = 0;
            Py_ssize_t c = 0;
            for (int i = 0; i < k - 1; ++i) {
                for (int j = i + 1; j < k; ++j, ++c) {
                    double a = 0, b = 0;
                    for (int64_t t = st[i]; t < st[i + 1]; ++t) a += kr[t] * C[(j - 1) * v + t];
                    for (int64_t t = st[j]; t < st[j + 1]; ++t) b += kr[t] * C[i * v + t];
                    const double s = a + b + (double)R[c];
                    S[r * pairs + c] = (float)s;
                    vr[s > 0 ? i : j] += 1;
                }
            }
        }
        Py_END_ALLOW_THREADS
    }
    RELEASE(&kern, &coef, &starts, &rho, &scores, &votes);
    if (!ok) return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_linear(PyObject *self, PyObject *args) {
    Py_buffer x, w, b, out, chosen;
    Py_ssize_t n, k;
    int post, expand;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*ny*ny*iiw*w*", &x, &n, &w, &k, &b, &post, &expand, &out,
                          &chosen))
        return NULL;
    const Py_ssize_t fsz = (Py_ssize_t)sizeof(float);
    const Py_ssize_t f = k > 0 ? w.len / (k * fsz) : 0;
    const Py_ssize_t cols = k == 1 && expand ? 2 : k;
    int ok = n >= 0 && k >= 1 && post >= 0 && post <= 2 && w.len == k * f * fsz &&
             x.len == n * f * fsz && (b.len == 0 || b.len == k * fsz) &&
             out.len == n * cols * fsz &&
             (chosen.len == 0 || chosen.len == n * (Py_ssize_t)sizeof(int64_t));
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "_cml.linear: sizes do not match");
    } else {
        const float *X = x.buf, *W = w.buf, *B = b.len ? b.buf : NULL;
        float *O = out.buf;
        int64_t *C = chosen.len ? chosen.buf : NULL;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t r = 0; r < n; ++r) {
            const float *xr = X + r * f;
            float *o = O + r * cols;
            for (Py_ssize_t c = 0; c < k; ++c) {
                const float *wc = W + c * f;
                float s = 0;
                for (Py_ssize_t j = 0; j < f; ++j) s += xr[j] * wc[j];
                o[c] = B ? s + B[c] : s;
            }
            if (k == 1) {
                const float s = o[0];
                if (C) C[r] = s > 0;
                if (expand) {
                    const float p = post == 1 ? logistic(s) : s;
                    o[0] = 1.0f - p;
                    o[1] = p;
                }
                continue;
            }
            Py_ssize_t best = 0;
            for (Py_ssize_t c = 1; c < k; ++c)
                if (o[c] > o[best]) best = c;
            if (C) C[r] = best;
            if (post == 1) {
                for (Py_ssize_t c = 0; c < k; ++c) o[c] = logistic(o[c]);
            } else if (post == 2) {
                const float m = o[best];
                float total = 0;
                for (Py_ssize_t c = 0; c < k; ++c) total += (o[c] = expf(o[c] - m));
                for (Py_ssize_t c = 0; c < k; ++c) o[c] = o[c] / total;
            }
        }
        Py_END_ALLOW_THREADS
    }
    RELEASE(&x, &w, &b, &out, &chosen);
    if (!ok) return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_normalize(PyObject *self, PyObject *args) {
    Py_buffer x, out;
    Py_ssize_t n;
    int norm;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*niw*", &x, &n, &norm, &out)) return NULL;
    const Py_ssize_t f = n > 0 ? x.len / (n * (Py_ssize_t)sizeof(float)) : 0;
    const int ok = n >= 0 && norm >= 0 && norm <= 2 && out.len == x.len &&
                   x.len == n * f * (Py_ssize_t)sizeof(float);
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "_cml.normalize: sizes do not match");
    } else {
        const float *X = x.buf;
        float *O = out.buf;
        for (Py_ssize_t r = 0; r < n; ++r) {
            const float *xr = X + r * f;
            float *o = O + r * f;
            float z = norm == 0 ? -FLT_MAX : 0; /* onnxruntime's std::max from lowest */
            for (Py_ssize_t j = 0; j < f; ++j) {
                if (norm == 0) z = z < xr[j] ? xr[j] : z; /* skips a NaN, as std::max */
                else if (norm == 1) z += fabsf(xr[j]);
                else z += xr[j] * xr[j];
            }
            if (norm == 2) {
                for (Py_ssize_t j = 0; j < f; ++j) {
                    if (z != 0) {
                        const float y = sqrtf(xr[j] * xr[j] / z);
                        o[j] = xr[j] < 0 ? -y : y;
                    } else {
                        o[j] = xr[j];
                    }
                }
            } else {
                const float d = z != 0 ? z : 1.0f;
                for (Py_ssize_t j = 0; j < f; ++j) o[j] = xr[j] / d;
            }
        }
    }
    RELEASE(&x, &out);
    if (!ok) return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_scale(PyObject *self, PyObject *args) {
    Py_buffer x, offset, scale, out;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*w*", &x, &offset, &scale, &out)) return NULL;
    const Py_ssize_t fsz = (Py_ssize_t)sizeof(float);
    const Py_ssize_t no = offset.len / fsz, ns = scale.len / fsz, total = x.len / fsz;
    const Py_ssize_t f = no > ns ? no : ns;
    const int ok = out.len == x.len && no >= 1 && ns >= 1 && (no == 1 || no == f) &&
                   (ns == 1 || ns == f) && total % f == 0;
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "_cml.scale: sizes do not match");
    } else {
        const float *X = x.buf, *off = offset.buf, *sc = scale.buf;
        float *O = out.buf;
        for (Py_ssize_t i = 0; i < total; ++i) {
            const Py_ssize_t j = i % f;
            O[i] = (X[i] - off[no == 1 ? 0 : j]) * sc[ns == 1 ? 0 : j];
        }
    }
    RELEASE(&x, &offset, &scale, &out);
    if (!ok) return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_classify(PyObject *self, PyObject *args) {
    Py_buffer sb, out, chosen, hb;
    Py_ssize_t n, k;
    int post;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*nniw*w*y*", &sb, &n, &k, &post, &out, &chosen, &hb))
        return NULL;
    const Py_ssize_t fsz = (Py_ssize_t)sizeof(float);
    const int ok = n >= 0 && k >= 1 && post >= 0 && post <= 2 && sb.len == n * k * fsz &&
                   out.len == n * k * fsz && chosen.len == n * (Py_ssize_t)sizeof(int64_t) &&
                   (hb.len == 0 || hb.len == n * k);
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "_cml.classify: sizes do not match");
    } else {
        const float *S = sb.buf;
        const uint8_t *H = hb.len ? hb.buf : NULL;
        float *O = out.buf;
        int64_t *C = chosen.buf;
        for (Py_ssize_t r = 0; r < n; ++r) {
            const float *sr = S + r * k;
            const uint8_t *hr = H ? H + r * k : NULL;
            float *o = O + r * k;
            /* the scores as the transform and the choice see them */
            for (Py_ssize_t c = 0; c < k; ++c) o[c] = hr && !hr[c] ? 0.0f : sr[c];
            Py_ssize_t best = 0;
            float top = hr && !hr[0] ? -INFINITY : o[0];
            for (Py_ssize_t c = 0; c < k; ++c) {
                const float v = hr && !hr[c] ? -INFINITY : o[c];
                if (isnan(v)) {
                    best = c;
                    break;
                }
                if (v > top) {
                    best = c;
                    top = v;
                }
            }
            C[r] = best;
            if (post == 1) {
                for (Py_ssize_t c = 0; c < k; ++c) o[c] = logistic(o[c]);
            } else if (post == 2) {
                float m = o[0];
                for (Py_ssize_t c = 1; c < k; ++c) m = o[c] > m ? o[c] : m;
                float total = 0;
                for (Py_ssize_t c = 0; c < k; ++c) total += (o[c] = expf(o[c] - m));
                for (Py_ssize_t c = 0; c < k; ++c) o[c] = o[c] / total;
            }
        }
    }
    RELEASE(&sb, &out, &chosen, &hb);
    if (!ok) return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_rbf(PyObject *self, PyObject *args) {
    Py_buffer x, v, out;
    Py_ssize_t n, f, m;
    double gamma;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*nny*ndw*", &x, &n, &f, &v, &m, &gamma, &out)) return NULL;
    const Py_ssize_t dsz = (Py_ssize_t)sizeof(double);
    const int ok = n >= 0 && f >= 0 && m >= 0 && x.len == n * f * (Py_ssize_t)sizeof(float) &&
                   v.len == m * f * dsz && out.len == n * m * dsz;
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "_cml.rbf: sizes do not match");
    } else {
        const float *X = x.buf;
        const double *V = v.buf;
        double *O = out.buf;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t r = 0; r < n; ++r) {
            const float *xr = X + r * f;
            for (Py_ssize_t s = 0; s < m; ++s) {
                const double *vs = V + s * f;
                double d2 = 0;
                for (Py_ssize_t j = 0; j < f; ++j) {
                    const double d = (double)xr[j] - vs[j];
                    d2 += d * d;
                }
                O[r * m + s] = exp(-gamma * d2);
            }
        }
        Py_END_ALLOW_THREADS
    }
    RELEASE(&x, &v, &out);
    if (!ok) return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_zipmap(PyObject *self, PyObject *args) {
    Py_buffer x, columns;
    Py_ssize_t n, k;
    PyObject *keys, *rows = NULL;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*nnO!y*", &x, &n, &k, &PyTuple_Type, &keys, &columns))
        return NULL;
    const int64_t *col = columns.buf;
    int ok = n >= 0 && k >= 0 && PyTuple_GET_SIZE(keys) == k &&
             x.len == n * k * (Py_ssize_t)sizeof(float) &&
             columns.len == k * (Py_ssize_t)sizeof(int64_t);
    for (Py_ssize_t j = 0; ok && j < k; ++j) ok = col[j] >= 0 && col[j] < k;
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "_cml.zipmap: sizes or columns do not match");
    } else if ((rows = PyList_New(n)) != NULL) {
        const float *X = x.buf;
        for (Py_ssize_t i = 0; i < n && rows != NULL; ++i) {
            PyObject *row = PyDict_New();
            for (Py_ssize_t j = 0; row != NULL && j < k; ++j) {
                PyObject *v = PyFloat_FromDouble((double)X[i * k + col[j]]);
                if (v == NULL || PyDict_SetItem(row, PyTuple_GET_ITEM(keys, j), v) < 0)
                    Py_CLEAR(row);
                Py_XDECREF(v);
            }
            if (row == NULL)
                Py_CLEAR(rows); /* the rows made so far go with the list */
            else
                PyList_SET_ITEM(rows, i, row);
        }
    }
    RELEASE(&x, &columns);
    return rows;
}

static PyObject *py_take(PyObject *self, PyObject *args) {
    Py_buffer x, index, out;
    Py_ssize_t size, itemsize;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*ny*nw*", &x, &size, &index, &itemsize, &out)) return NULL;
    const Py_ssize_t m = index.len / (Py_ssize_t)sizeof(int64_t);
    const Py_ssize_t rows = size > 0 && itemsize > 0 ? x.len / (size * itemsize) : 0;
    const int ok = size >= 0 && itemsize > 0 && x.len == rows * size * itemsize &&
                   out.len == rows * m * itemsize;
    PyObject *result = NULL;
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "_cml.take: sizes do not match");
    } else {
        const int64_t *I = index.buf;
        Py_ssize_t bad = -1;
        for (Py_ssize_t j = 0; j < m && bad < 0; ++j)
            if (I[j] < 0 || I[j] >= size) bad = j;
        if (bad >= 0) {
            result = PyLong_FromLongLong((long long)I[bad]);
        } else {
            const char *X = x.buf;
            char *O = out.buf;
            for (Py_ssize_t r = 0; r < rows; ++r)
                for (Py_ssize_t j = 0; j < m; ++j)
                    memcpy(O + (r * m + j) * itemsize, X + (r * size + I[j]) * itemsize,
                           (size_t)itemsize);
            result = Py_NewRef(Py_None);
        }
    }
    RELEASE(&x, &index, &out);
    return result;
}

static PyMethodDef methods[] = {
    {"take", py_take, METH_VARARGS,
     "take(x, size, index, itemsize, out): x's items at the int64 indices along its last "
     "axis (rows of size items), into out; None, or the first index out of range."},
    {"classify", py_classify, METH_VARARGS,
     "classify(s, n, k, post, out, chosen): each row's first largest float32 score and the "
     "scores under post (0 NONE, 1 LOGISTIC, 2 SOFTMAX)."},
    {"rbf", py_rbf, METH_VARARGS,
     "rbf(x, n, f, v, m, gamma, out): exp(-gamma |x - v|^2) of float32 rows and float64 "
     "support vectors, float64 out [n, m]."},
    {"zipmap", py_zipmap, METH_VARARGS,
     "zipmap(x, n, k, keys, columns): ZipMap's list of n dicts from float32 scores [n, k], "
     "keys in the order given, each the float of its column."},
    {"svm_pairwise", py_svm_pairwise, METH_VARARGS,
     "svm_pairwise(kern, n, coef, starts, rho, k, scores, votes): libsvm's one-vs-one "
     "decision values (float32) and votes (int64) from float64 kernel values."},
    {"linear", py_linear, METH_VARARGS,
     "linear(x, n, w, k, b, post, expand, out, chosen): float32 linear scores, their "
     "transform and each row's class."},
    {"normalize", py_normalize, METH_VARARGS,
     "normalize(x, n, norm, out): each float32 row by its MAX (0), L1 (1) or L2 (2) norm."},
    {"scale", py_scale, METH_VARARGS,
     "scale(x, offset, scale, out): (x - offset) * scale along the last axis, float32."},
    {"svm_probabilities", py_svm_probabilities, METH_VARARGS,
     "svm_probabilities(scores, prob_a, prob_b, k, out): Platt scaling and pairwise "
     "coupling of float32 pairwise decision values [N, k(k-1)/2] into out [N, k]."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_cml",
                                    "Compiled parts of the ai.onnx.ml kernels.", -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__cml(void) { return PyModule_Create(&module); }
