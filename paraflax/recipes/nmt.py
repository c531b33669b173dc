"""Attention NMT (X -> English) on the one train loop, with dev BLEU.

Subwords come from sentencepiece models trained on the training bitext
(joint or one per side, from the config) and kept in the workdir.
"""
from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Iterator, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax
import sentencepiece as spm

from paraflax import backtranslation
from paraflax import files
from paraflax import losses
from paraflax.data import bitext
from paraflax.decoding import beam_search as bs
from paraflax.models import nmt
from paraflax.recipes import workdir as workdir_lib
from paraflax.training import checkpointing
from paraflax.training import loop
from paraflax.training import partitioning

SRC_SPM, TGT_SPM = "src.spm.model", "tgt.spm.model"


@dataclasses.dataclass(frozen=True)
class Hypothesis:
  text: str
  score: float  # length-normalised log-prob (what the beam ranks by)
  logprob: float  # total log-prob, EOS included
  tokens: int  # subwords, EOS included


def make_model(config: ml_collections.ConfigDict, src_vocab: int,
               tgt_vocab: int) -> nmt.AttentionNMT:
  return nmt.AttentionNMT(src_vocab=src_vocab, tgt_vocab=tgt_vocab,
                          **config.model.to_dict())


def make_optimizer(config: ml_collections.ConfigDict
                   ) -> optax.GradientTransformation:
  return optax.chain(optax.clip_by_global_norm(config.optimizer.clip_norm),
                     optax.adam(config.optimizer.learning_rate))


class Translator:
  """Batched, jitted beam search from text to text; each batch is split
  over the devices of a `data` mesh (`num_devices`, -1: all)."""

  def __init__(self, model: nmt.AttentionNMT, src_sp, tgt_sp,
               max_len: int, max_output: int, alpha: float,
               num_devices: int = -1):
    self.model, self.src_sp, self.tgt_sp = model, src_sp, tgt_sp
    self.max_len, self.max_output, self.alpha = max_len, max_output, alpha
    self.mesh = partitioning.make_mesh(num_devices)

  @functools.lru_cache(maxsize=8)
  def search_fn(self, beam: int, alpha: float, stop: str = "exact"):
    """Jitted `(params, src [B, S], src_len [B]) -> Hypotheses`."""
    model = self.model

    def run(params, src, src_len):
      encoded = model.apply({"params": params}, src, src_len,
                            method=nmt.AttentionNMT.encode)
      carry = model.apply({"params": params}, encoded,
                          method=nmt.AttentionNMT.init_carry)
      # Beams of one input share its encoder states, so they stay out of the
      # cache that the search gathers every step (25% of the decode time).
      encoded = bs.repeat_for_beams(encoded, beam)

      def step(carry, tokens):
        return model.apply({"params": params}, encoded, carry, tokens,
                           method=nmt.AttentionNMT.decode_step)

      return bs.beam_search(step, bs.repeat_for_beams(carry, beam),
                            batch=src.shape[0], beam=beam, bos=bitext.BOS,
                            eos=bitext.EOS, max_len=self.max_output,
                            alpha=alpha, active=src_len > 0, stop=stop)

    data = partitioning.batch_sharding(self.mesh, 0)
    return jax.jit(run, in_shardings=(partitioning.replicated(self.mesh),
                                      data, data))

  def encode(self, text: str, where: str, too_long: bitext.TooLong
             ) -> np.ndarray:
    ids = bitext.fit_length(self.src_sp.encode(text) + [bitext.EOS],
                            self.max_len, too_long, where)
    return np.asarray(ids, np.int32)

  def translate(self, params: Any, sources: Sequence[np.ndarray], *,
                beam: int, nbest: int = 1, alpha: float = 0.0,
                batch_size: int = 32, stop: str = "exact"
                ) -> Iterator[tuple[int, list[Hypothesis]]]:
    """Yields (input index, n best) in length-sorted batches; `stop` is a
    `beam_search.STOP_RULES` name."""
    backtranslation.check_beam(beam, nbest)
    decode = self.search_fn(beam, alpha, stop)
    order = np.argsort([len(s) for s in sources], kind="stable")
    padded = -(-batch_size // self.mesh.size) * self.mesh.size
    for start in range(0, len(order), batch_size):
      rows = order[start:start + batch_size]
      src, src_len = bitext.pad_batch([sources[i] for i in rows], padded)
      hyps = jax.device_get(decode(params, src, src_len))
      for j, i in enumerate(rows):
        yield int(i), [self._hypothesis(hyps, j, k) for k in range(nbest)]

  def _hypothesis(self, hyps: bs.Hypotheses, row: int, k: int) -> Hypothesis:
    n = int(hyps.lengths[row, k])
    ids = [int(t) for t in hyps.tokens[row, k, :n] if t != bitext.EOS]
    return Hypothesis(self.tgt_sp.decode(ids), float(hyps.scores[row, k]),
                      float(hyps.logprobs[row, k]), n)


class NMTRecipe:
  """Model, loss, batches and dev BLEU for `paraflax train`."""

  batch_axis = 0
  updates_per_call = 1
  select_metric = "dev/bleu"

  def __init__(self, config: ml_collections.ConfigDict, src_sp, tgt_sp,
               stream: bitext.BucketStream | None,
               dev: Sequence[tuple[str, str]] = ()):
    self.config = config
    self.model = make_model(config, src_sp.get_piece_size(),
                            tgt_sp.get_piece_size())
    self.tx = make_optimizer(config)
    self.stream = stream
    self.dev = list(dev)
    self.translator = Translator(self.model, src_sp, tgt_sp,
                                 config.data.max_len, config.decode.max_output,
                                 config.decode.alpha, config.mesh.num_devices)

  def init_state(self, key: jax.Array) -> dict[str, Any]:
    ids = jnp.zeros((1, 8), jnp.int32)
    params = self.model.init(key, ids, jnp.ones((1,), jnp.int32),
                             ids)["params"]
    return {"step": jnp.zeros((), jnp.int32), "params": params,
            "opt": self.tx.init(params)}

  def _loss(self, params, batch):
    logits = self.model.apply({"params": params}, batch["src"],
                              batch["src_len"], batch["tgt_in"])
    mask = (jnp.arange(batch["tgt_out"].shape[1])[None]
            < batch["tgt_len"][:, None])
    total, count = losses.token_cross_entropy(
        logits, batch["tgt_out"], mask, self.config.loss.label_smoothing)
    return total / jnp.maximum(count, 1.0), count

  def train_step(self, state, batch: dict[str, jax.Array], key: jax.Array):
    del key  # no dropout yet
    state, loss, tokens, grad_norm = loop.gradient_step(
        self.tx, self._loss, state, batch)
    return state, {"loss": loss, "grad_norm": grad_norm,
                   "target_tokens": tokens}

  def batches(self, start_step: int) -> Iterator[dict[str, np.ndarray]]:
    return self.stream.from_step(start_step)

  def evaluate(self, params: Any) -> dict[str, float]:
    if not self.dev:
      return {}
    import sacrebleu  # pylint: disable=g-import-not-at-top
    sources = [self.translator.encode(s, f"dev pair {i + 1}", "truncate")
               for i, (s, _) in enumerate(self.dev)]
    out = [""] * len(sources)
    for i, (best,) in self.translator.translate(
        params, sources, beam=self.config.eval.beam,
        alpha=self.config.decode.alpha):
      out[i] = best.text
    bleu = sacrebleu.corpus_bleu(out, [[t for _, t in self.dev]])
    return {"dev/bleu": bleu.score}


def train_subwords(config, workdir: str, pairs: Sequence[tuple[str, str]]):
  """Trains (cached by content) the models and keeps copies in the workdir;
  the target model is copied last, so its presence means both are there."""
  from paraflax.data import sentencepiece_vocab  # pylint: disable=g-import-not-at-top
  cache = os.path.join(workdir, "spm_cache")
  kwargs = {"vocab_size": config.vocab.size,
            "model_type": config.vocab.model_type, "cache_dir": cache,
            "minloglevel": 2}
  if config.vocab.joint:
    src = tgt = sentencepiece_vocab.train(
        [s for p in pairs for s in p], **kwargs)
  else:
    src = sentencepiece_vocab.train([s for s, _ in pairs], **kwargs)
    tgt = sentencepiece_vocab.train([t for _, t in pairs], **kwargs)
  for path, name in ((src, SRC_SPM), (tgt, TGT_SPM)):
    files.copy_atomic(path, os.path.join(workdir, name))


def load_subwords(workdir: str) -> tuple[spm.SentencePieceProcessor,
                                         spm.SentencePieceProcessor]:
  """The (source, target) sentencepiece models kept in `workdir`."""
  return tuple(spm.SentencePieceProcessor(
      model_file=os.path.join(workdir, name)) for name in (SRC_SPM, TGT_SPM))


def build(config: ml_collections.ConfigDict, workdir: str, shards: int
          ) -> NMTRecipe:
  from paraflax.data import tasks  # pylint: disable=g-import-not-at-top
  pairs = [(e["source"], e["target"]) for name in config.data.train_tasks
           for e in tasks.examples(name, "train")]
  os.makedirs(workdir, exist_ok=True)
  if not os.path.exists(os.path.join(workdir, TGT_SPM)):
    train_subwords(config, workdir, pairs)
  src_sp, tgt_sp = load_subwords(workdir)
  data = bitext.encode(pairs, src_sp.encode, tgt_sp.encode,
                       config.data.max_len, config.data.too_long, "train")
  stream = bitext.BucketStream(data, config.batch_size, shards, config.seed)
  dev = [(e["source"], e["target"]) for e in tasks.examples(
      config.data.dev_task, config.data.dev_split)][:config.eval.sentences]
  workdir_lib.save_config(workdir, config)
  return NMTRecipe(config, src_sp, tgt_sp, stream, dev)


def load_translator(workdir: str, num_devices: int | None = None
                    ) -> tuple[Translator, Any, int]:
  """The best checkpoint's translator; decodes over `num_devices` (default:
  the config's mesh.num_devices)."""
  config = workdir_lib.load_config(workdir, "nmt")
  if num_devices is not None:
    config.mesh.num_devices = num_devices
  recipe = NMTRecipe(config, *load_subwords(workdir), stream=None)
  abstract = jax.eval_shape(recipe.init_state, jax.random.key(0))
  state, step = checkpointing.restore_for_inference(workdir, abstract)
  return recipe.translator, state["params"], step
