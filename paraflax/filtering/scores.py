"""Per-pair scores of a back-translated paraphrase (reference, translation),
the quantities the paper filters on.

Tokens are the paraphrase encoders' lowercased word tokens
(`data.words.tokenize`), so a length bound means what the model sees.
Every scorer takes a `Pair` and returns a float; `SCORERS` names those
every run computes, `OPTIONAL` those that need a per-run resource named by
a flag (built by `score_paraphrases.score_file`), and
`choices.PARAPHRASE_SCORES` lists both for the layers below this one (the
data filters) and for `--help`.
"""
from __future__ import annotations

import collections
import functools
import math
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import NamedTuple

from paraflax.data import words

_BLEU_ORDER = 4


class Pair(NamedTuple):
  reference: list[str]  # tokens of the human side
  translation: list[str]  # tokens of the back-translated side
  cost: float  # the NMT's NLL per subword, as the record gives it


def pair_of(record: dict) -> Pair:
  return Pair(words.tokenize(record["reference"]),
              words.tokenize(record["translation"]), float(record["cost"]))


def _ngrams(tokens: Sequence[str], n: int) -> collections.Counter:
  return collections.Counter(tuple(tokens[i:i + n])
                             for i in range(len(tokens) - n + 1))


def _matches(reference: Sequence[str], translation: Sequence[str], n: int
             ) -> int:
  """Shared n-grams, each counted at most as often as in either side."""
  return sum((_ngrams(reference, n) & _ngrams(translation, n)).values())


def _count(tokens: Sequence[str], n: int) -> int:
  return max(len(tokens) - n + 1, 0)


def overlap(pair: Pair, n: int) -> float:
  """Shared n-grams over the n-grams of the side that has fewer; 0 when
  that side has none (a sentence shorter than n)."""
  fewer = min(_count(pair.reference, n), _count(pair.translation, n))
  return _matches(pair.reference, pair.translation, n) / fewer if fewer \
      else 0.0


def bleu(pair: Pair) -> float:
  """Smoothed sentence BLEU (Nakov et al. 2012): add-one precisions for
  n = 1..4, brevity penalty min(1, exp(1 - (r + 1) / c)).

  An empty translation (c = 0) scores 0: the penalty's limit as c -> 0+,
  where the formula divides by zero; every precision is then 1/1, so the
  penalty alone decides.
  """
  r, c = len(pair.reference), len(pair.translation)
  if not c:
    return 0.0
  log_p = [math.log((_matches(pair.reference, pair.translation, n) + 1)
                    / (_count(pair.translation, n) + 1))
           for n in range(1, _BLEU_ORDER + 1)]
  penalty = min(1.0, math.exp(1 - (r + 1) / c))
  return penalty * math.exp(sum(log_p) / _BLEU_ORDER)


SCORERS: dict[str, Callable[[Pair], float]] = {
    "length": lambda pair: float(len(pair.translation)),
    "cost": lambda pair: pair.cost,
    **{f"overlap_{n}": functools.partial(overlap, n=n) for n in (1, 2, 3)},
    "bleu": bleu,
}


Scorer = Callable[[Pair], float]

# Scorers of a resource the run is given, by flag; one line each.
OPTIONAL = (
    "lm_ppl",  # --lm: filtering.lm.perplexity_scorer
)


def score(record: dict, extra: Mapping[str, Scorer] = MappingProxyType({})
          ) -> dict[str, float]:
  """Every score of one back-translation record, by name: `SCORERS`, then
  `extra` (some of `OPTIONAL`, built for this run)."""
  pair = pair_of(record)
  return {name: scorer(pair)
          for name, scorer in {**SCORERS, **extra}.items()}
