"""Bilingual embeddings and pair scores are the same on 1 and 8 devices (the
8 simulated CPU devices of conftest), padding rows included."""
import gzip

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from paraflax import config as config_lib
from paraflax.data import paths
from paraflax.mining import similarity as sim
from paraflax.models import heads
from paraflax.recipes import bilingual
from paraflax.training import partitioning
from tests.conftest import BILINGUAL_CONFIG
from tests.conftest import random_bilingual

VOCAB = 64
# 300 sentences: a full batch of 256 and one of 44 rows padded to the full
# (or, on 3 devices, the next multiple of 3) size.
SENTENCES = 300


class _Bytes:
  """A stand-in for a sentencepiece model: each UTF-8 byte is a subword,
  folded into the ids above PAD and EOS."""

  def encode(self, text: str) -> list[int]:
    return [2 + b % (VOCAB - 2) for b in text.encode("utf-8")]

  def get_piece_size(self) -> int:
    return VOCAB


def _lines(lang: str) -> list[str]:
  with gzip.open(paths.data_path("multi30k_task1", f"val.{lang}.gz"), "rt",
                 encoding="utf-8") as f:
    return f.read().splitlines()[:SENTENCES]


@pytest.fixture(scope="module")
def tiny():
  """A small model with random parameters (no compiled init)."""
  return random_bilingual(VOCAB, VOCAB, 8, 8)


@pytest.fixture(scope="module")
def embedders(tiny):
  """Embedders over 1, 3 and 8 devices; shared, so each compiles once.
  max_len 24: most lines are cut to 24 bytes, so few widths compile."""
  return {n: bilingual.Embedder(tiny[0], ("de", "en"), (_Bytes(), _Bytes()),
                                24, partitioning.make_mesh(n))
          for n in (1, 3, 8)}


def test_embeddings_same_on_one_and_eight_devices(tiny, embedders):
  assert jax.device_count() == 8
  _, params = tiny
  assert {n: e.mesh.size for n, e in embedders.items()} == {1: 1, 3: 3, 8: 8}
  for lang in ("de", "en"):
    texts = _lines(lang)
    expected = embedders[1](params, texts, lang)
    assert expected.shape == (SENTENCES, 16) and np.abs(expected).max() > 0
    np.testing.assert_allclose(embedders[8](params, texts, lang), expected,
                               atol=1e-6)
  # A batch of 256 does not split over 3 devices: padded to 258.
  np.testing.assert_allclose(embedders[3](params, texts, "en"), expected,
                             atol=1e-6)


def test_wider_padding_embeds_the_same(tiny, embedders):
  """data.width_multiple pads the encoders' inputs too: the embeddings are
  those of the default widths."""
  _, params = tiny
  wide = bilingual.Embedder(tiny[0], ("de", "en"), (_Bytes(), _Bytes()), 24,
                            partitioning.make_mesh(1), width_multiple=32)
  texts = _lines("en")
  np.testing.assert_allclose(wide(params, texts, "en"),
                             embedders[1](params, texts, "en"), atol=1e-6)


def test_parameters_placed_elsewhere_are_moved(tiny, embedders):
  """Training may hold the parameters split (fsdp) over 8 devices while the
  embedder runs on 1, or on one device while it runs on 8."""
  _, params = tiny
  texts = _lines("de")[:20]
  expected = embedders[1](params, texts, "de")
  split = jax.device_put(params, partitioning.state_shardings(
      params, partitioning.make_mesh(8), [(".*", "fsdp")]))
  assert any(not leaf.sharding.is_fully_replicated
             for leaf in jax.tree.leaves(split))
  np.testing.assert_allclose(embedders[1](split, texts, "de"), expected,
                             atol=1e-6)
  on_one = jax.device_put(params, jax.devices()[0])
  np.testing.assert_allclose(embedders[8](on_one, texts, "de"), expected,
                             atol=1e-6)


def test_recipe_embeds_over_the_config_mesh():
  config = config_lib.load(BILINGUAL_CONFIG, [
      "--config.model.word_dim=8", "--config.model.hidden=8",
      "--config.mesh.num_devices=4"])
  recipe = bilingual.BilingualRecipe(config, _Bytes(), _Bytes())
  assert recipe.embedder.mesh.size == 4


@pytest.mark.parametrize("name", ["cosine", "euclidean", "csls", "mlp"])
def test_pair_scores_same_on_one_and_eight_devices(name):
  rng = np.random.default_rng(0)
  # 13 pairs: 3 padding rows on 8 devices, which must not enter the CSLS
  # neighbourhoods.
  x = rng.normal(size=(13, 16)).astype(np.float32)
  y = (x + rng.normal(size=x.shape)).astype(np.float32)
  ctx = {"csls": {"k": 3}, "mlp": {"model": _random_mlp(16)}}.get(name, {})
  one = sim.score(name, x, y, mesh=partitioning.make_mesh(1), **ctx)
  eight = sim.score(name, x, y, mesh=partitioning.make_mesh(8), **ctx)
  assert one.shape == eight.shape == (13,)
  np.testing.assert_allclose(eight, one, atol=1e-6)
  # And both agree with the unsplit features that `nearest` scores.
  p = sim.prepare(name, x, y, **ctx)
  np.testing.assert_allclose(one, p.pairs(p.src, p.tgt), atol=1e-6)


def _random_mlp(dim: int) -> sim.MLPSimilarity:
  head = heads.MLPHead(hidden=16)
  params = head.init(jax.random.key(0), jnp.zeros((1, dim)),
                     jnp.zeros((1, dim)))
  return sim.MLPSimilarity(head, params, dim)
