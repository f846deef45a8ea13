"""mini-infer-cuda-plugins: the ``cuda`` device and its operator kernels, on CuPy.

Importing the package, its hooks or its catalog imports neither CuPy nor a kernel module
(``ops``); CuPy is imported when the device is used or a kernel receives a CuPy array.
"""

__version__ = "0.1.0"
NAMESPACE = "mini_infer.cuda"

__all__ = ["NAMESPACE", "__version__"]
