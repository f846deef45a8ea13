"""The compiled parts, optional: ``mini_infer_ml_plugins.ops._ctrees`` (the tree-ensemble
traversal) and ``mini_infer_ml_plugins.ops._cml`` (the SVM's probabilities, the linear models'
few-row path), plain C extension modules. Where they cannot be built (no C compiler) the
package installs without them and the kernels keep their NumPy form (``ops/_trees.py``,
``ops/svm.py``, ``ops/linear.py``)."""

from setuptools import Extension, setup

_FLAGS = ["-O3", "-fno-math-errno", "-std=c11"]

setup(ext_modules=[
    Extension("mini_infer_ml_plugins.ops._ctrees",
              sources=["src/mini_infer_ml_plugins/ops/_ctrees.c"],
              depends=["src/mini_infer_ml_plugins/ops/_ctrees.h"],
              extra_compile_args=_FLAGS, optional=True),
    Extension("mini_infer_ml_plugins.ops._cml",
              sources=["src/mini_infer_ml_plugins/ops/_cml.c"],
              extra_compile_args=_FLAGS, optional=True),
])
