"""Where one NMT train step spends its time: each piece jitted alone at the
`configs/nmt.py` sizes (GRU 256, attention 256, vocabulary 8,000, input
feeding, batch 64), random weights, one random batch padded to `--width` on
both sides (real lengths drawn from [width / 2, width], as the longer-side
sort leaves them).

  python lab/benchmarks/nmt_train_profile.py [--width 32] [--rounds 5] \
      [--pieces train_step] [--no-bf16] \
      [--output lab/results/nmt_train_profile.json]

Variants run interleaved in one process, `--rounds` times each; the report
keeps every round and each one's best (the cores are shared). `float32` is
the train step as it is, with its pieces; `bf16_params` the whole step with
the parameters cast to bfloat16 inside the loss (its products then take
bfloat16 operands; the loss stays float32): what a bfloat16 computation
dtype would cost or save on this CPU. children.write_result writes
--output, with the run's command, commit, hardware, load and seconds.
"""
from __future__ import annotations

import argparse
import json
import time

# Before jax, which reads its platform when imported (children.py).
import children  # lab/benchmarks/children.py, beside this script

import jax
import jax.numpy as jnp
import numpy as np
import optax

from paraflax import host, losses
from paraflax.models import nmt
from paraflax.training import loop

VOCAB, BATCH = 8000, 64


def best_ms(fn, *args, repeats: int = 5) -> float:
  """Best wall milliseconds of `repeats` calls after a first (compiling)."""
  jax.block_until_ready(fn(*args))
  best = float("inf")
  for _ in range(repeats):
    start = time.perf_counter()
    jax.block_until_ready(fn(*args))
    best = min(best, time.perf_counter() - start)
  return best * 1e3


def make_batch(width: int, seed: int = 0) -> dict[str, jax.Array]:
  rng = np.random.default_rng(seed)
  src_len = rng.integers(width // 2, width + 1, BATCH)
  tgt_len = rng.integers(width // 2, width + 1, BATCH)
  ids = lambda: rng.integers(3, VOCAB, (BATCH, width))
  cut = lambda a, n: np.where(np.arange(width)[None] < n[:, None], a, 0)
  tgt = cut(ids(), tgt_len)
  return {k: jnp.asarray(v, jnp.int32) for k, v in {
      "src": cut(ids(), src_len), "src_len": src_len, "tgt_len": tgt_len,
      "tgt_in": np.concatenate([np.ones((BATCH, 1)), tgt[:, :-1]], 1),
      "tgt_out": tgt}.items()}


def pieces(model: nmt.AttentionNMT, batch, cast=None) -> dict:
  """name -> (jitted fn, its arguments) for each piece of a train step."""
  tx = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(1e-3))
  params = model.init(jax.random.key(0), batch["src"], batch["src_len"],
                      batch["tgt_in"])["params"]
  cast = cast or (lambda p: p)
  mask = jnp.arange(batch["tgt_out"].shape[1])[None] < batch["tgt_len"][:, None]

  def apply(p, *args, **kw):
    return model.apply({"params": cast(p)}, *args, **kw)

  def loss(p, b):
    logits = apply(p, b["src"], b["src_len"], b["tgt_in"])
    total, count = losses.token_cross_entropy(logits, b["tgt_out"], mask,
                                              0.1)
    return total / count, count

  def encoder(p, b):
    enc = apply(p, b["src"], b["src_len"], method=nmt.AttentionNMT.encode)
    return jnp.sum(enc["states"]) + jnp.sum(enc["keys"])

  def decoder_scan(p, b):  # the whole model but the output layer
    return jnp.sum(apply(p, b["src"], b["src_len"], b["tgt_in"],
                         method=nmt.AttentionNMT.features)[0])

  state = {"step": jnp.zeros((), jnp.int32), "params": params,
           "opt": tx.init(params)}
  grad = lambda f: jax.jit(jax.grad(f))
  return {
      "train_step": (jax.jit(lambda s, b: loop.gradient_step(tx, loss, s, b)),
                     (state, batch)),
      "loss_fwd_bwd": (grad(lambda p, b: loss(p, b)[0]), (params, batch)),
      "encoder_fwd_bwd": (grad(encoder), (params, batch)),
      "encoder_and_decoder_scan_fwd_bwd": (grad(decoder_scan),
                                           (params, batch)),
      "adam_and_clip": (jax.jit(lambda g, o, p: tx.update(g, o, p)),
                        (params, state["opt"], params)),
  }


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--width", type=int, default=32)
  parser.add_argument("--rounds", type=int, default=5)
  parser.add_argument("--pieces", nargs="+",
                      help="time only these pieces (default: all)")
  parser.add_argument("--no-bf16", action="store_true")
  parser.add_argument("--output",
                      default="lab/results/nmt_train_profile.json")
  args = parser.parse_args()
  kept = host.keep_freed_memory()  # before jax starts, as `paraflax train`
  batch = make_batch(args.width)
  model = nmt.AttentionNMT(VOCAB, VOCAB, input_feeding=True)
  variants = {"float32": pieces(model, batch)}
  if args.pieces:
    variants = {v: {p: ps[p] for p in args.pieces}
                for v, ps in variants.items()}
  if not args.no_bf16:
    to_bf16 = lambda p: jax.tree.map(lambda a: a.astype(jnp.bfloat16), p)
    variants["bf16_params"] = {"train_step": pieces(model, batch,
                                                    to_bf16)["train_step"]}
  found = {v: {p: [] for p in ps} for v, ps in variants.items()}
  for r in range(args.rounds):
    for v, ps in variants.items():
      for p, (fn, fn_args) in ps.items():
        found[v][p].append(best_ms(fn, *fn_args))
    print(f"round {r + 1}:", json.dumps({v: {p: round(min(t), 1) for p, t
                                             in ps.items()}
                                         for v, ps in found.items()}),
          flush=True)
  tokens = int(batch["tgt_len"].sum())
  report = {**children.run_facts(__file__, None),
            "benchmark": "nmt_train_profile",
            "width": args.width, "target_tokens": tokens,
            "keep_freed_memory": kept,
            "best_ms": {v: {p: min(t) for p, t in ps.items()}
                        for v, ps in found.items()},
            "all_ms": found}
  children.write_result(args.output, report)
  print(f"wrote {args.output}")


if __name__ == "__main__":
  main()
