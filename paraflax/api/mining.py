"""`paraflax.mine` and its kin: margin-based mining of embeddings, its
candidates and best threshold, and mining benchmarks."""
from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from paraflax import errors
from paraflax.api import inputs

if TYPE_CHECKING:  # only for the annotations: importing them loads jax
  from paraflax.evaluation import mining_set
  from paraflax.mining import margin as margin_lib

Pair = tuple[int, int]


def _check_mining(margin: str, retrieval: str,
                  threshold: float | None = None) -> None:
  """The checks of `paraflax mine`'s settings (`pipeline.Options`): the
  margin and retrieval among the choices, a finite threshold."""
  import numbers  # pylint: disable=g-import-not-at-top
  from paraflax.mining import pipeline  # pylint: disable=g-import-not-at-top
  if threshold is not None and (isinstance(threshold, bool) or
                                not isinstance(threshold, numbers.Real)):
    raise errors.ConfigError(
        f"threshold={inputs.quoted(threshold)} ({type(threshold).__name__}); "
        "use a finite number (or None to keep every pair).")
  pipeline.Options(margin=margin, retrieval=retrieval, threshold=threshold)


def mine(x: Any, y: Any, k: int = 4, margin: str = "ratio",
         retrieval: str = "max", threshold: float | None = None
         ) -> margin_lib.Mined:
  """Margin-based mining (Artetxe & Schwenk 2019) of embeddings x [Nx, d]
  and y [Ny, d], exact k-NN both ways: the pairs as (src, tgt, score)
  arrays, src and tgt indexing x and y, by descending score. `margin`: ratio,
  distance or absolute; `retrieval`: fwd, bwd, intersect or max (each
  sentence at most once); pairs under `threshold` (a finite number) are
  dropped."""
  _check_mining(margin, retrieval, threshold)
  k = inputs.count(k, "k")
  x, y = inputs.embeddings(x, "x"), inputs.embeddings(y, "y")
  from paraflax.mining import margin as margin_lib  # pylint: disable=g-import-not-at-top
  return margin_lib.mine(x, y, k, margin=margin, strategy=retrieval,
                         threshold=threshold)


def candidates(x: Any, y: Any, k: int = 4, margin: str = "ratio"
               ) -> margin_lib.Mined:
  """Every pair that `mine` chooses from (a sentence and one of its k
  nearest neighbours, either way) once, with its margin score."""
  _check_mining(margin, "max")
  k = inputs.count(k, "k")
  x, y = inputs.embeddings(x, "x"), inputs.embeddings(y, "y")
  from paraflax.mining import margin as margin_lib  # pylint: disable=g-import-not-at-top
  return margin_lib.every_candidate(
      margin_lib.score_candidates(x, y, k, margin=margin))


def best_threshold(pairs: margin_lib.Mined, gold: Iterable[Pair]
                   ) -> tuple[float, float, float, float]:
  """(threshold, precision, recall, F1) at the F1-optimal threshold of
  `pairs` (from `mine` or `candidates`) against the gold (src, tgt) pairs
  (BUCC's rule); inf and zeros when no pair is gold."""
  from paraflax.mining import margin as margin_lib  # pylint: disable=g-import-not-at-top
  return margin_lib.best_threshold(pairs.score, pairs.src, pairs.tgt,
                                   set(gold))


def mining_benchmark(lang: str = "", split: str = "", gold: int = 1000,
                     distractors: int = 4000, seed: int = 0, *,
                     data: str = "") -> mining_set.MiningSet:
  """A mining benchmark as `paraflax mining-set` writes it: .src
  (non-English) and .tgt (English) sentences, the .gold (src, tgt) index
  pairs hidden among them, and the .recipe that made them. `lang` and
  `split`: the bundled news sets; or `data`, a data spec of any bitext
  (e.g. "bitext_multi30k_de_en:validation"), as `mining-set --data`."""
  from paraflax.evaluation import mining_set as mining_set_lib  # pylint: disable=g-import-not-at-top
  if bool(data) == bool(lang or split):
    raise errors.ConfigError(
        "give lang and split (the bundled news sets) or data (a data spec "
        "of any bitext), not both.")
  if data:
    return mining_set_lib.build_from_bitext(
        data, gold=gold, distractors=distractors, seed=seed)
  return mining_set_lib.build(lang, split, gold=gold, distractors=distractors,
                              seed=seed)
