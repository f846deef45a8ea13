"""Example third-party mini-infer plugin: com.example::L2Norm."""

__version__ = "0.1.0"
