"""Kim et al. (2019)'s alignment-recovery baselines that need no sentence
embeddings: the Levenshtein distance between a source and a target string
(names, numbers and cognates survive translation), and the NMT posterior
(`paraflax.inference.scoring.nmt_posterior_matrix`). Both give a full
[source, target] score matrix; `recovery_errors` applies the protocol of
`paraflax.evaluation.alignment.recovery_errors` to it.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

BASELINES = ("levenshtein", "nmt_posterior")


def levenshtein_matrix(src: Sequence[str], tgt: Sequence[str]
                       ) -> np.ndarray:
  """[len(src), len(tgt)] character edit distances (insert, delete and
  substitute each cost 1), rapidfuzz's bit-parallel kernel over all pairs."""
  from rapidfuzz import distance  # pylint: disable=g-import-not-at-top
  from rapidfuzz import process  # pylint: disable=g-import-not-at-top
  return process.cdist(list(src), list(tgt),
                       scorer=distance.Levenshtein.distance, dtype=np.int32)


def recovery_errors(scores: np.ndarray, *, seed: int = 0
                    ) -> dict[str, float]:
  """Alignment recovery error rates (%) from a [N, N] matrix of sim(x_i,
  y_j), higher is more similar: the target side shuffled by `seed`, each
  sentence's best match on the other side, ties to the lower index."""
  scores = np.asarray(scores)
  order = np.random.default_rng(seed).permutation(len(scores))
  shuffled = scores[:, order]
  errors_src = 100 * float(np.mean(np.argmax(shuffled, 1)
                                   != np.argsort(order)))
  errors_tgt = 100 * float(np.mean(np.argmax(shuffled, 0) != order))
  return {"src2tgt": errors_src, "tgt2src": errors_tgt,
          "mean": (errors_src + errors_tgt) / 2}
