"""Ahead-of-time compilation for a topology this host does not own.

`paraflax compile` builds the programs a command would run (the train step
of each recipe, the beam search, the embedder, the k-NN block step, the LSH
step) from abstract shapes alone, on a mesh of a TPU topology's devices
(libtpu's compile-only client) or of this host's devices, compiles them and
reports their memory per chip, FLOPs, HBM traffic and collectives, and a
roofline step time from the chip table (`chips.py`). Nothing is
materialised and no data is read.
"""
