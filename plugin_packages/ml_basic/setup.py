"""The one compiled part, optional: ``mini_infer_ml_plugins.ops._ctrees`` (plain C, reached with
ctypes), the tree-ensemble traversal. Where it cannot be built (no C compiler) the package
installs without it and walks the trees with NumPy instead (``ops/_trees.py``)."""

from setuptools import Extension, setup

setup(ext_modules=[Extension(
    "mini_infer_ml_plugins.ops._ctrees",
    sources=["src/mini_infer_ml_plugins/ops/_ctrees.c"],
    extra_compile_args=["-O3", "-fno-math-errno", "-std=c11"],
    optional=True,
)])
