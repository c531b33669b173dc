"""Parallel sentence mining: exact k-NN (`knn`) and margin scores (`margin`)."""
