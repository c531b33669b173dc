"""Encoders: GRAN with its gate at one is Avg; padding never contributes."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from paraflax.models import encoders


def _ids():
  rng = np.random.default_rng(0)
  lengths = np.asarray([5, 3, 1, 7], np.int32)
  ids = np.zeros((4, 8), np.int32)
  for row, n in enumerate(lengths):
    ids[row, :n] = rng.integers(2, 50, n)
  return jnp.asarray(ids), jnp.asarray(lengths)


def test_gran_with_gate_forced_open_equals_avg():
  ids, lengths = _ids()
  gran = encoders.GRAN(vocab_size=50, word_dim=16, hidden=12,
                       gate=jnp.ones_like)
  params = gran.init(jax.random.key(0), ids, lengths)["params"]
  avg = encoders.Avg(vocab_size=50, word_dim=16)
  avg_params = {encoders.WORD_EMBED: params[encoders.WORD_EMBED]}
  np.testing.assert_allclose(gran.apply({"params": params}, ids, lengths),
                             avg.apply({"params": avg_params}, ids, lengths),
                             rtol=1e-6)


def test_gran_gate_changes_the_embedding():
  ids, lengths = _ids()
  gran = encoders.GRAN(vocab_size=50, word_dim=16, hidden=12)
  params = gran.init(jax.random.key(0), ids, lengths)["params"]
  avg = encoders.Avg(vocab_size=50, word_dim=16)
  avg_params = {encoders.WORD_EMBED: params[encoders.WORD_EMBED]}
  assert not np.allclose(gran.apply({"params": params}, ids, lengths),
                         avg.apply({"params": avg_params}, ids, lengths))


@pytest.mark.parametrize("name", sorted(encoders.ENCODERS))
def test_padding_does_not_change_embeddings(name):
  ids, lengths = _ids()
  model = encoders.make(name, 50, word_dim=16,
                        **({} if name == "avg" else {"hidden": 12}))
  params = model.init(jax.random.key(1), ids, lengths)["params"]
  short = model.apply({"params": params}, ids, lengths)
  wide = jnp.pad(ids, ((0, 0), (0, 8)), constant_values=7)  # junk after end
  np.testing.assert_allclose(model.apply({"params": params}, wide, lengths),
                             short, rtol=1e-5, atol=1e-6)


def test_unknown_encoder_is_a_clear_error():
  with pytest.raises(ValueError, match="set model.name"):
    encoders.make("bow", 10)


@pytest.mark.parametrize("name", sorted(encoders.ENCODERS))
@pytest.mark.parametrize("shards", [1, 2])
def test_length_groups_give_the_padded_embeddings(name, shards):
  rng = np.random.default_rng(3)
  lengths = jnp.asarray(rng.integers(0, 21, 12), jnp.int32)  # 0: empty row
  ids = jnp.asarray(rng.integers(2, 50, (12, 20)), jnp.int32)
  model = encoders.make(name, 50, word_dim=16,
                        **({} if name == "avg" else {"hidden": 12}))
  params = model.init(jax.random.key(1), ids, lengths)["params"]
  variables = {"params": params}
  x = model.apply(variables, ids, method="words")
  compose = lambda x, n: model.apply(variables, x, n,
                                     method="compose")
  padded = model.apply(variables, ids, lengths)
  grouped = jax.jit(lambda x, n: encoders.embed_by_length(
      compose, x, n, groups=3, shards=shards))(x, lengths)
  np.testing.assert_allclose(grouped, padded, rtol=1e-5, atol=1e-6)
