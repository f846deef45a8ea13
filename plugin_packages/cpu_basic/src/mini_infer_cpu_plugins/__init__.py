"""mini-infer-cpu-plugins: NumPy kernels and the CPU device."""

__version__ = "0.1.0"
NAMESPACE = "mini_infer.cpu"

__all__ = ["NAMESPACE", "__version__"]
