"""Per-pair scores of a back-translated paraphrase (reference, translation),
the quantities the paper filters on.

Tokens are the paraphrase encoders' lowercased word tokens
(`data.words.tokenize`), so a length bound means what the model sees.
Every scorer takes a `Pair` and returns a float; `SCORERS` names them.
Scores that need a resource of the run (a trained classifier, an LM file)
are `BlockScorer`s, built above this room from the command's flags and
named in `OPTIONAL`. `choices.PARAPHRASE_SCORES` lists both kinds of name
for the layers below this one (the data filters) and for `--help`.
"""
from __future__ import annotations

import collections
import functools
import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from paraflax.data import words

_BLEU_ORDER = 4


class Pair(NamedTuple):
  reference: tuple[str, ...]  # tokens of the human side
  translation: tuple[str, ...]  # tokens of the back-translated side
  # The NMT's NLL per subword, as the record gives it; None for human
  # pairs (`paraflax export-pairs`), which no NMT produced: `cost` is null.
  cost: float | None
  # The translation's whole NLL (the record's `nll`, which `paraflax
  # backtranslate` writes); None where the record has none.
  nll: float | None = None


def pair_of(record: dict) -> Pair:
  cost, nll = record["cost"], record.get("nll")
  return Pair(tuple(words.tokenize(record["reference"])),
              tuple(words.tokenize(record["translation"])),
              None if cost is None else float(cost),
              None if nll is None else float(nll))


def cost_per_token(pair: Pair) -> float | None:
  """The translation's NLL per word token of the translation (Wieting et
  al. 2017's translation cost; `cost` is per subword, EOS included): the
  NLL itself for an empty translation; None without the record's `nll`."""
  if pair.nll is None:
    return None
  return pair.nll / max(len(pair.translation), 1)


def _ngrams(tokens: Sequence[str], n: int) -> collections.Counter:
  return collections.Counter(tuple(tokens[i:i + n])
                             for i in range(len(tokens) - n + 1))


# The overlaps and BLEU ask for the same orders of the same pair in a row:
# a small cache counts each once.
@functools.lru_cache(maxsize=8)
def _matches(reference: tuple[str, ...], translation: tuple[str, ...],
             n: int) -> int:
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


SCORERS: dict[str, Callable[[Pair], float | None]] = {
    "length": lambda pair: float(len(pair.translation)),
    "cost": lambda pair: pair.cost,  # per subword, EOS included
    "cost_token": cost_per_token,  # per word token of the translation
    **{f"overlap_{n}": functools.partial(overlap, n=n) for n in (1, 2, 3)},
    "bleu": bleu,
}


# Scores a BlockScorer computes; written only when the command is given its
# resource (ref_prob: --classifier-workdir; lm_ppl: --lm).
OPTIONAL = ("ref_prob", "lm_ppl")


class BlockScorer(NamedTuple):
  """One OPTIONAL score from a resource loaded once per run, computed a
  block of pairs at a time (a model scores a batch faster than one pair at
  a time)."""
  name: str  # the key in `scores`, one of OPTIONAL
  # What tells this resource from another (checkpoint step, parameter
  # digest): it goes into the output's settings, so that a rerun with
  # another resource is refused instead of mixing two in one file.
  identity: dict[str, Any]
  score: Callable[[Sequence[Pair]], Sequence[float]]  # one float per pair


def score_pair(pair: Pair) -> dict[str, float | None]:
  """Every score of SCORERS of one pair, by name."""
  return {name: scorer(pair) for name, scorer in SCORERS.items()}


def score(record: dict) -> dict[str, float | None]:
  """Every score of SCORERS of one back-translation record, by name."""
  return score_pair(pair_of(record))
