"""Parallel sentence mining: k-NN (`knn`, exact on JAX devices; `faiss_knn`),
margin scores (`margin`), LASER's files (`embeddings_io`) and the
`paraflax mine` command (`pipeline`)."""
