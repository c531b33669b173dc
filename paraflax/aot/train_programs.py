"""Each recipe's train step, built from a config alone.

The recipe classes are the ones `paraflax train` builds, fed the stand-ins
of `shapes.py` instead of vocabularies and corpora; the batch is the one
the recipe's own stream makes at a given width. What a config does not
fix (the word vocabulary's size of word-level models, the n-best size of
the reference classifier, the embedding size of the MLP similarity) comes
from `assume` and is reported with the result.
"""
from __future__ import annotations

from typing import Any, Callable

import ml_collections
import numpy as np

from paraflax import errors
from paraflax.aot import shapes

Batch = dict[str, np.ndarray]
# (recipe, one batch of that width) of a config at a width, over a mesh.
Builder = Callable[[ml_collections.ConfigDict, Any, int, dict], tuple[Any,
                                                                     Batch]]


def _nmt(config, mesh, width: int, assume: dict) -> tuple[Any, Batch]:
  from paraflax.data import bitext  # pylint: disable=g-import-not-at-top
  from paraflax.recipes import nmt  # pylint: disable=g-import-not-at-top
  size = shapes.Pieces(config.vocab.size)
  del assume
  recipe = nmt.NMTRecipe(config, size, size, stream=None, mesh=mesh)
  rows = shapes.Rows(config.batch_size, width)
  stream = bitext.BucketStream(
      bitext.EncodedBitext(rows, rows), config.batch_size, mesh.size,
      config.seed, sort_by=config.data.sort_by,
      width_multiple=bitext.width_multiple(config))
  return recipe, stream.get(0)


def _bilingual(config, mesh, width: int, assume: dict) -> tuple[Any, Batch]:
  from paraflax.data import bitext  # pylint: disable=g-import-not-at-top
  from paraflax.recipes import bilingual  # pylint: disable=g-import-not-at-top
  size = shapes.Pieces(config.vocab.size)
  del assume
  recipe = bilingual.BilingualRecipe(config, size, size, mesh=mesh)
  rows = shapes.Rows(config.batch_size, width)
  stream = bilingual.mixed_stream(
      bitext.EncodedBitext(rows, rows), rows, config.batch_size, mesh.size,
      config.seed, bitext.width_multiple(config))
  return recipe, stream.get(0)


def _words(config, assume: dict) -> shapes.Words:
  """The word vocabulary: data.vocab_max_size where the config caps it."""
  return shapes.Words(config.data.get("vocab_max_size") or assume["words"])


def _paraphrase(config, mesh, width: int, assume: dict
                ) -> tuple[Any, Batch]:
  from paraflax.data import pairs  # pylint: disable=g-import-not-at-top
  from paraflax.recipes import paraphrase  # pylint: disable=g-import-not-at-top
  n, max_len = config.batch_size * config.megabatch, config.data.max_len
  ids = np.full((n, max_len), 3, np.int32)
  lengths = np.full(n, min(width, max_len), np.int32)
  uids = np.arange(n, dtype=np.int64)
  stream = pairs.MegabatchStream(
      pairs.EncodedPairs(ids, lengths, ids, lengths, uids, uids + n),
      batch=config.batch_size, megabatch=config.megabatch, shards=mesh.size,
      seed=config.seed, scramble=config.loss.scramble)
  recipe = paraphrase.ParaphraseRecipe(config, _words(config, assume),
                                       stream)
  return recipe, stream.get(0)


def _ref_classifier(config, mesh, width: int, assume: dict
                    ) -> tuple[Any, Batch]:
  from paraflax.recipes import ref_classifier  # pylint: disable=g-import-not-at-top
  del mesh, width  # rows are data.max_len wide: one width
  b, k, length = config.batch_size, assume["nbest"], config.data.max_len
  recipe = ref_classifier.RefClassifierRecipe(config, _words(config, assume))
  recipe.train_set = ref_classifier.Encoded(
      np.full((b, length), 3, np.int32), np.full(b, length, np.int32),
      np.full((b, k, length), 3, np.int32), np.full((b, k), length, np.int32),
      np.ones((b, k), bool))
  return recipe, recipe.batch(np.arange(b))


def _mlp_similarity(config, mesh, width: int, assume: dict
                    ) -> tuple[Any, Batch]:
  from paraflax.recipes import mlp_similarity  # pylint: disable=g-import-not-at-top
  del mesh, width
  config = ml_collections.ConfigDict(config.to_dict())
  config.dim = config.get("dim") or assume["dim"]
  b = config.batch_size
  examples = mlp_similarity.Examples(
      np.zeros((b, config.dim), np.float32),
      np.zeros((b, config.dim), np.float32), np.ones(b, np.float32),
      np.ones(b, np.float32))
  return mlp_similarity.MLPSimilarityRecipe(config), examples.batch(
      np.arange(b), b)


BUILDERS: dict[str, Builder] = {
    "nmt": _nmt, "bilingual": _bilingual, "paraphrase": _paraphrase,
    "ref_classifier": _ref_classifier, "mlp_similarity": _mlp_similarity}

# Recipes whose batches are padded to the sequence width (a compiled step
# per width); the others have one width.
WIDTHS = {"nmt": "data.max_len", "bilingual": "data.max_len",
          "paraphrase": "data.max_len"}


def builder(config) -> Builder:
  recipe = config.get("recipe", "")
  if recipe not in BUILDERS:
    raise errors.ConfigError(
        f"recipe {recipe!r} has no train step to compile; configs of "
        f"{', '.join(sorted(BUILDERS))} have one (the mining, domain and "
        "pipeline configs: --program mine, monods, or a stage's own "
        "config).")
  return BUILDERS[recipe]


def widths(config) -> list[int]:
  """The widths a training run of `config` compiles a step for."""
  if config.recipe not in WIDTHS:
    return [0]
  from paraflax.data import batching  # pylint: disable=g-import-not-at-top
  from paraflax.data import bitext  # pylint: disable=g-import-not-at-top
  # Word-level pairs pad to batching.QUANTUM; subword streams to the key.
  multiple = (bitext.width_multiple(config) if config.recipe != "paraphrase"
              else batching.QUANTUM)
  return shapes.widths(config.data.max_len, multiple)
