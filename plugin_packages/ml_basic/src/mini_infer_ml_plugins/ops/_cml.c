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
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdlib.h>

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
    PyBuffer_Release(&scores);
    PyBuffer_Release(&prob_a);
    PyBuffer_Release(&prob_b);
    PyBuffer_Release(&out);
    if (ok != 1) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"svm_probabilities", py_svm_probabilities, METH_VARARGS,
     "svm_probabilities(scores, prob_a, prob_b, k, out): Platt scaling and pairwise "
     "coupling of float32 pairwise decision values [N, k(k-1)/2] into out [N, k]."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_cml",
                                    "Compiled parts of the ai.onnx.ml kernels.", -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__cml(void) { return PyModule_Create(&module); }
