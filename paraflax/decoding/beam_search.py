"""Jitted beam search over any decoder with a per-token step (Flax `wmt` shape).

`step_fn(cache, tokens_N, context) -> (logits_NxV, cache)` where every cache
leaf has a leading axis N = batch * beam and every `context` leaf (what the
beams of an input share and never change, e.g. its encoder states) a leading
axis batch. Each step keeps the top 2K candidates so that K stay alive after
some end in EOS. An input's search ends as soon as no live beam can beat its
finished ones (or, with `stop="k_finished"`, once K have finished; with
`stop="best_ended"`, once the best candidate of a step has ended and `nbest`
have finished, as OpenNMT-py); from then on its hypotheses stay as they are,
so an input gets the same hypotheses in any batch. Returns the K best
hypotheses per input with their length-normalised scores, total and
per-token log-probabilities.

Inputs that are done leave the batch: the search runs in phases, each a
`lax.while_loop` over fewer rows than the last (`SHRINK`), and a phase ends
once the inputs still running fit in the next one (OpenNMT-py drops finished
inputs from its batch the same way). A young model's loops otherwise keep a
whole batch stepping to max_len for one input.

`max_lens` [B] may hold each input a shorter limit than max_len (e.g. a
multiple of its source length, fairseq's max_len_a / max_len_b): its search
ends there, its live beams scored as if they ended at that length.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import flax
import jax
import jax.numpy as jnp
from jax import lax

NEG_INF = -1.0e7
# (cache, tokens) or, with a context, (cache, tokens, context).
StepFn = Callable[..., tuple[jax.Array, Any]]


def brevity_penalty(alpha: float, length: jax.Array) -> jax.Array:
  """GNMT length normalisation ((5 + |Y|) / 6) ** alpha; alpha 0 is none."""
  return jnp.power((5.0 + length) / 6.0, alpha)


def _gather(x_BxKx: jax.Array, idx_BxJ: jax.Array) -> jax.Array:
  """x[b, idx[b, j]] for every leaf shaped [B, K, ...]."""
  idx = idx_BxJ.reshape(idx_BxJ.shape + (1,) * (x_BxKx.ndim - 2))
  return jnp.take_along_axis(x_BxKx, idx, axis=1)


def gather_flat(tree: Any, idx_BxJ: jax.Array, beam: int) -> Any:
  """Gathers beams of a cache whose leaves are [B*K, ...]."""
  def one(x):
    x = x.reshape((-1, beam) + x.shape[1:])
    out = _gather(x, idx_BxJ)
    return out.reshape((-1,) + out.shape[2:])
  return jax.tree.map(one, tree)


@flax.struct.dataclass
class BeamState:
  """Rows are inputs: all of them at first, those still running later."""
  step: jax.Array  # tokens generated so far by the rows still running
  steps: jax.Array  # [B] tokens generated when each input's search ended
  live_logprobs: jax.Array  # [B, K] total log-prob of live beams
  live_seqs: jax.Array  # [B, K, L] tokens
  live_token_logprobs: jax.Array  # [B, K, L]
  finished_scores: jax.Array  # [B, K] normalised; NEG_INF where empty
  finished_logprobs: jax.Array  # [B, K]
  finished_seqs: jax.Array  # [B, K, L]
  finished_token_logprobs: jax.Array  # [B, K, L]
  finished_flags: jax.Array  # [B, K]
  best_ended: jax.Array  # [B] the best candidate of some step was EOS
  running: jax.Array  # [B] an active input whose search has not ended
  rows: jax.Array  # [B] the input each row holds
  max_lens: jax.Array  # [B] the longest output each input may have
  cache: Any  # leaves [B*K, ...]
  context: Any  # leaves [B, ...]


# What a phase hands back to the whole batch (not the cache and context).
_PER_INPUT = ("steps", "live_logprobs", "live_seqs", "live_token_logprobs",
              "finished_scores", "finished_logprobs", "finished_seqs",
              "finished_token_logprobs", "finished_flags", "best_ended",
              "running")


@flax.struct.dataclass
class Hypotheses:
  tokens: jax.Array  # [B, K, L], EOS included, zero padded after it
  lengths: jax.Array  # [B, K] tokens up to and including EOS (or max_len)
  scores: jax.Array  # [B, K] normalised log-prob, best first
  logprobs: jax.Array  # [B, K] total log-prob
  token_logprobs: jax.Array  # [B, K, L], zero after EOS
  ended: jax.Array  # [B, K] in EOS; False: cut at max_len, still going
  steps: jax.Array  # decoder steps the search ran (at least max(lengths))


def _init(cache: Any, context: Any, active: jax.Array, beam: int,
          max_len: int, max_lens: jax.Array) -> BeamState:
  batch = active.shape[0]
  # Only beam 0 is alive at first, so K copies do not fill the beam.
  live = jnp.tile(jnp.asarray([0.0] + [NEG_INF] * (beam - 1)), (batch, 1))
  zeros = jnp.zeros((batch, beam, max_len))
  return BeamState(
      step=jnp.asarray(0), steps=jnp.zeros((batch,), jnp.int32),
      live_logprobs=live,
      live_seqs=jnp.zeros((batch, beam, max_len), jnp.int32),
      live_token_logprobs=zeros,
      finished_scores=jnp.full((batch, beam), NEG_INF),
      finished_logprobs=jnp.full((batch, beam), NEG_INF),
      finished_seqs=jnp.zeros((batch, beam, max_len), jnp.int32),
      finished_token_logprobs=zeros,
      finished_flags=jnp.zeros((batch, beam), bool),
      best_ended=jnp.zeros((batch,), bool), running=active,
      rows=jnp.arange(batch), max_lens=max_lens, cache=cache,
      context=context)


def _exact_done(state: BeamState, alpha: float, nbest: int) -> jax.Array:
  """[B]: no live beam can beat the worst of K finished hypotheses."""
  del nbest
  # Log-probs only fall; at an input's max length the penalty is largest, so
  # this bounds every live beam's final score from above.
  best_live = state.live_logprobs[:, 0] / brevity_penalty(alpha,
                                                          state.max_lens)
  worst_finished = jnp.where(state.finished_flags,
                             state.finished_scores, NEG_INF).min(axis=1)
  worst_finished = jnp.where(state.finished_flags.all(axis=1),
                             worst_finished, NEG_INF)
  return worst_finished >= best_live


def _k_finished_done(state: BeamState, alpha: float, nbest: int
                     ) -> jax.Array:
  """[B]: K hypotheses have finished (Hugging Face's early_stopping=True)."""
  del alpha, nbest
  return state.finished_flags.all(axis=1)


def _best_ended_done(state: BeamState, alpha: float, nbest: int
                     ) -> jax.Array:
  """[B]: the best candidate of a step ended in EOS and `nbest` hypotheses
  have finished. OpenNMT-py 3.0.4's BeamSearch waits for K (`beam_size`)
  finished whatever its n_best: its rule is this one with nbest = K."""
  del alpha
  return state.best_ended & (state.finished_flags.sum(axis=1) >= nbest)


# When an input's search ends. "exact" returns the true K best up to max_len
# but with alpha > 0 its bound is loose and the loop often runs to max_len,
# where a young model's loops ("to be able to be able ...") outscore the
# shorter ended hypotheses; "k_finished" stops far sooner and may miss a
# better, longer hypothesis; "best_ended" stops sooner still, when the
# search's own best candidate ends.
STOP_RULES = {"exact": _exact_done, "k_finished": _k_finished_done,
              "best_ended": _best_ended_done}


# Each phase of the search has at most 1/SHRINK of the last one's rows.
# Each phase compiles its own loop body (a decoder step): halving made 7
# bodies for 51 inputs and 4x the compile time of one loop.
SHRINK = 4


def phase_sizes(batch: int) -> list[int]:
  """Rows of each phase of the search: the batch, then shrinking to one."""
  sizes = [batch]
  while sizes[-1] > 1:
    sizes.append(-(-sizes[-1] // SHRINK))
  return sizes


def _take_rows(state: BeamState, order: jax.Array, beam: int) -> BeamState:
  """Rows `order` of a state; an input's K cache rows move together."""
  by_input = lambda x: x.reshape((-1, beam) + x.shape[1:])[order].reshape(
      (-1,) + x.shape[1:])
  return state.replace(
      cache=jax.tree.map(by_input, state.cache),
      context=jax.tree.map(lambda x: x[order], state.context),
      **{k: getattr(state, k)[order]
         for k in _PER_INPUT + ("rows", "max_lens")})


def beam_search(step_fn: StepFn, cache: Any, *, batch: int, beam: int,
                bos: int, eos: int, max_len: int, alpha: float = 0.0,
                active: jax.Array | None = None, stop: str = "exact",
                nbest: int = 1, context: Any = None,
                max_lens: jax.Array | None = None) -> Hypotheses:
  """`cache` leaves must already be repeated K times ([B*K, ...]);
  `context` leaves are [B, ...], one row per input, and None means the step
  takes none (`step_fn(cache, tokens)`).

  `active` [B] marks real inputs; the others (padding rows of the last
  batch) never keep the search running. `stop` names a STOP_RULES entry;
  `nbest` is how many hypotheses the caller keeps ("best_ended" waits for
  that many to finish). `max_lens` [B], each at most max_len, ends an
  input's search at its own limit (default: max_len for all).
  """
  if active is None:
    active = jnp.ones((batch,), bool)
  max_lens = jnp.full((batch,), max_len, jnp.int32) if max_lens is None \
      else jnp.minimum(max_lens, max_len).astype(jnp.int32)
  if context is None:
    plain, context = step_fn, ()
    step_fn = lambda cache, tokens, _: plain(cache, tokens)
  rule = STOP_RULES[stop]

  def done(state: BeamState) -> jax.Array:
    return rule(state, alpha, nbest) | (state.step >= state.max_lens)

  def advance(state: BeamState) -> BeamState:
    rows, i = state.running.shape[0], state.step
    prev = jnp.where(i == 0, bos, lax.dynamic_index_in_dim(
        state.live_seqs, jnp.maximum(i - 1, 0), axis=2, keepdims=False))
    logits, cache = step_fn(state.cache, prev.reshape(-1), state.context)
    logprobs_BxKxV = jax.nn.log_softmax(logits.astype(jnp.float32)).reshape(
        rows, beam, -1)
    vocab = logprobs_BxKxV.shape[-1]
    totals = (state.live_logprobs[..., None] + logprobs_BxKxV).reshape(
        rows, -1)
    top_BxJ, flat_idx_BxJ = lax.top_k(totals, 2 * beam)
    parent_BxJ, token_BxJ = flat_idx_BxJ // vocab, flat_idx_BxJ % vocab
    token_lp_BxJ = top_BxJ - _gather(state.live_logprobs, parent_BxJ)
    seqs = _gather(state.live_seqs, parent_BxJ)
    seqs = lax.dynamic_update_index_in_dim(seqs, token_BxJ, i, axis=2)
    token_lps = _gather(state.live_token_logprobs, parent_BxJ)
    token_lps = lax.dynamic_update_index_in_dim(token_lps, token_lp_BxJ, i,
                                                axis=2)
    # A dead beam's candidates (total near NEG_INF) never count as ended.
    ended_BxJ = (token_BxJ == eos) & (top_BxJ > NEG_INF / 2)

    # Live: the best K candidates that did not just end.
    _, live_pos = lax.top_k(jnp.where(ended_BxJ, NEG_INF, top_BxJ), beam)
    live_parent = _gather(parent_BxJ, live_pos)

    # Finished: the best K of the old finished and the candidates that ended.
    scores_BxJ = jnp.where(ended_BxJ,
                           top_BxJ / brevity_penalty(alpha, i + 1), NEG_INF)
    pool_scores = jnp.concatenate([state.finished_scores, scores_BxJ], 1)
    _, fin_pos = lax.top_k(pool_scores, beam)
    pool = lambda old, new: _gather(jnp.concatenate([old, new], 1), fin_pos)
    new = dict(
        steps=jnp.full_like(state.steps, i + 1),
        live_logprobs=_gather(jnp.where(ended_BxJ, NEG_INF, top_BxJ),
                              live_pos),
        live_seqs=_gather(seqs, live_pos),
        live_token_logprobs=_gather(token_lps, live_pos),
        finished_scores=_gather(pool_scores, fin_pos),
        finished_logprobs=pool(state.finished_logprobs, top_BxJ),
        finished_seqs=pool(state.finished_seqs, seqs),
        finished_token_logprobs=pool(state.finished_token_logprobs,
                                     token_lps),
        finished_flags=pool(state.finished_flags, ended_BxJ),
        best_ended=state.best_ended | ended_BxJ[:, 0])
    # An input whose search ended keeps its hypotheses as they were.
    keep = lambda name, x: jnp.where(
        state.running.reshape((rows,) + (1,) * (x.ndim - 1)), x,
        getattr(state, name))
    state = state.replace(step=i + 1,
                          cache=gather_flat(cache, live_parent, beam),
                          **{k: keep(k, v) for k, v in new.items()})
    return state.replace(running=state.running & ~done(state))

  init = _init(cache, context, active, beam, max_len, max_lens)
  state = init.replace(running=active & ~done(init))
  every = init
  sizes = phase_sizes(batch)
  for size, next_size in zip(sizes, sizes[1:] + [0]):
    if size < state.running.shape[0]:  # the running inputs come first
      state = _take_rows(state, jnp.argsort(~state.running,
                                            stable=True)[:size], beam)
    # An input's search ends by max_lens at the latest (`done`).
    state = lax.while_loop(lambda s, n=next_size: jnp.sum(s.running) > n,
                           advance, state)
    every = every.replace(**{k: getattr(every, k).at[state.rows].set(
        getattr(state, k)) for k in _PER_INPUT})
  return _hypotheses(every, state.step, beam, eos, alpha, max_len)


def _hypotheses(state: BeamState, steps: jax.Array, beam: int, eos: int,
                alpha: float, max_len: int) -> Hypotheses:
  """The K best of each input: hypotheses that ended in EOS first, then,
  where fewer than K ended, live beams scored as if they ended at the
  input's max length (before, those slots held stray candidates scored
  NEG_INF)."""
  live_scores = state.live_logprobs / brevity_penalty(
      alpha, state.max_lens[:, None])
  flags = jnp.concatenate([state.finished_flags,
                           jnp.zeros_like(state.finished_flags)], 1)
  pool_scores = jnp.concatenate([state.finished_scores, live_scores], 1)
  slot = lax.broadcasted_iota(jnp.int32, flags.shape, 1)
  pick = lax.sort((~flags, -pool_scores, slot), dimension=1, num_keys=2,
                  is_stable=True)[-1][:, :beam]
  take = lambda fin, live: _gather(jnp.concatenate([fin, live], 1), pick)
  tokens = take(state.finished_seqs, state.live_seqs)
  after_eos = jnp.cumsum(tokens == eos, axis=2) - (tokens == eos) > 0
  lengths = jnp.sum(~after_eos & (jnp.arange(max_len)
                                  < state.steps[:, None, None]), axis=2)
  keep = jnp.arange(max_len)[None, None] < lengths[..., None]
  return Hypotheses(
      tokens=jnp.where(keep, tokens, 0), lengths=lengths,
      scores=_gather(pool_scores, pick),
      logprobs=take(state.finished_logprobs, state.live_logprobs),
      token_logprobs=jnp.where(keep, take(state.finished_token_logprobs,
                                          state.live_token_logprobs), 0.0),
      ended=_gather(flags, pick), steps=steps)


def greedy(step_fn: StepFn, cache: Any, *, batch: int, bos: int, eos: int,
           max_len: int) -> tuple[jax.Array, jax.Array]:
  """Argmax decoding: tokens [B, L] (zero after EOS) and total log-probs."""

  def body(carry, _):
    cache, prev, done, total = carry
    logits, cache = step_fn(cache, prev)
    logprobs = jax.nn.log_softmax(logits.astype(jnp.float32))
    token = jnp.argmax(logprobs, -1)
    total = total + jnp.where(done, 0.0, jnp.max(logprobs, -1))
    out = jnp.where(done, 0, token)
    return (cache, token, done | (token == eos), total), out

  init = (cache, jnp.full((batch,), bos), jnp.zeros((batch,), bool),
          jnp.zeros((batch,)))
  (_, _, _, total), tokens_LxB = lax.scan(body, init, None, length=max_len)
  return tokens_LxB.T, total


def beamwise(step_fn: Callable[[Any, jax.Array, Any], tuple[jax.Array, Any]],
             beam: int) -> StepFn:
  """The search's step over flat rows from a step that takes cache leaves
  [B, K, ...], tokens [B, K] and the context [B, ...] as it is (so a model
  broadcasts an input's encoder states over its beams) and gives logits
  [B, K, V]."""
  split = lambda x: x.reshape((-1, beam) + x.shape[1:])
  merge = lambda x: x.reshape((-1,) + x.shape[2:])

  def step(cache, tokens, context):
    logits, cache = step_fn(jax.tree.map(split, cache), split(tokens),
                            context)
    return merge(logits), jax.tree.map(merge, cache)
  return step


def repeat_for_beams(tree: Any, beam: int) -> Any:
  """[B, ...] -> [B*K, ...], each input's row repeated K times."""
  return jax.tree.map(lambda x: jnp.repeat(x, beam, axis=0), tree)
