"""Sentence pairs scored with a bilingual workdir's two encoders: the work
behind `paraflax score-pairs`, `align-eval` and `train-mlp`.

Every similarity sees the non-English sentence as its source x and the
English one as its target y, whatever order the user's files are in: the
MLP similarity is not symmetric and was trained that way round. The MLP
lives in the workdir (`MLP_FILE`), written by `paraflax train-mlp`.
"""
from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping, Sequence

import numpy as np

from paraflax import embedders
from paraflax import errors
from paraflax import files
from paraflax import similarity
from paraflax.data import readers
from paraflax.evaluation import alignment
from paraflax.evaluation import paracrawl

MLP_FILE = "mlp_similarity.msgpack"
MLP_REPORT = "mlp_similarity.json"
ENGLISH = "en"


@dataclasses.dataclass(frozen=True)
class Encoders:
  """A bilingual workdir's encoders, ready to embed `lang` and English."""
  workdir: str
  embed: embedders.EmbedFn
  lang: str  # the non-English language
  step: int  # checkpoint step


def workdir_languages(workdir: str) -> tuple[str, str]:
  """(the other language, English) of a bilingual workdir, from its config."""
  from paraflax.recipes import bilingual  # pylint: disable=g-import-not-at-top
  from paraflax.recipes import workdir as workdir_lib  # pylint: disable=g-import-not-at-top
  langs = bilingual.languages(workdir_lib.load_config(workdir, "bilingual"))
  return tuple(sorted(langs, key=lambda lang: lang == ENGLISH))


def open_workdir(workdir: str, src_lang: str, tgt_lang: str) -> Encoders:
  """The encoders of `workdir`, once both languages are its two, one each."""
  langs = (src_lang, tgt_lang)
  if src_lang == tgt_lang or ENGLISH not in langs:
    raise errors.ConfigError(
        f"--src-lang {src_lang} --tgt-lang {tgt_lang}: give the workdir's "
        "two languages, English and the other one, one on each side.")
  embed, step = embedders.load(workdir, langs)
  other = src_lang if tgt_lang == ENGLISH else tgt_lang
  return Encoders(workdir, embed, other, step)


def mlp_path(workdir: str) -> str:
  return os.path.join(workdir, MLP_FILE)


def context(name: str, workdir: str, *, k: int = 10) -> dict:
  """What similarity `name` needs besides the embeddings."""
  if name == "csls":
    return {"k": k}
  if name != "mlp":
    return {}
  path = mlp_path(workdir)
  if not os.path.exists(path):
    raise errors.DataError(
        f"{path}: no MLP similarity for this workdir yet. Train it with "
        f"`paraflax train-mlp --workdir {workdir}`, or pick another "
        "--similarity.")
  return {"model": similarity.load_mlp(path)}


def read_pairs(path: str) -> list[tuple[str, str]]:
  """`source<TAB>target` per line; anything else stops at its line."""
  rows, numbers = readers.read_tsv(path, fields=2)
  for (src, tgt), number in zip(rows, numbers):
    if not src.strip() or not tgt.strip():
      side = "source" if not src.strip() else "target"
      raise errors.DataError(
          f"{path}:{number}: empty {side} sentence. Every line needs "
          "source<TAB>target, both non-empty.")
  return rows


def _oriented(enc: Encoders, src_lang: str, src: Sequence[str],
              tgt: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
  """(non-English embeddings, English embeddings) of two aligned sides."""
  xx, en = (src, tgt) if src_lang == enc.lang else (tgt, src)
  return enc.embed(list(xx), enc.lang), enc.embed(list(en), ENGLISH)


def score_pairs(enc: Encoders, pairs: Sequence[tuple[str, str]],
                src_lang: str, name: str, ctx: Mapping) -> np.ndarray:
  """[N] float32, higher = more likely a translation, in input order."""
  x, y = _oriented(enc, src_lang, [p[0] for p in pairs],
                   [p[1] for p in pairs])
  return similarity.score(name, x, y, **ctx)


def write_scores(path: str, scores: np.ndarray) -> None:
  # 9 significant digits give back the float32 exactly, so no ties appear.
  files.write_text_atomic(path, "".join(f"{s:.9g}\n" for s in scores))


def align_errors(enc: Encoders, src: Sequence[str], tgt: Sequence[str],
                 src_lang: str, similarities: Mapping[str, Mapping], *,
                 seed: int = 0, name: str = "") -> list[dict]:
  """Alignment recovery error rows (`alignment.format_table`), xx <-> en."""
  x, y = _oriented(enc, src_lang, src, tgt)
  return [{"set": name, "lang": enc.lang, "n": len(x), "similarity": sim,
           **alignment.recovery_errors(x, y, sim, seed=seed, **ctx)}
          for sim, ctx in similarities.items()]


def train_mlp(enc: Encoders, config: similarity.MLPConfig) -> dict:
  """Trains the workdir's MLP similarity (`paracrawl.train_mlp`: positives
  from newstest_train_pool, negatives from ParaCrawl v3 text or random) and
  writes it, with a JSON report of the config and epochs, into the workdir.
  """
  model, history = paracrawl.train_mlp(enc.embed, enc.lang, config)
  similarity.save_mlp(model, mlp_path(enc.workdir))
  report = {"lang": enc.lang, "checkpoint_step": enc.step,
            "config": dataclasses.asdict(config), "epochs": history}
  files.write_text_atomic(os.path.join(enc.workdir, MLP_REPORT),
                          json.dumps(report, indent=2) + "\n")
  return report
