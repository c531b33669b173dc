"""Beam search over the attention NMT: scores are the model's, beam 1 is
greedy, and the decode is the same on 1 and 8 devices."""
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding, PartitionSpec as P

from paraflax.decoding import beam_search as bs
from paraflax.decoding import translator as translator_lib
from paraflax.models import nmt
from paraflax.training import partitioning

BOS, EOS, V, MAX_LEN = 1, 2, 40, 12


@functools.lru_cache(maxsize=None)
def _model_and_params(cell="gru"):
  model = nmt.AttentionNMT(src_vocab=30, tgt_vocab=V, emb_dim=16, hidden=24,
                           attention_dim=20, cell=cell)
  src, src_len = _source()
  params = model.init(jax.random.key(0), src, src_len,
                      jnp.ones((src.shape[0], 3), jnp.int32))["params"]
  # Random weights rarely say EOS; a bias makes hypotheses end mid-way.
  params["decoder"]["logits"]["bias"] = (
      params["decoder"]["logits"]["bias"].at[EOS].add(2.5))
  return model, params


def _source(batch=8):
  rng = np.random.default_rng(0)
  lengths = rng.integers(3, 9, batch).astype(np.int32)
  src = np.zeros((batch, 9), np.int32)
  for i, n in enumerate(lengths):
    src[i, :n] = rng.integers(3, 30, n)
  return jnp.asarray(src), jnp.asarray(lengths)


def _decode(model, params, src, src_len, beam, alpha=0.0, active=None,
            stop="exact", nbest=1):
  encoded = model.apply({"params": params}, src, src_len,
                        method=nmt.AttentionNMT.encode)
  carry = model.apply({"params": params}, encoded,
                      method=nmt.AttentionNMT.init_carry)
  cache = bs.repeat_for_beams((encoded, carry), beam)

  def step(cache, tokens):
    encoded, carry = cache
    logits, carry = model.apply({"params": params}, encoded, carry, tokens,
                                method=nmt.AttentionNMT.decode_step)
    return logits, (encoded, carry)

  return bs.beam_search(step, cache, batch=src.shape[0], beam=beam, bos=BOS,
                        eos=EOS, max_len=MAX_LEN, alpha=alpha,
                        active=active, stop=stop, nbest=nbest), step


def _teacher_forced_logprobs(model, params, src, src_len, tokens):
  tgt_in = jnp.concatenate([jnp.full((tokens.shape[0], 1), BOS),
                            tokens[:, :-1]], 1)
  logits = model.apply({"params": params}, src, src_len, tgt_in)
  logprobs = jax.nn.log_softmax(logits)
  return jnp.take_along_axis(logprobs, tokens[..., None], -1)[..., 0]


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_scores_are_the_models_log_probabilities(cell):
  model, params = _model_and_params(cell)
  src, src_len = _source()
  beam = 4
  hyps, _ = _decode(model, params, src, src_len, beam)
  assert bool((hyps.lengths < MAX_LEN).any()), "no hypothesis ended"
  flat = hyps.tokens.reshape(-1, MAX_LEN)
  per_token = _teacher_forced_logprobs(
      model, params, jnp.repeat(src, beam, 0), jnp.repeat(src_len, beam, 0),
      flat).reshape(hyps.tokens.shape)
  keep = jnp.arange(MAX_LEN) < hyps.lengths[..., None]
  np.testing.assert_allclose(hyps.token_logprobs, jnp.where(keep, per_token,
                                                            0), atol=1e-4)
  np.testing.assert_allclose(hyps.logprobs, hyps.token_logprobs.sum(-1),
                             atol=1e-4)
  assert bool((jnp.diff(hyps.scores, axis=1) <= 1e-6).all()), "not sorted"
  last = jnp.take_along_axis(hyps.tokens, (hyps.lengths - 1)[..., None],
                             -1)[..., 0]
  np.testing.assert_array_equal(hyps.ended, last == EOS)
  assert bool(jnp.where(hyps.ended, True, hyps.lengths == MAX_LEN).all())


def test_beams_are_distinct():
  model, params = _model_and_params()
  src, src_len = _source()
  hyps, _ = _decode(model, params, src, src_len, beam=5)
  for b in range(src.shape[0]):
    seqs = {tuple(np.asarray(t[:n])) for t, n in zip(hyps.tokens[b],
                                                     hyps.lengths[b])}
    assert len(seqs) == 5


def test_beam_one_equals_greedy():
  model, params = _model_and_params()
  src, src_len = _source()
  hyps, step = _decode(model, params, src, src_len, beam=1)
  encoded = model.apply({"params": params}, src, src_len,
                        method=nmt.AttentionNMT.encode)
  carry = model.apply({"params": params}, encoded,
                      method=nmt.AttentionNMT.init_carry)
  tokens, total = bs.greedy(step, (encoded, carry), batch=src.shape[0],
                            bos=BOS, eos=EOS, max_len=MAX_LEN)
  np.testing.assert_array_equal(hyps.tokens[:, 0], tokens)
  np.testing.assert_allclose(hyps.logprobs[:, 0], total, atol=1e-5)
  assert int(hyps.lengths.max()) <= int(hyps.steps) <= MAX_LEN


def test_inactive_rows_do_not_keep_the_search_running():
  model, params = _model_and_params()
  src, src_len = _source()
  every, _ = _decode(model, params, src, src_len, beam=3, alpha=2.0)
  assert int(every.steps) > 0
  idle, _ = _decode(model, params, src, src_len, beam=3, alpha=2.0,
                    active=jnp.zeros((src.shape[0],), bool))
  assert int(idle.steps) == 0
  half, _ = _decode(model, params, src, src_len, beam=3, alpha=2.0,
                    active=jnp.arange(src.shape[0]) < 4)
  np.testing.assert_array_equal(half.tokens[:4], every.tokens[:4])


def test_k_finished_stops_sooner_and_never_beats_exact():
  model, params = _model_and_params()
  src, src_len = _source()
  exact, _ = _decode(model, params, src, src_len, beam=3, alpha=2.0)
  quick, _ = _decode(model, params, src, src_len, beam=3, alpha=2.0,
                     stop="k_finished")
  assert int(quick.steps) < int(exact.steps)
  assert (quick.lengths < MAX_LEN).all()  # every kept hypothesis ended
  assert (quick.scores[:, 0] <= exact.scores[:, 0] + 1e-6).all()


def test_best_ended_stops_when_the_best_candidate_ends():
  """OpenNMT-py's rule: an input is done once the best candidate of a step
  is EOS and `nbest` hypotheses have ended; its 1-best is that candidate
  or a better one, and it never runs longer than k_finished."""
  model, params = _model_and_params()
  src, src_len = _source()
  one, _ = _decode(model, params, src, src_len, beam=3, alpha=2.0,
                   stop="best_ended")
  k, _ = _decode(model, params, src, src_len, beam=3, alpha=2.0,
                 stop="k_finished")
  assert int(one.steps) <= int(k.steps)
  assert bool(one.ended[:, 0].all())
  greedy, _ = _decode(model, params, src, src_len, beam=1)
  g1, _ = _decode(model, params, src, src_len, beam=1, stop="best_ended")
  np.testing.assert_array_equal(g1.tokens, greedy.tokens)
  three, _ = _decode(model, params, src, src_len, beam=3, alpha=2.0,
                     stop="best_ended", nbest=3)
  assert bool(three.ended.all()) and int(three.steps) >= int(one.steps)


def test_best_ended_waits_while_the_best_candidate_loops():
  """A step's best candidate that is not EOS keeps the search going, even
  after a worse hypothesis ended: the looping model runs to max_len and
  the search says so."""
  step = lambda cache, prev: (_loop_after_first_token(prev), cache)
  hyps = bs.beam_search(step, jnp.zeros((2 * 3, 1)), batch=2, beam=3,
                        bos=BOS, eos=EOS, max_len=MAX_LEN, alpha=0.0,
                        stop="best_ended")
  assert int(hyps.steps) == MAX_LEN


def test_length_penalty_prefers_longer_hypotheses():
  model, params = _model_and_params()
  src, src_len = _source()
  plain, _ = _decode(model, params, src, src_len, beam=6, alpha=0.0)
  long, _ = _decode(model, params, src, src_len, beam=6, alpha=2.0)
  assert float(long.lengths[:, 0].mean()) >= float(plain.lengths[:, 0].mean())


def test_same_hypotheses_on_one_and_eight_devices():
  model, params = _model_and_params()
  src, src_len = _source(batch=16)
  results = []
  for devices in (1, 8):
    mesh = partitioning.make_mesh(devices)
    data = NamedSharding(mesh, P(partitioning.DATA))
    fn = jax.jit(lambda p, s, n: _decode(model, p, s, n, beam=4)[0],
                 in_shardings=(NamedSharding(mesh, P()), data, data))
    results.append(jax.device_get(fn(params, src, src_len)))
  np.testing.assert_array_equal(results[0].tokens, results[1].tokens)
  np.testing.assert_allclose(results[0].scores, results[1].scores, atol=1e-5)


def _loop_after_first_token(prev_N: jax.Array) -> jax.Array:
  """Logits of a decoder that may end only right after BOS and otherwise
  prefers token 3 forever (the looping a young model shows)."""
  table = jnp.full((V, V), -1.0).at[:, EOS].set(-30.0).at[:, 3].set(2.0)
  return table.at[BOS, EOS].set(0.0)[prev_N]


def test_the_search_says_which_hypotheses_hit_max_len():
  """Only one of K hypotheses ends: the other slots are the best live beams,
  scored as if they ended at max_len and marked not ended (they used to be
  stray candidates scored NEG_INF)."""
  step = lambda cache, prev: (_loop_after_first_token(prev), cache)
  hyps = bs.beam_search(step, jnp.zeros((2 * 3, 1)), batch=2, beam=3,
                        bos=BOS, eos=EOS, max_len=MAX_LEN, alpha=0.6)
  np.testing.assert_array_equal(hyps.ended, [[True, False, False]] * 2)
  np.testing.assert_array_equal(hyps.lengths, [[1, MAX_LEN, MAX_LEN]] * 2)
  assert bool((hyps.tokens[:, 0, 0] == EOS).all())
  assert not bool((hyps.tokens[:, 1:] == EOS).any())
  assert bool((hyps.tokens[:, 1, 1:] == 3).all())  # the loop
  np.testing.assert_allclose(hyps.logprobs, hyps.token_logprobs.sum(-1),
                             atol=1e-4)
  np.testing.assert_allclose(
      hyps.scores[:, 1:],
      hyps.logprobs[:, 1:] / bs.brevity_penalty(0.6, MAX_LEN), rtol=1e-6)
  assert bool((jnp.diff(hyps.scores[:, 1:], axis=1) <= 0).all())


def test_a_hypothesis_may_end_at_the_last_step():
  """EOS written at position max_len - 1 counts as ended."""
  def step(cache, prev):
    del prev
    count = cache + 1  # tokens generated, EOS only allowed at the last
    logits = jnp.zeros((count.shape[0], V)).at[:, EOS].set(
        jnp.where(count == MAX_LEN, 50.0, -50.0))
    return logits, count

  hyps = bs.beam_search(step, jnp.zeros((3,), jnp.int32), batch=1, beam=3,
                        bos=BOS, eos=EOS, max_len=MAX_LEN)
  assert bool(hyps.ended.all()) and bool((hyps.lengths == MAX_LEN).all())
  assert bool((hyps.tokens[..., -1] == EOS).all())


def _decode_shared(model, params, src, src_len, beam, **options):
  """The recipe's form: encoder states one row per input (the context),
  broadcast over the beams, and only the decoder carry in the cache."""
  return translator_lib.search(model, params, src, src_len, beam, bos=BOS,
                           eos=EOS, max_len=MAX_LEN, **options)


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_shared_encoder_states_give_the_same_hypotheses(cell):
  model, params = _model_and_params(cell)
  src, src_len = _source()
  tiled, _ = _decode(model, params, src, src_len, beam=4, alpha=0.6)
  shared = _decode_shared(model, params, src, src_len, 4, alpha=0.6)
  np.testing.assert_array_equal(shared.tokens, tiled.tokens)
  np.testing.assert_allclose(shared.scores, tiled.scores, atol=1e-5)
  assert int(shared.steps) == int(tiled.steps)


def _limited(model, params, src, src_len, ratio, **options):
  """The search with each input's output limit from its source length."""
  return _decode_shared(model, params, src, src_len, max_lens=(
      translator_lib.output_limits(src_len, MAX_LEN, ratio, 1)), **options)


@pytest.mark.parametrize("stop,ratio", [(s, 0.0) for s in sorted(
    bs.STOP_RULES)] + [("exact", 1.0)])
def test_a_batch_decodes_as_its_inputs_one_at_a_time(stop, ratio):
  """Inputs leave the batch when their search ends and keep their
  hypotheses, so neither the batch nor its phases change an input's (nor
  do the other inputs' output limits)."""
  model, params = _model_and_params()
  src, src_len = _source()
  decode = jax.jit(functools.partial(_limited, model, beam=3, alpha=2.0,
                                     stop=stop, nbest=2, ratio=ratio))
  batch = decode(params, src, src_len)
  assert int(batch.lengths.min()) < int(batch.steps)  # some ended sooner
  for b in range(src.shape[0]):
    one = decode(params, src[b:b + 1], src_len[b:b + 1])
    np.testing.assert_array_equal(batch.tokens[b], one.tokens[0])
    np.testing.assert_array_equal(batch.lengths[b], one.lengths[0])
    np.testing.assert_allclose(batch.scores[b], one.scores[0], atol=1e-5)


def test_the_exact_search_is_unchanged_with_the_ratio_off():
  model, params = _model_and_params()
  src, src_len = _source()
  plain = _decode_shared(model, params, src, src_len, 4, alpha=0.6)
  off = _limited(model, params, src, src_len, 0.0, beam=4, alpha=0.6)
  for name in ("tokens", "lengths", "scores", "ended", "steps"):
    np.testing.assert_array_equal(getattr(off, name), getattr(plain, name))


def test_each_input_stops_at_its_own_limit():
  """A looping decoder: every input runs to its limit, and its unended
  hypotheses are scored as if they ended there."""
  step = lambda cache, prev: (_loop_after_first_token(prev), cache)
  max_lens = jnp.asarray([4, 7, 30])  # the last one capped at MAX_LEN
  hyps = bs.beam_search(step, jnp.zeros((3 * 2, 1)), batch=3, beam=2,
                        bos=BOS, eos=EOS, max_len=MAX_LEN, alpha=0.6,
                        max_lens=max_lens)
  np.testing.assert_array_equal(hyps.lengths[:, 1], [4, 7, MAX_LEN])
  assert not bool(hyps.ended[:, 1].any()) and int(hyps.steps) == MAX_LEN
  np.testing.assert_allclose(
      hyps.scores[:, 1], hyps.logprobs[:, 1] / bs.brevity_penalty(
          0.6, jnp.asarray([4, 7, MAX_LEN])), rtol=1e-6)


def test_output_limits_follow_the_source_length():
  src_len = jnp.asarray([0, 3, 10, 90])
  np.testing.assert_array_equal(
      translator_lib.output_limits(src_len, 100, 1.5, 10), [10, 15, 25, 100])
  np.testing.assert_array_equal(
      translator_lib.output_limits(src_len, 100, 0.0, 10), [100] * 4)
