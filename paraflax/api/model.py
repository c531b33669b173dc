"""`paraflax.load` and `paraflax.train`: a trained workdir as a Model that
embeds, translates or scores pairs, whatever its recipe."""
from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from paraflax import choices
from paraflax import errors
from paraflax.api import inputs

if TYPE_CHECKING:  # only for the annotations: importing them loads jax
  import numpy as np
  from paraflax.decoding import translator as translator_lib


class Model:
  """A trained workdir, restored from its best checkpoint (else its newest).

  `recipe` names what it holds: "paraphrase" (an English sentence encoder),
  "bilingual" (one encoder per language, into one space) or "nmt" (a
  translator into English). Methods the recipe cannot serve raise
  ConfigError saying which recipe can.
  """

  def __init__(self, workdir: str | os.PathLike):
    from paraflax.recipes import workdir as workdir_lib  # pylint: disable=g-import-not-at-top
    self.workdir = os.fspath(workdir)
    self.config = workdir_lib.read_config(self.workdir)
    self.recipe: str = self.config.recipe
    self.step: int = -1  # the restored checkpoint's step
    self._embed = None
    self._translator = None
    if self.recipe == "nmt":
      from paraflax.recipes import nmt as nmt_lib  # pylint: disable=g-import-not-at-top
      self._translator = nmt_lib.load_translator(self.workdir)
      self.step = self._translator[2]
    else:
      from paraflax.inference import embedders  # pylint: disable=g-import-not-at-top
      embedders.check(self.workdir, [])  # a recipe that embeds
      self._embed, self.step = embedders.load(self.workdir, [])

  def __repr__(self) -> str:
    return (f"paraflax.Model({self.workdir!r}, recipe={self.recipe!r}, "
            f"step={self.step})")

  @property
  def languages(self) -> tuple[str, ...]:
    """The languages `embed` reads (none for an nmt model)."""
    if self.recipe == "bilingual":
      from paraflax.recipes import bilingual  # pylint: disable=g-import-not-at-top
      return tuple(bilingual.languages(self.config))
    return ("en",) if self.recipe == "paraphrase" else ()

  def _cannot(self, what: str, recipes: str) -> errors.ConfigError:
    return errors.ConfigError(
        f"{self.workdir} holds a {self.recipe!r} model, which cannot {what}; "
        f"load a {recipes} workdir.")

  def embed(self, texts: Sequence[str], lang: str | None = None
            ) -> np.ndarray:
    """[len(texts), d] float32 sentence embeddings of a list of sentences
    (str, none empty; an empty list is a DataError). `lang` picks a
    bilingual model's encoder (required there); a paraphrase model embeds
    English (None or "en")."""
    if self._embed is None:
      raise self._cannot("embed sentences", "'paraphrase' or 'bilingual'")
    texts = inputs.sentences(texts, "texts", "embed")
    from paraflax.inference import embedders  # pylint: disable=g-import-not-at-top
    embedders.check(self.workdir, [lang], "lang")
    return self._embed(texts, lang)

  def translate(self, texts: Sequence[str], beam: int = 5, nbest: int = 1,
                alpha: float | None = None, batch_size: int = 32,
                stop: str = "exact"
                ) -> list[str] | list[list[translator_lib.Hypothesis]]:
    """Translations into English of a list of sentences (str; an empty
    list is a DataError), in input order: the 1-best texts when `nbest` is
    1, else each input's `nbest` Hypothesis(text, score, logprob, tokens,
    ended), best first. An empty sentence gets "" (none); inputs over
    data.max_len subwords are truncated. `alpha` (length normalisation)
    defaults to the config's; `stop` as `paraflax translate --stop`."""
    if self._translator is None:
      raise self._cannot("translate", "'nmt'")
    texts = inputs.sentences(texts, "texts", "translate", blank=True)
    from paraflax.inference import translation  # pylint: disable=g-import-not-at-top
    translator, params, _ = self._translator
    found = translation.translate_texts(
        translator, params, texts, beam=beam, nbest=nbest, alpha=alpha,
        batch_size=batch_size, stop=stop)
    if nbest == 1:
      return [hyps[0].text if hyps else "" for hyps in found]
    return found

  def score_pairs(self, src: Sequence[str], tgt: Sequence[str],
                  similarity: str = "cosine", *, src_lang: str | None = None,
                  tgt_lang: str | None = None, k: int = 10) -> np.ndarray:
    """[N] float32 scores of the pairs (src[i], tgt[i]), higher = more
    likely a translation, as `paraflax score-pairs`. By default `src` is in
    the non-English language and `tgt` in English; `similarity` is one of
    cosine, euclidean, csls (its `k` neighbours among the other side) or mlp
    (after `paraflax train-mlp`). Needs a bilingual model."""
    if self.recipe != "bilingual":
      raise self._cannot("score sentence pairs", "'bilingual'")
    src = inputs.sentences(src, "src", "score")
    tgt = inputs.sentences(tgt, "tgt", "score")
    if len(src) != len(tgt):
      raise errors.DataError(f"{len(src)} source and {len(tgt)} target "
                             "sentences: give one target per source.")
    if similarity not in choices.SIMILARITIES:
      raise errors.ConfigError(f"similarity={similarity!r}; use one of "
                               f"{', '.join(choices.SIMILARITIES)}.")
    k = inputs.count(k, "k")
    from paraflax.evaluation import bilingual as bilingual_eval  # pylint: disable=g-import-not-at-top
    from paraflax.inference import scoring  # pylint: disable=g-import-not-at-top
    default = scoring.workdir_languages(self.workdir)
    src_lang, tgt_lang = src_lang or default[0], tgt_lang or default[1]
    other = scoring.check_languages(self.workdir, src_lang, tgt_lang)
    enc = bilingual_eval.Encoders(self.workdir, self._embed, other, self.step)
    return scoring.score_pairs(enc, list(zip(src, tgt)), src_lang, similarity,
                               scoring.context(similarity, self.workdir, k=k))


def load(workdir: str | os.PathLike) -> Model:
  """The model trained in `workdir`, whatever its recipe."""
  return Model(workdir)


def train(config: Any, workdir: str | os.PathLike,
          overrides: Sequence[str] = ()) -> Model:
  """Trains (or resumes) `config` in `workdir` as `paraflax train` does and
  returns the trained model. `config`: a ConfigDict, or a config file
  ("configs/bilingual.py", "configs/bilingual.py:de"); `overrides`:
  "--config.key=value" strings, applied after it."""
  from paraflax.recipes import train as train_lib  # pylint: disable=g-import-not-at-top
  train_lib.train(os.fspath(config) if isinstance(config, os.PathLike)
                  else config, os.fspath(workdir), overrides)
  return load(workdir)
