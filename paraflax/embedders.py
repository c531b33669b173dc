"""Sentence encoders of trained workdirs, one entry per recipe, for
`paraflax embed` and `paraflax mine --workdir`.

Languages are checked against the workdir's config before its checkpoint is
loaded, so a wrong `--lang` fails at once.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from paraflax import errors
from paraflax.recipes import workdir as workdir_lib

EmbedFn = Callable[[Sequence[str], str], np.ndarray]  # (texts, lang) -> [N, d]


def _paraphrase(workdir: str, langs: Sequence[str | None]
                ) -> tuple[EmbedFn, int]:
  other = sorted({lang for lang in langs if lang not in (None, "en")})
  if other:
    raise errors.ConfigError(
        f"{workdir} holds an English paraphrase encoder (recipe "
        f"'paraphrase'), which cannot embed {other[0]!r} text: use a "
        "bilingual workdir, or --lang en.")
  from paraflax.recipes import paraphrase  # pylint: disable=g-import-not-at-top
  embedder, params, step = paraphrase.load_for_inference(workdir)
  return (lambda texts, lang: embedder(params, texts)), step


def _bilingual(workdir: str, langs: Sequence[str | None]
               ) -> tuple[EmbedFn, int]:
  from paraflax.recipes import bilingual  # pylint: disable=g-import-not-at-top
  known = bilingual.languages(workdir_lib.load_config(workdir, "bilingual"))
  for lang in langs:
    if lang not in known:
      raise errors.ConfigError(
          f"{workdir} holds a bilingual model of {' and '.join(known)}: pass "
          f"--lang {' or --lang '.join(known)} to pick its encoder (got "
          f"{'no --lang' if lang is None else repr(lang)}).")
  embedder, params, step = bilingual.load_for_inference(workdir)
  return (lambda texts, lang: embedder(params, texts, lang)), step


# recipe -> (workdir, languages to embed) -> (embed function, checkpoint step)
EMBEDDERS: dict[str, Callable[[str, Sequence[str | None]],
                              tuple[EmbedFn, int]]] = {
    "paraphrase": _paraphrase, "bilingual": _bilingual}


def load(workdir: str, langs: Sequence[str | None]) -> tuple[EmbedFn, int]:
  """The encoder of `workdir`, checked to embed every language in `langs`
  (None: the workdir's only language, for monolingual encoders)."""
  recipe = workdir_lib.read_config(workdir).recipe
  if recipe not in EMBEDDERS:
    raise errors.ConfigError(
        f"{workdir} holds a {recipe!r} model, which does not embed "
        f"sentences; use a {' or '.join(map(repr, EMBEDDERS))} workdir.")
  return EMBEDDERS[recipe](workdir, langs)
