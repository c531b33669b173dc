"""The sentence-transformers side of mining_vs_sentence_transformers.py,
run under the peer's python (torch and sentence-transformers installed;
nothing of paraflax imported).

What a sentence-transformers user writes to mine a bitext from embeddings
they already have, after the library's parallel-sentence-mining example
(whose k-NN is faiss's IndexFlatIP; here the library's own search):
`util.semantic_search` (exact cosine top-k, chunked, torch) both ways, the
ratio margin of each candidate (its cosine over the mean of both sides'
k-NN cosines), each sentence's best candidate both ways, then pairs
greedily by score with each sentence used once (LASER's `max`).

  PEER_PYTHON lab/benchmarks/sentence_transformers_child.py --x x.npy \\
      --y y.npy --k 4 --repeats 3 --pairs pairs.npz

Prints one JSON line: the seconds of each repeat and the pairs written to
--pairs (src, tgt, score arrays).
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np
import sentence_transformers
import torch
from sentence_transformers import util


def knn(queries: torch.Tensor, corpus: torch.Tensor, k: int
        ) -> tuple[np.ndarray, np.ndarray]:
  """Cosines [N, k] and corpus indices [N, k] by `util.semantic_search`."""
  hits = util.semantic_search(queries, corpus, top_k=k)
  sims = np.array([[h["score"] for h in row] for row in hits], np.float32)
  idx = np.array([[h["corpus_id"] for h in row] for row in hits], np.int64)
  return sims, idx


def mine(x: np.ndarray, y: np.ndarray, k: int
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """(src, tgt, score) of the pairs, best first."""
  xt, yt = torch.from_numpy(x), torch.from_numpy(y)
  fwd_sims, fwd_idx = knn(xt, yt, k)
  bwd_sims, bwd_idx = knn(yt, xt, k)
  x_mean, y_mean = fwd_sims.mean(axis=1), bwd_sims.mean(axis=1)
  xn = x / np.linalg.norm(x, axis=1, keepdims=True).clip(1e-12)
  yn = y / np.linalg.norm(y, axis=1, keepdims=True).clip(1e-12)

  def best(a, b, idx, a_mean, b_mean):
    cos = np.einsum("nd,nkd->nk", a, b[idx])
    score = cos / ((a_mean[:, None] + b_mean[idx]) / 2)
    pick = score.argmax(axis=1)
    return idx[np.arange(len(a)), pick], score.max(axis=1)

  fwd_best, fwd_score = best(xn, yn, fwd_idx, x_mean, y_mean)
  bwd_best, bwd_score = best(yn, xn, bwd_idx, y_mean, x_mean)
  src = np.concatenate([np.arange(len(x)), bwd_best])
  tgt = np.concatenate([fwd_best, np.arange(len(y))])
  score = np.concatenate([fwd_score, bwd_score])
  kept, seen_src, seen_tgt = [], set(), set()
  for i in np.argsort(-score, kind="stable"):
    if src[i] not in seen_src and tgt[i] not in seen_tgt:
      seen_src.add(src[i])
      seen_tgt.add(tgt[i])
      kept.append(i)
  kept = np.asarray(kept, np.int64)
  return src[kept], tgt[kept], score[kept]


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--x", required=True)
  parser.add_argument("--y", required=True)
  parser.add_argument("--k", type=int, default=4)
  parser.add_argument("--repeats", type=int, default=3)
  parser.add_argument("--pairs", required=True)
  args = parser.parse_args()
  x, y = np.load(args.x), np.load(args.y)
  seconds = []
  for _ in range(args.repeats):
    start = time.perf_counter()
    src, tgt, score = mine(x, y, args.k)
    seconds.append(time.perf_counter() - start)
  np.savez(args.pairs, src=src, tgt=tgt, score=score)
  print(json.dumps({"seconds": seconds, "pairs": len(score),
                    "sentence_transformers": sentence_transformers.__version__,
                    "torch": torch.__version__,
                    "torch_threads": torch.get_num_threads()}))


if __name__ == "__main__":
  main()
