"""SentencePiece models trained on the caller's text, cached by content.

The cache key is a sha256 of the training lines and every trainer option, so a
second `train` call with the same inputs returns the cached model at once.
A seq2seq workdir keeps the (source, target) pair of its bitext as
`SRC_MODEL` and `TGT_MODEL` (`pair`), trained into a cache that every
workdir shares (`ENV`), so that a second workdir over the same text and
settings copies the models instead of training them again.
"""
from __future__ import annotations

import collections
import contextlib
import hashlib
import io
import json
import os
import pathlib
import unicodedata
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np
import sentencepiece as spm

from paraflax import errors
from paraflax import files
from paraflax import quiet
from paraflax.data import readers

if TYPE_CHECKING:
  import seqio

# seqio.SentencePieceVocabulary hard-codes pad=0 and reads eos from the model;
# this is the T5 layout it expects.
_IDS = {"pad_id": 0, "eos_id": 1, "unk_id": 2, "bos_id": -1}
# A single thread and no sampling of input sentences make training
# reproducible; the seed covers the trainer's remaining random choices.
_DETERMINISTIC = {"num_threads": 1, "input_sentence_size": 0,
                  "shuffle_input_sentence": False}
_SEED = 0
SRC_MODEL, TGT_MODEL = "src.spm.model", "tgt.spm.model"
# The models `pair` trains are kept by their key in this user cache, shared
# by every workdir (a sweep's points, a rerun in a new folder, a test
# session), else in the workdir's own spm_cache: "off" or an unwritable
# folder.
ENV = "PARAFLAX_SENTENCEPIECE_CACHE"


def _lines(texts_or_files: Iterable[str | os.PathLike],
           empty: readers.EmptyPolicy) -> list[str]:
  out = []
  for item in texts_or_files:
    if isinstance(item, os.PathLike):
      out += readers.read_lines(item, empty=empty)[0]
    else:
      out.append(item)
  return out


def _key(lines: list[str], spec: dict) -> str:
  digest = hashlib.sha256()
  # The library version is part of the key: another release may train a
  # different model from the same input.
  digest.update(json.dumps([spm.__version__, spec], sort_keys=True).encode())
  for line in lines:
    digest.update(line.encode("utf-8") + b"\n")
  return digest.hexdigest()


def train(texts_or_files: Iterable[str | os.PathLike], *, vocab_size: int,
          model_type: str = "unigram", character_coverage: float = 1.0,
          cache_dir: str | os.PathLike, empty: readers.EmptyPolicy = "error",
          **options: str | int | float | bool) -> pathlib.Path:
  """Trains (or finds in `cache_dir`) a model; returns its `.model` path.

  Args:
    texts_or_files: `str` items are training sentences; `os.PathLike` items
      (e.g. `pathlib.Path`) are files read with `readers.read_lines`. Pass one
      language's text for a per-language model, several for a joint one.
    vocab_size: number of pieces, including the special ids.
    model_type: "unigram", "bpe", "char" or "word".
    character_coverage: share of characters the pieces must cover; 1.0 suits
      Latin scripts.
    cache_dir: folder of the cached models, created if missing.
    empty: empty-line policy for the files.
    **options: further `SentencePieceTrainer` options (part of the cache key).
  """
  lines = _lines(texts_or_files, empty)
  spec = {"vocab_size": vocab_size, "model_type": model_type,
          "character_coverage": character_coverage, **_IDS, **_DETERMINISTIC,
          **options}
  path = pathlib.Path(cache_dir) / f"{_key(lines, spec)}.model"
  if path.exists():
    return path
  # The processes of a run that share the cache train it once: the others
  # wait for the model, then read it.
  with files.waiting_lock(f"{path}.lock"):
    if not path.exists():
      # An iterator and an in-memory writer keep temporary paths out of the
      # model's trainer spec, so the same input gives the same bytes.
      model = io.BytesIO()
      spm.set_random_generator_seed(_SEED)
      spm.SentencePieceTrainer.train(sentence_iterator=iter(lines),
                                     model_writer=model, **spec)
      # Temp name then rename: a reader never sees a partial model.
      with files.atomic_output(path) as f:
        f.write(model.getvalue())
  return path


def load(path: str | os.PathLike) -> seqio.SentencePieceVocabulary:
  """The model at `path` as a `seqio.SentencePieceVocabulary`."""
  quiet.tensorflow()  # seqio loads it
  import seqio  # pylint: disable=g-import-not-at-top  # heavy; only here
  return seqio.SentencePieceVocabulary(os.fspath(path))


def _cache_dir(workdir: str) -> str:
  shared = files.user_cache(ENV, "sentencepiece")
  if shared:
    with contextlib.suppress(OSError):  # a read-only home: the workdir's
      os.makedirs(shared, exist_ok=True)
    if os.access(shared, os.W_OK):
      return shared
  return os.path.join(workdir, "spm_cache")


# At most this many pairs train a workdir's models: a seeded sample of a
# larger corpus (`sample`), all of a smaller one.
SAMPLE_PAIRS = 2_000_000


def sample(items: Iterable, size: int, seed: int = _SEED) -> list:
  """At most `size` of `items`, read once: all of them when there are no
  more, else a uniform sample drawn by `seed` (reservoir sampling), in
  the order they came."""
  rng = np.random.default_rng(seed)
  kept: list = []
  where: list[int] = []
  for i, item in enumerate(items):
    if i < size:
      kept.append(item)
      where.append(i)
      continue
    slot = int(rng.integers(0, i + 1))
    if slot < size:
      kept[slot], where[slot] = item, i
  return [kept[j] for j in np.argsort(where, kind="stable")]


# Model types whose pieces must include every required character.
_PIECE_TYPES = ("unigram", "bpe")
# sentencepiece's advice for scripts of thousands of characters.
CJK_COVERAGE = 0.9995


def char_counts(texts: Iterable[str]) -> collections.Counter:
  """Characters as sentencepiece counts them: NFKC, whitespace (and the
  prefix of each sentence) as one piece."""
  counts: collections.Counter = collections.Counter()
  for text in texts:
    counts.update(unicodedata.normalize("NFKC", " " + text.strip()))
  counts["\u2581"] += counts.pop(" ", 0)
  for space in [c for c in counts if c.isspace()]:
    counts["\u2581"] += counts.pop(space)
  return counts


def required_chars(counts: collections.Counter, coverage: float) -> int:
  """The characters sentencepiece must make pieces of: the most frequent
  ones, until they cover `coverage` of the text's characters."""
  total = sum(counts.values())
  required, covered = 0, 0
  for _, n in counts.most_common():
    if covered >= coverage * total:
      break
    covered, required = covered + n, required + 1
  return required


# The special pieces every model holds besides its characters.
SPECIAL_PIECES = sum(1 for i in _IDS.values() if i >= 0)


def check_size(texts: Iterable[str], size: int, coverage: float = 1.0,
               prefix: str = "vocab.") -> None:
  """A ConfigError naming the keys (`prefix` size, character_coverage)
  when `size` pieces cannot hold the characters that `coverage` of
  `texts` needs: sentencepiece would stop with "Vocabulary size is
  smaller than required_chars" after reading them all."""
  counts = char_counts(texts)
  total = sum(counts.values())
  required, special = required_chars(counts, coverage), SPECIAL_PIECES
  if required + special <= size:
    return
  room = sorted(counts.values(), reverse=True)[:max(size - special, 0)]
  fits = int(sum(room) / total * 10_000) / 10_000
  raise errors.ConfigError(
      f"{prefix}size={size}: the training text has {len(counts):,} "
      f"distinct characters and {prefix}character_coverage={coverage} "
      f"needs {required:,} of them as pieces, plus {special} special ones. "
      f"Set --config.{prefix}size={required + special} or more, or "
      f"--config.{prefix}character_coverage={min(fits, CJK_COVERAGE)} or "
      f"less (rarer characters become unknown; sentencepiece advises "
      f"{CJK_COVERAGE} for Japanese and Chinese).")


def _sides(pairs: list[tuple[str, str]], joint: bool) -> list[list[str]]:
  """The texts each model trains on: both sides for a joint one."""
  if joint:
    return [[s for p in pairs for s in p]]
  return [[s for s, _ in pairs], [t for _, t in pairs]]


def check_pair(pairs: list[tuple[str, str]], *, size: int, model_type: str,
               joint: bool, character_coverage: float = 1.0,
               prefix: str = "vocab.", **unused: object) -> None:
  """`check_size` of each model `pair` would train on `pairs` (a config's
  vocab block as keywords; `prefix`: where its keys are)."""
  del unused  # the block's other keys (lowercase) change no piece count
  if model_type in _PIECE_TYPES:
    for texts in _sides(pairs, joint):
      check_size(texts, size, character_coverage, prefix)


def _train_pair(folder: str, pairs: list[tuple[str, str]], *, size: int,
                model_type: str, joint: bool, lowercase: bool = False,
                character_coverage: float = 1.0) -> None:
  sides = _sides(pairs, joint)
  check_pair(pairs, size=size, model_type=model_type, joint=joint,
             character_coverage=character_coverage)
  options = {"vocab_size": size, "model_type": model_type,
             "cache_dir": _cache_dir(folder), "minloglevel": 2,
             "character_coverage": character_coverage}
  if lowercase:
    # NFKC with case folding: the models lowercase whatever they encode,
    # in training, evaluation and `paraflax embed` alike.
    options["normalization_rule_name"] = "nmt_nfkc_cf"
  src = tgt = train(sides[0], **options)
  if not joint:
    tgt = train(sides[1], **options)
  for path, name in ((src, SRC_MODEL), (tgt, TGT_MODEL)):
    # Atomic, the target last: its presence means both are there.
    files.copy_atomic(path, os.path.join(folder, name))


def load_pair(folder: str) -> tuple[spm.SentencePieceProcessor,
                                    spm.SentencePieceProcessor]:
  """The (source, target) models kept in `folder`."""
  return tuple(spm.SentencePieceProcessor(
      model_file=os.path.join(folder, name)) for name in (SRC_MODEL, TGT_MODEL))


def pair(folder: str, pairs: Iterable[tuple[str, str]], *, size: int,
         model_type: str, joint: bool, lowercase: bool = False,
         character_coverage: float = 1.0
         ) -> tuple[spm.SentencePieceProcessor, spm.SentencePieceProcessor]:
  """`load_pair`, trained first on (source, target) `pairs` (read once,
  only then; a seeded sample of `SAMPLE_PAIRS` of a larger corpus) when
  `folder` has none: one `joint` model for both sides, or one per side,
  of `size` pieces; `lowercase`: models that lowercase what they encode."""
  if not os.path.exists(os.path.join(folder, TGT_MODEL)):
    os.makedirs(folder, exist_ok=True)
    _train_pair(folder, sample(pairs, SAMPLE_PAIRS), size=size,
                model_type=model_type, joint=joint, lowercase=lowercase,
                character_coverage=character_coverage)
  return load_pair(folder)
