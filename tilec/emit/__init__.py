"""Emitters: planned tile IR → Triton source (any GPU, and the CPU through Triton's interpreter)
or Gluon source (Hopper and newer)."""
