"""The NMT model's fused recurrences against the Flax modules they replace:
same parameters from the same key, same function."""
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from paraflax.models import nmt

FLAX_CELLS = {"gru": nn.GRUCell, "lstm": nn.OptimizedLSTMCell}


def _carry(cell: str, batch: int, hidden: int, seed: int):
  rng = np.random.default_rng(seed)
  h = jnp.asarray(rng.normal(size=(batch, hidden)), jnp.float32)
  return (h * 0.5, h) if cell == "lstm" else h


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_a_fused_cell_is_the_flax_cell(cell):
  x = jnp.asarray(np.random.default_rng(0).normal(size=(3, 7)), jnp.float32)
  carry = _carry(cell, 3, 5, 1)
  reference = FLAX_CELLS[cell](5)
  params = reference.init(jax.random.key(2), carry, x)["params"]
  fused = nmt.CELLS[cell](5)
  # Checkpoints load: the same parameters, drawn alike from the key.
  jax.tree.map(np.testing.assert_array_equal, params, fused.init(
      jax.random.key(2), 7, method="weights")["params"])
  w = fused.apply({"params": params}, 7, method="weights")
  want_carry, want_h = reference.apply({"params": params}, carry, x)
  got_carry, got_h = nmt.CELLS[cell].step(w, carry, nmt.project(w, x))
  np.testing.assert_allclose(got_h, want_h, atol=1e-6)
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, atol=1e-6),
               got_carry, want_carry)


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_the_one_scan_encoder_is_flax_bidirectional_rnn(cell):
  rng = np.random.default_rng(3)
  x = jnp.asarray(rng.normal(size=(4, 9, 6)), jnp.float32)
  lengths = jnp.asarray([9, 4, 1, 0], jnp.int32)
  reference = nn.Bidirectional(nn.RNN(FLAX_CELLS[cell](5)),
                               nn.RNN(FLAX_CELLS[cell](5)))
  params = reference.init(jax.random.key(4), x, seq_lengths=lengths)
  encoder = nmt.BidirectionalEncoder(cell, 5)
  assert (jax.tree.structure(encoder.init(jax.random.key(4), x, lengths))
          == jax.tree.structure(params))
  (want_f, want_b), want = reference.apply(params, x, seq_lengths=lengths,
                                           return_carry=True)
  (got_f, got_b), got = encoder.apply(params, x, lengths)
  real = (np.arange(9)[None] < np.asarray(lengths)[:, None])[..., None]
  np.testing.assert_allclose(got * real, want * real, atol=1e-6)
  for a, b in zip(jax.tree.leaves((got_f, got_b)),
                  jax.tree.leaves((want_f, want_b))):
    np.testing.assert_allclose(a[:3], b[:3], atol=1e-6)  # rows with tokens


@pytest.mark.parametrize("cell", ["gru", "lstm"])
@pytest.mark.parametrize("input_feeding", [False, True])
@pytest.mark.parametrize("encoder_hidden", [None, 3])
def test_teacher_forcing_is_the_decoder_step_repeated(cell, input_feeding,
                                                      encoder_hidden):
  """The scan keeps only the recurrence; the inputs' projection and the
  output layer run outside it, over all positions. With `encoder_hidden`
  each encoder direction has its own width (OpenNMT-py's brnn: half the
  decoder's)."""
  model = nmt.AttentionNMT(src_vocab=30, tgt_vocab=20, emb_dim=8, hidden=6,
                           attention_dim=5, cell=cell,
                           input_feeding=input_feeding,
                           encoder_hidden=encoder_hidden)
  src = np.array([[5, 6, 7, 1, 0, 0], [8, 9, 10, 11, 12, 1]], np.int32)
  src_len = np.array([4, 6], np.int32)
  tgt_in = np.array([[0, 3, 4, 5, 9], [0, 6, 7, 8, 2]], np.int32)
  params = model.init(jax.random.key(0), src, src_len, tgt_in)["params"]
  logits = model.apply({"params": params}, src, src_len, tgt_in)
  encoded = model.apply({"params": params}, src, src_len,
                        method=nmt.AttentionNMT.encode)
  assert encoded["states"].shape == (2, 6, 2 * (encoder_hidden or 6))
  carry = model.apply({"params": params}, encoded,
                      method=nmt.AttentionNMT.init_carry)
  for t in range(tgt_in.shape[1]):
    step, carry = model.apply({"params": params}, encoded, carry,
                              tgt_in[:, t],
                              method=nmt.AttentionNMT.decode_step)
    np.testing.assert_allclose(logits[:, t], step, atol=1e-5)
