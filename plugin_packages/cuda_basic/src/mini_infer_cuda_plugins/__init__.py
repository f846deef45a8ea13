"""mini-infer-cuda-plugins: the CUDA device (CuPy), imported lazily."""

__version__ = "0.1.0"
NAMESPACE = "mini_infer.cuda"

__all__ = ["NAMESPACE", "__version__"]
