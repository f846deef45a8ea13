"""mini-infer-cpu-native: compiled CPU kernels that win over cpu_basic's by priority."""

__version__ = "0.1.0"
NAMESPACE = "mini_infer.cpu_native"
#: above cpu_basic's 0: where both are installed, these plugins are chosen
PRIORITY = 10

__all__ = ["NAMESPACE", "PRIORITY", "__version__"]
