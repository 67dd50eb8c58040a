"""tilec: a tile-IR compiler for memory-bound kernels inside PyTorch Inductor."""

__version__ = "0.1.0"
