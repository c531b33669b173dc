"""Where one beam-search step of the attention NMT spends its time: each piece
jitted alone at the `configs/nmt.py` sizes (GRU 256, attention 256,
vocabulary 8,000, input feeding), random weights, source width 32.

  python lab/benchmarks/nmt_decode_profile.py [--shapes 20x5 51x5 5x50]

Each shape is inputs x beam (N = inputs * beam decoder rows). Random weights
rarely say EOS, so the whole search runs all 100 steps on every row: its
per-step time is the cost of a step with no input taken out of the batch.
"""
from __future__ import annotations

import argparse
import time

# Before jax, which reads its platform when imported (children.py).
import children  # pylint: disable=unused-import

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from paraflax.decoding import beam_search as bs
from paraflax.models import nmt

VOCAB, WIDTH, MAX_LEN = 8000, 32, 100


def ms(fn, *args, repeats: int = 20) -> float:
  """Mean wall milliseconds of a call after a first (compiling) one."""
  jax.block_until_ready(fn(*args))
  start = time.perf_counter()
  for _ in range(repeats):
    out = fn(*args)
  jax.block_until_ready(out)
  return (time.perf_counter() - start) / repeats * 1e3


def profile(inputs: int, beam: int) -> dict[str, float]:
  rows = inputs * beam
  rng = np.random.default_rng(0)
  model = nmt.AttentionNMT(src_vocab=VOCAB, tgt_vocab=VOCAB,
                           input_feeding=True)
  src = jnp.asarray(rng.integers(3, VOCAB, (inputs, WIDTH)), jnp.int32)
  src_len = jnp.full((inputs,), WIDTH, jnp.int32)
  params = model.init(jax.random.key(0), src, src_len,
                      jnp.ones((inputs, 3), jnp.int32))["params"]
  encoded = model.apply({"params": params}, src, src_len,
                        method=nmt.AttentionNMT.encode)
  carry = bs.repeat_for_beams(model.apply(
      {"params": params}, encoded, method=nmt.AttentionNMT.init_carry), beam)
  tiled = bs.repeat_for_beams(encoded, beam)
  tokens = jnp.asarray(rng.integers(3, VOCAB, (rows,)), jnp.int32)
  decode = lambda p, e, c, t: model.apply(
      {"params": p}, e, c, t, method=nmt.AttentionNMT.decode_step)
  shared = lambda p, e, c, t: bs.beamwise(
      lambda c, t, e: decode(p, e, c, t), beam)(c, t, e)

  def attend(p, e, h):
    def one(m, e, h):
      return nmt.attend(m.decoder.query, m.decoder.energy, h, e)
    return model.apply({"params": p}, e, h, method=one)

  def search(p, e, c):
    return bs.beam_search(lambda c, t, e: shared(p, e, c, t), c, context=e,
                          batch=inputs, beam=beam, bos=1, eos=2,
                          max_len=MAX_LEN, alpha=0.6)

  logits = jnp.asarray(rng.normal(size=(rows, VOCAB)), jnp.float32)
  live = jnp.zeros((inputs, beam))
  features = jnp.asarray(rng.normal(size=(rows, 256)), jnp.float32)
  out = params["decoder"]["logits"]
  parents = jnp.asarray(rng.integers(0, beam, (inputs, beam)), jnp.int32)
  gather = jax.jit(lambda c, i: bs.gather_flat(c, i, beam))

  def candidates(logits, live):
    logprobs = jax.nn.log_softmax(logits).reshape(inputs, beam, -1)
    return lax.top_k((live[..., None] + logprobs).reshape(inputs, -1),
                     2 * beam)

  hidden = carry[1] if isinstance(carry, tuple) else carry
  steps = int(jax.jit(search)(params, encoded, carry).steps)
  return {
      "decoder step, encoder tiled per beam": ms(
          jax.jit(decode), params, tiled, carry, tokens),
      "decoder step, encoder shared by the beams": ms(
          jax.jit(shared), params, encoded, carry, tokens),
      "  output layer (N x 256 x 8,000)": ms(
          jax.jit(lambda f, k, b: f @ k + b), features, out["kernel"],
          out["bias"]),
      "  attention, tiled": ms(jax.jit(attend), params, tiled,
                               hidden),
      "  attention, shared": ms(jax.jit(attend), params, encoded,
                                hidden.reshape(inputs, beam, -1)),
      "log_softmax + top-2K of K x V": ms(jax.jit(candidates), logits,
                                          live),
      "  top-2K alone": ms(jax.jit(lambda x: lax.top_k(
          x.reshape(inputs, -1), 2 * beam)), logits),
      "  log_softmax alone": ms(jax.jit(jax.nn.log_softmax), logits),
      "gather of the decoder carry": ms(gather, carry, parents),
      "gather of the encoder states, were they in the cache": ms(
          gather, tiled, parents),
      f"whole search, per step ({steps} steps)": ms(
          jax.jit(search), params, encoded, carry, repeats=3) / steps,
  }


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--shapes", nargs="+", default=["20x5", "51x5", "5x50"],
                      help="inputs x beam")
  args = parser.parse_args()
  for shape in args.shapes:
    inputs, beam = map(int, shape.split("x"))
    print(f"\ninputs {inputs}, beam {beam}, rows {inputs * beam}")
    for name, value in profile(inputs, beam).items():
      print(f"  {name:52s} {value:8.2f} ms")


if __name__ == "__main__":
  main()
