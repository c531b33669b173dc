"""`paraflax score-paraphrases`: `filtering.score_paraphrases.score_file`
with the block scorers whose resources the flags name.

It sits here, above filtering, because a resource may be a trained model
of a recipe (`--classifier-workdir`: `ref_prob`); the scores themselves and
the streaming, resumable file stay in `filtering/`.
"""
from __future__ import annotations

import functools
from typing import Any

from paraflax.filtering import lm as lm_lib
from paraflax.filtering import score_paraphrases
from paraflax.filtering import scores


def block_scorers(classifier_workdir: str | None = None,
                  lm: str | None = None) -> list[scores.BlockScorer]:
  """The optional scores the flags ask for, their resources loaded (a bad
  one stops the run here, before the output is claimed)."""
  found = []
  if classifier_workdir:
    from paraflax.recipes import ref_classifier  # pylint: disable=g-import-not-at-top
    found.append(ref_classifier.ref_prob_scorer(classifier_workdir))
  if lm:
    found.append(lm_lib.perplexity_scorer(lm))
  return found


def score_file(input: str, output: str, overwrite: bool = False,
               classifier_workdir: str | None = None, lm: str | None = None,
               **options: Any) -> int:
  """Scores `input` into `output` (see `filtering.score_paraphrases`), with
  `ref_prob` when `classifier_workdir` is given and `lm_ppl` when `lm` (a
  KenLM model file) is; `options` are the filtering function's own flags,
  passed on."""
  return score_paraphrases.score_file(
      input, output, overwrite=overwrite,
      block_scorers=block_scorers(classifier_workdir, lm), **options)


def beam_score_file(input: str, output: str,
                    classifier_workdir: str | None = None,
                    lm: str | None = None, **options: Any) -> int:
  """`paraflax beam-score`: `score_file` as a Beam pipeline
  (`filtering.beam_scoring`); each worker builds the block scorers from
  the same flags (a picklable factory, not a loaded model)."""
  from paraflax.filtering import beam_scoring  # pylint: disable=g-import-not-at-top
  return beam_scoring.score_file(
      input, output, functools.partial(block_scorers, classifier_workdir, lm),
      **options)
