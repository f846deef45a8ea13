/*
 * The extension module mini_infer_cpu_native._kernels. It uses only CPython's stable ABI
 * (Py_LIMITED_API 3.11, set by setup.py), so one build serves every CPython from 3.11 on. The
 * kernels are plain C reached through ctypes (_native.py, _abi.py); the module exists so that
 * setuptools builds and installs the library, and it has the two functions the Python
 * wrappers check each array with before they hand its address to a kernel:
 *
 *   address(array, floats, writable, kernel, name) -> int
 *   rows(array, nrows, ncols, writable, kernel, name) -> (int, int)
 *   strided(array, shape, writable, kernel, name) -> (int, (int, ...))
 *
 * Each reads the array through the buffer protocol (a fraction of a microsecond, where
 * NumPy's __array_interface__ costs one to three) and raise TypeError or ValueError, naming
 * the kernel and the argument, unless it is float32 (native byte order), aligned to 4 bytes,
 * writable if the kernel writes it and:
 * - address: C-contiguous with at least `floats` elements (the kernel touches elements
 *   [0, floats) from its first); None gives 0 (NULL: an optional array left out).
 * - rows: two-dimensional, exactly nrows x ncols, each row contiguous, rows a whole number of
 *   floats apart and not behind one another (and, if written, not overlapping), so that every
 *   element r * ld + j (r < nrows, j < ncols) the kernel touches is one of the array's;
 *   returns the address and ld, the row stride in floats. None gives (0, 0).
 * - strided: exactly `shape`, any strides of whole floats (see the function).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

/* the dtype of a refused array, for the message (its type's name if it has none) */
static PyObject *dtype_of(PyObject *obj) {
    PyObject *dt = PyObject_GetAttrString(obj, "dtype");
    if (dt) return dt;
    PyErr_Clear();
    return PyType_GetName(Py_TYPE(obj));
}

/* `obj`'s attribute `attr` (a new reference), or "?" where it has none: for messages */
static PyObject *attr_or_unknown(PyObject *obj, const char *attr) {
    PyObject *value = PyObject_GetAttrString(obj, attr);
    if (value) return value;
    PyErr_Clear();
    return PyUnicode_FromString("?");
}

/* the buffer of `obj` with its format, shape and strides, checked for what every kernel
 * needs (float32, aligned, writable when written); 0, or -1 with an exception set */
static int float_view(PyObject *obj, Py_buffer *view, int writable, PyObject *kernel,
                      PyObject *name) {
    if (PyObject_GetBuffer(obj, view, PyBUF_STRIDES | PyBUF_FORMAT) != 0) {
        PyErr_Clear();
        PyObject *type = PyType_GetName(Py_TYPE(obj));
        PyErr_Format(PyExc_TypeError, "%U: %U must be a float32 array, not %S", kernel, name,
                     type ? type : Py_None);
        Py_XDECREF(type);
        return -1;
    }
    const char *f = view->format ? view->format : "B";
    if (view->itemsize != 4 || !(strcmp(f, "f") == 0 || strcmp(f, "<f") == 0 ||
                                 strcmp(f, "=f") == 0 || strcmp(f, "@f") == 0)) {
        PyObject *dt = dtype_of(obj);
        PyErr_Format(PyExc_TypeError, "%U: %U must be float32 (native byte order), not %S",
                     kernel, name, dt);
        Py_XDECREF(dt);
        PyBuffer_Release(view);
        return -1;
    }
    if ((uintptr_t)view->buf % 4 != 0) {
        PyErr_Format(PyExc_ValueError, "%U: %U is not aligned to 4 bytes (address %p)", kernel,
                     name, view->buf);
        PyBuffer_Release(view);
        return -1;
    }
    if (writable && view->readonly) {
        PyErr_Format(PyExc_ValueError, "%U: %U is read-only, and the kernel writes it", kernel,
                     name);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static PyObject *address(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 5) {
        PyErr_Format(PyExc_TypeError, "address() takes 5 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *obj = args[0], *kernel = args[3], *name = args[4];
    if (obj == Py_None) return PyLong_FromLong(0);
    Py_ssize_t floats = PyLong_AsSsize_t(args[1]);
    int writable = PyObject_IsTrue(args[2]);
    if ((floats == -1 || writable < 0) && PyErr_Occurred()) return NULL;
    Py_buffer view;
    if (float_view(obj, &view, writable, kernel, name) != 0) return NULL;
    PyObject *result = NULL;
    if (!PyBuffer_IsContiguous(&view, 'C')) {
        PyObject *strides = attr_or_unknown(obj, "strides");
        PyErr_Format(PyExc_ValueError,
                     "%U: %U is not C-contiguous (strides %S); the kernel reads it as one "
                     "block", kernel, name, strides);
        Py_XDECREF(strides);
    } else if (view.len / 4 < floats) {
        PyErr_Format(PyExc_ValueError,
                     "%U: %U holds %zd floats, and the kernel touches %zd (its last index is "
                     "%zd)", kernel, name, view.len / 4, floats, floats - 1);
    } else {
        result = PyLong_FromVoidPtr(view.buf);
    }
    PyBuffer_Release(&view);
    return result;
}

static PyObject *rows(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 6) {
        PyErr_Format(PyExc_TypeError, "rows() takes 6 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *obj = args[0], *kernel = args[4], *name = args[5];
    if (obj == Py_None) return Py_BuildValue("(ii)", 0, 0);
    Py_ssize_t nrows = PyLong_AsSsize_t(args[1]), ncols = PyLong_AsSsize_t(args[2]);
    int writable = PyObject_IsTrue(args[3]);
    if ((nrows == -1 || ncols == -1 || writable < 0) && PyErr_Occurred()) return NULL;
    Py_buffer view;
    if (float_view(obj, &view, writable, kernel, name) != 0) return NULL;
    PyObject *result = NULL;
    if (view.ndim != 2 || view.shape[0] != nrows || view.shape[1] != ncols) {
        PyObject *shape = attr_or_unknown(obj, "shape");
        PyErr_Format(PyExc_ValueError, "%U: %U has shape %S, and the kernel reads (%zd, %zd)",
                     kernel, name, shape, nrows, ncols);
        Py_XDECREF(shape);
        PyBuffer_Release(&view);
        return NULL;
    }
    Py_ssize_t row = view.strides[0], col = view.strides[1];
    Py_ssize_t ld = nrows > 1 ? row / 4 : ncols;
    if (ncols > 1 && col != 4)
        PyErr_Format(PyExc_ValueError,
                     "%U: %U's rows are not contiguous (strides (%zd, %zd)); the kernel reads "
                     "each row as one block", kernel, name, row, col);
    else if (nrows > 1 && (row < 0 || row % 4 != 0))
        PyErr_Format(PyExc_ValueError,
                     "%U: %U's rows are %zd bytes apart; the kernel needs a whole number of "
                     "floats, not negative", kernel, name, row);
    else if (writable && nrows > 1 && ncols > 0 && row < 4 * ncols)
        PyErr_Format(PyExc_ValueError,
                     "%U: %U's rows overlap (%zd bytes apart, %zd bytes long), and the kernel "
                     "writes them", kernel, name, row, 4 * ncols);
    else
        result = Py_BuildValue("(Nn)", PyLong_FromVoidPtr(view.buf), ld);
    PyBuffer_Release(&view);
    return result;
}

/* strided(array, shape, writable, kernel, name) -> (address, strides in floats): a float32
 * array of exactly `shape` (a tuple) read through its own strides, each a whole number of
 * floats: any view NumPy makes (transposed, sliced, broadcast with 0 strides, reversed) keeps
 * every element (i0, i1, ...) with i < shape inside its buffer, and the kernel touches no
 * other. Written (writable): its last stride must be one float (where the last dimension is
 * over 1) and every other stride at least the extent of the dimensions inside it, so that no
 * two elements share memory. None gives (0, (0, ...)). */
static PyObject *strided(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 5) {
        PyErr_Format(PyExc_TypeError, "strided() takes 5 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *obj = args[0], *want = args[1], *kernel = args[3], *name = args[4];
    if (!PyTuple_Check(want)) {
        PyErr_SetString(PyExc_TypeError, "strided(): the shape must be a tuple");
        return NULL;
    }
    Py_ssize_t nd = PyTuple_Size(want);
    if (obj == Py_None) {
        PyObject *zeros = PyTuple_New(nd);
        if (!zeros) return NULL;
        for (Py_ssize_t i = 0; i < nd; i++) PyTuple_SetItem(zeros, i, PyLong_FromLong(0));
        return Py_BuildValue("(iN)", 0, zeros);
    }
    int writable = PyObject_IsTrue(args[2]);
    if (writable < 0) return NULL;
    Py_buffer view;
    if (float_view(obj, &view, writable, kernel, name) != 0) return NULL;
    PyObject *result = NULL, *strides = NULL;
    int same = view.ndim == nd;
    for (Py_ssize_t i = 0; same && i < nd; i++) {
        Py_ssize_t d = PyLong_AsSsize_t(PyTuple_GetItem(want, i));
        if (d == -1 && PyErr_Occurred()) goto done;
        same = view.shape[i] == d;
    }
    if (!same) {
        PyObject *shape = attr_or_unknown(obj, "shape");
        PyErr_Format(PyExc_ValueError, "%U: %U has shape %S, and the kernel reads %S", kernel,
                     name, shape, want);
        Py_XDECREF(shape);
        goto done;
    }
    strides = PyTuple_New(nd);
    if (!strides) goto done;
    int empty = 0; /* no element: nothing read or written, whatever the strides */
    for (Py_ssize_t i = 0; i < nd; i++) empty |= view.shape[i] == 0;
    Py_ssize_t inner = 1; /* floats spanned by the dimensions inside the current one */
    for (Py_ssize_t i = nd - 1; i >= 0; i--) {
        Py_ssize_t st = view.strides ? view.strides[i] : 0, d = view.shape[i];
        if (!view.strides) { /* C-contiguous */
            st = 4 * inner;
        }
        if (st % 4 != 0 && !empty) {
            PyErr_Format(PyExc_ValueError,
                         "%U: %U's elements are %zd bytes apart along dimension %zd; the "
                         "kernel needs a whole number of floats", kernel, name, st, i);
            goto done;
        }
        if (writable && !empty && d > 1 && (i == nd - 1 ? st != 4 : st < 4 * inner)) {
            PyObject *got = attr_or_unknown(obj, "strides");
            PyErr_Format(PyExc_ValueError,
                         "%U: %U's strides %S let elements share memory or leave its rows "
                         "not contiguous, and the kernel writes it", kernel, name, got);
            Py_XDECREF(got);
            goto done;
        }
        PyTuple_SetItem(strides, i, PyLong_FromSsize_t(st / 4));
        if (d > 1) inner = (st < 0 ? -st : st) / 4 * (d - 1) + inner;
    }
    result = Py_BuildValue("(NO)", PyLong_FromVoidPtr(view.buf), strides);
done:
    Py_XDECREF(strides);
    PyBuffer_Release(&view);
    return result;
}

static PyMethodDef methods[] = {
    {"address", (PyCFunction)(void (*)(void))address, METH_FASTCALL,
     "address(array, floats, writable, kernel, name): the address of a float32 C-contiguous "
     "array holding at least `floats` elements (None: 0), or TypeError/ValueError"},
    {"rows", (PyCFunction)(void (*)(void))rows, METH_FASTCALL,
     "rows(array, nrows, ncols, writable, kernel, name): (address, row stride in floats) of a "
     "float32 nrows x ncols array with contiguous rows (None: (0, 0)), or "
     "TypeError/ValueError"},
    {"strided", (PyCFunction)(void (*)(void))strided, METH_FASTCALL,
     "strided(array, shape, writable, kernel, name): (address, strides in floats) of a "
     "float32 array of exactly that shape read through its own strides (None: (0, zeros)), "
     "or TypeError/ValueError"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_kernels",
    "compiled kernels, called through ctypes (_native.py); address() and rows() check the "
    "arrays handed to them",
    -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__kernels(void) { return PyModule_Create(&module); }
