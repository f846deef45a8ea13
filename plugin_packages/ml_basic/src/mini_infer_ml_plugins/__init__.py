"""mini-infer-ml-plugins: kernels of the ``ai.onnx.ml`` domain (on the ``cpu`` device)."""

__version__ = "0.1.0"
NAMESPACE = "mini_infer.ml"

__all__ = ["NAMESPACE", "__version__"]
