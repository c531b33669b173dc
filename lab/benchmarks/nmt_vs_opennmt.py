"""Attention NMT side by side with OpenNMT-py: training target tokens/s and
beam-search sentences/s, in one run, on the same subwords.

  python lab/benchmarks/nmt_vs_opennmt.py --workdir runs/nmt_de_en \
      --onmt-bin /path/to/onmt-venv/bin [--train-steps 300] \
      [--warmup-steps 100] [--sentences 200] \
      [--beams 5 50] [--output lab/results/nmt_vs_opennmt.json]
  python lab/benchmarks/nmt_vs_opennmt.py --workdir runs/nmt_de_en \
      --onmt-bin /path/to/onmt-venv/bin --onmt-model DIR/model_step_1500.pt \
      [--max-output-ratio 2] ...

Both sides get the workdir's training pairs, cut into the workdir's
sentencepiece subwords (OpenNMT-py reads the same pieces as text), and the
same vocabularies: every piece of the workdir's two sentencepiece models
(`--onmt-vocab seen` gives OpenNMT-py only the pieces its training text
holds, onmt_build_vocab's, as in result files without an
`onmt_vocabulary` key: on the de-en workdir 5,256 of the 8,000 target
pieces, an output layer two thirds the size of ours), and the
same model sizes: 1-layer bidirectional GRU encoder, GRU decoder, additive
("mlp") attention, batch of 64 sentences, Adam 1e-3, clip 1, label smoothing
0.1. Each side trains `--train-steps` steps from scratch; then each decodes
the same first `--sentences` lines of newstest2013 with its own fresh model,
at the same beam, batch (256 // beam sentences), GNMT length penalty
(alpha 0.6) and maximum output length, keeping the 1-best. Our side runs
each stop rule of `beam_search.STOP_RULES` ("exact" K-best, "k_finished",
"best_ended"); OpenNMT-py ends a sentence when its best beam has ended and K
hypotheses have. A model this
young writes different lengths on the two sides, so the report gives
output subwords and decoder steps next to sentences/s. The workdir's trained
checkpoint is decoded too, as the realistic row for our side.

Training, timed over the same span on both sides: the whole
training loop, `--train-steps` steps, data loading included on both
sides, marked every REPORT_EVERY steps: ours by the clock after the
step's metrics are on the host (it reads each batch from the bucketed
stream, pads it and dispatches the step in the loop, as `paraflax train`
without its prefetch thread, and waits for the device only at the marks);
OpenNMT-py by the timestamps of its own log lines ("Start training loop",
then "Step k/N" after step k; its loop reads, numericalises and batches
the subword text with num_workers 0). `target_tokens_per_s` is the
steady state: target tokens of steps W+1..N over the clock from the mark
at step W to the one at step N (W = `--warmup-steps`, past the first
steps' allocations and caches on both sides); `loop` gives the whole
loop, steps 1..N, on both sides as well, and each side's process wall
besides. Our steps compile once per padded batch width: before the loop,
each width of the N batches compiles on a copy of the state (reported as
`compile_s`, apart from the loop), and `compiles_in_loop` counts any
that still happened inside it. `--cores N` runs both sides on the
first N cores with N threads each: on cores other jobs share, OpenNMT-py's
2 torch threads, which wait for each other at every operation, ran at
about a fifth of our rate in a 20-step trial at load 8-10 (153 against
735 target tokens/s), far below their rate on one core.

Decoding: our first batch of each padded shape compiles; those batches
run once untimed before the timed pass. OpenNMT-py's "Total translation
time" gives its rate, without loading the model.

With `--onmt-model` (an OpenNMT-py checkpoint trained on the workdir's
subwords by `nmt_learning_vs_opennmt.py --keep DIR`, whose record there
gives the vocabularies it trained with) nothing trains:
the workdir's checkpoint and that one decode side by side, trained models
writing outputs of about the reference's length on both sides. Our side
also runs "best_ended_k": best_ended waiting for K finished hypotheses,
OpenNMT-py 3.0.4's own stop condition (its `BeamSearch` waits for
`beam_size` of them whatever its n_best); and, with `--max-output-ratio`,
"exact" and "best_ended_k" again with outputs limited by the source length
(`decode.max_output_ratio`; OpenNMT-py 3.0.4 has no such limit).

Every decode reports the BLEU (sacrebleu, 13a) of its 1-best outputs
against the newstest2013 references, so that speed is not bought with
worse output. children.write_result writes --output, with the run's facts
and OpenNMT-py's and torch's versions as the peer's.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import subprocess
import sys
import tempfile
import time

# Before jax, which reads its platform when imported (children.py).
import children  # lab/benchmarks/children.py, beside this script

import jax
import jax.numpy as jnp
import sacrebleu

from paraflax import host
from paraflax.data import batching, bitext, paths, readers, tasks
from paraflax.decoding import beam_search as bs
from paraflax.decoding.translator import Translator
from paraflax.models import nmt as nmt_model
from paraflax.recipes import nmt
from paraflax.recipes import workdir as workdir_lib

_ISO3 = {"de": "deu", "fr": "fra", "cs": "ces"}
REPORT_EVERY = 10
# What the training rates of a result file cover (the docstring says how).
TIMING = "whole loop, data loading included, both sides"
STOPS = tuple(bs.STOP_RULES)  # our side runs each stop rule
# A training report: its step, target tokens per batch and tokens/s.
ONMT_STEP = re.compile(r"Step\s+(\d+)/\s*\d+;.*bsz:\s*[\d.]+/\s*([\d.]+)/"
                        r"\s*[\d.]+;\s*[\d.]+/\s*([\d.]+) tok/s")
_ONMT_TIME = re.compile(r"Total translation time \(s\): ([\d.]+)")
# Its log lines' timestamps: "[2024-01-31 12:00:00,123 INFO] ...".
_ONMT_STAMP = re.compile(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}) ")


def as_pieces(sp, ids) -> str:
  """Subword ids (EOS-terminated) as the space-separated pieces OpenNMT-py
  reads; it adds its own EOS."""
  return " ".join(sp.id_to_piece(int(i)) for i in ids[:-1])


def write_lines(path: str, lines) -> str:
  with open(path, "w", encoding="utf-8") as f:
    f.writelines(line + "\n" for line in lines)
  return path


def bleu(texts: list[str], references: list[str]) -> dict:
  score = sacrebleu.corpus_bleu(texts, [references[:len(texts)]])
  return {"bleu": score.score, "length_ratio": score.sys_len
          / max(score.ref_len, 1), "signature": str(score)}


def run_logged(cmd: list[str], log: str) -> str:
  # OpenNMT-py 3.0.4 checkpoints pickle argparse.Namespace, which torch >= 2.6
  # no longer loads by default; these are checkpoints this run just wrote.
  env = dict(os.environ, TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD="1")
  with open(log, "w", encoding="utf-8") as f:
    proc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, text=True,
                          check=False, env=env)
  text = open(log, encoding="utf-8").read()
  if proc.returncode:
    sys.exit(f"{' '.join(cmd[:2])} failed ({proc.returncode}); see {log}:\n"
             f"{text[-2000:]}")
  return text


# ---------------------------------------------------------------- our side


def _rates(marks: dict[int, float], tokens: dict[int, float], first: int,
           last: int) -> dict:
  """Target tokens/s and steps/s from the mark at step `first` to the one
  at step `last` (`marks`: seconds since the loop started; `tokens`: the
  target tokens of steps 1..k at mark k)."""
  seconds = marks[last] - marks[first]
  return {"from_step": first, "to_step": last, "seconds": seconds,
          "target_tokens": tokens[last] - tokens[first],
          "target_tokens_per_s": (tokens[last] - tokens[first]) / seconds,
          "steps_per_s": (last - first) / seconds}


def _ours_train(recipe, stream, steps: int, warmup: int):
  wall = time.perf_counter()
  init, key = jax.jit(recipe.init_state), jax.random.key(recipe.config.seed)
  state = init(key)
  train_step = jax.jit(recipe.train_step, donate_argnums=0)
  # Each padded width of the N batches compiles on a state of its own,
  # from a stream of its own (its window cache stays cold for the loop).
  start, widths = time.perf_counter(), {}
  ahead = dataclasses.replace(stream)
  for i in range(steps):
    batch = ahead.get(i)
    widths.setdefault(batch["src"].shape, (i, batch))
  for _, batch in widths.values():
    jax.block_until_ready(train_step(init(key), batch, None))
  # pylint: disable=protected-access
  compile_s, compiled = time.perf_counter() - start, train_step._cache_size()
  marks, tokens, total = {0: 0.0}, {0: 0}, 0
  start = time.perf_counter()
  data_s = 0.0  # of which reading and padding the batches
  for i in range(steps):  # the whole loop: read, pad, dispatch
    read = time.perf_counter()
    batch = stream.get(i)
    data_s += time.perf_counter() - read
    state, metrics = train_step(state, batch, None)
    total += int(batch["tgt_len"].sum())
    if (i + 1) % REPORT_EVERY == 0 or i + 1 == steps:
      jax.block_until_ready(metrics)  # the host waits only at the marks
      marks[i + 1], tokens[i + 1] = time.perf_counter() - start, total
  steady = _rates(marks, tokens, warmup, steps)
  return state["params"], {
      "steps": steps, "wall_s": time.perf_counter() - wall,
      "compile_s": compile_s, "padded_widths": len(widths),
      "first_step_of_each_width": sorted(i for i, _ in widths.values()),
      "compiles_in_loop": train_step._cache_size() - compiled,
      "loop": _rates(marks, tokens, 0, steps), "steady": steady,
      "target_tokens_per_s": steady["target_tokens_per_s"],
      "steps_per_s": steady["steps_per_s"], "loop_data_s": data_s,
      "marks_s": {str(k): v for k, v in marks.items()},
      "final_loss": float(metrics["loss"])}


def _batches(translator, sources, batch: int):
  """The (rows, ids, lengths) of the batches `Translator.translate` makes."""
  return list(batching.sorted_batches(sources, batch, translator.mesh.size))


@dataclasses.dataclass(frozen=True)
class Variant:
  """One way our side decodes: a stop rule, the hypotheses it waits for,
  and an output limit per source length (0: the workdir's own decode
  settings)."""
  stop: str
  nbest_is_beam: bool = False
  max_output_ratio: float = 0.0

  def name(self) -> str:
    base = self.stop + ("_k" if self.nbest_is_beam else "")
    return base + (f"@ratio{self.max_output_ratio:g}"
                   if self.max_output_ratio > 0 else "")


def _ours_decode(translator, params, sources, references, beam: int,
                 batch: int, variant: Variant = Variant("exact")) -> dict:
  if variant.max_output_ratio > 0:  # a new Translator: its own search_fns
    t = translator
    translator = Translator(t.model, t.src_sp, t.tgt_sp, t.max_len,
                            t.max_output, t.alpha, t.mesh,
                            variant.max_output_ratio, t.max_output_plus)
  search = translator.search_fn(beam, translator.alpha, variant.stop,
                                beam if variant.nbest_is_beam else 1)
  batches = _batches(translator, sources, batch)
  start, widths = time.perf_counter(), set()
  for _, src, src_len in batches:  # one compile per padded source width
    if src.shape not in widths:
      widths.add(src.shape)
      jax.block_until_ready(search(params, src, src_len))
  compile_s = time.perf_counter() - start
  seconds, subwords, steps, texts = 0.0, 0, [], [""] * len(sources)
  for rows, src, src_len in batches:
    start = time.perf_counter()
    hyps = jax.device_get(search(params, src, src_len))
    seconds += time.perf_counter() - start
    subwords += int(hyps.lengths[src_len > 0, 0].sum())
    # The search runs until no live beam can win, often past the longest
    # hypothesis it keeps.
    steps.append(int(hyps.steps))
    for j, i in enumerate(rows):
      texts[i] = translator.hypothesis(hyps, j, 0).text
  return {"sentences": len(sources), "compile_and_first_batches_s": compile_s,
          "padded_widths": len(widths),
          "seconds": seconds, "sentences_per_s": len(sources) / seconds,
          "output_subwords_per_sentence": subwords / len(sources),
          "output_subwords_per_s": subwords / seconds,
          "decoder_steps_per_batch": sum(steps) / len(steps),
          **bleu(texts, references)}


def _network_share(translator, params, sources, beam: int, batch: int
                   ) -> dict:
  """Seconds of one beam search (the median-length batch) vs. as many bare
  decoder steps on all its [batch * beam] rows: the rest is the search
  itself (log-softmax, top-k over K * V, bookkeeping). The search drops
  inputs whose search ended, so it may take less than the bare steps."""
  batches = _batches(translator, sources, batch)
  _, src, src_len = batches[len(batches) // 2]
  search = translator.search_fn(beam, translator.alpha)
  hyps = jax.device_get(search(params, src, src_len))
  model, steps = translator.model, int(hyps.steps)

  @jax.jit
  def bare(params, src, src_len):
    encoded = model.apply({"params": params}, src, src_len,
                          method=nmt_model.AttentionNMT.encode)
    carry = model.apply({"params": params}, encoded,
                        method=nmt_model.AttentionNMT.init_carry)
    tokens = jnp.zeros((batch * beam,), jnp.int32)
    step = bs.beamwise(lambda c, t, e: model.apply(
        {"params": params}, e, c, t,
        method=nmt_model.AttentionNMT.decode_step), beam)

    def body(carry, _):
      logits, carry = step(carry, tokens, encoded)
      return carry, jnp.max(logits, -1)  # keeps the whole projection live

    return jax.lax.scan(body, bs.repeat_for_beams(carry, beam), None,
                        length=steps)[1]

  timings = {"steps": steps, "longest_output": int(hyps.lengths.max())}
  for name, fn in (("beam_search_s", search), ("decoder_steps_only_s", bare)):
    jax.block_until_ready(fn(params, src, src_len))
    start = time.perf_counter()
    for _ in range(3):
      jax.block_until_ready(fn(params, src, src_len))
    timings[name] = (time.perf_counter() - start) / 3
  timings["network_fraction"] = (timings["decoder_steps_only_s"]
                                 / timings["beam_search_s"])
  return timings


# ----------------------------------------------------------- OpenNMT-py side


def onmt_config(tmp: str, config, vocab: int, steps: int,
                save_every: int = 0) -> str:
  lines = {
      "save_data": f"{tmp}/onmt", "overwrite": "true",
      "src_vocab": f"{tmp}/vocab.src", "tgt_vocab": f"{tmp}/vocab.tgt",
      "src_vocab_size": vocab, "tgt_vocab_size": vocab,
      "save_model": f"{tmp}/model", "seed": config.seed,
      "encoder_type": "brnn", "decoder_type": "rnn", "rnn_type": "GRU",
      "layers": 1, "hidden_size": config.model.hidden,
      "word_vec_size": config.model.emb_dim, "global_attention": "mlp",
      "bridge": "true", "dropout": 0.0,
      "batch_size": config.batch_size, "batch_type": "sents",
      "optim": "adam", "learning_rate": config.optimizer.learning_rate,
      "max_grad_norm": config.optimizer.clip_norm,
      "label_smoothing": config.loss.label_smoothing,
      "train_steps": steps, "save_checkpoint_steps": save_every or steps,
      "keep_checkpoint": -1,
      "valid_steps": 10 * steps, "report_every": REPORT_EVERY,
      "num_workers": 0}
  body = "".join(f"{k}: {v}\n" for k, v in lines.items())
  body += (f"data:\n  corpus_1:\n    path_src: {tmp}/train.src\n"
           f"    path_tgt: {tmp}/train.tgt\n")
  return write_lines(f"{tmp}/onmt.yaml", [body])


# OpenNMT-py's vocabularies: "all" the pieces of each sentencepiece model,
# as our embeddings and output layer hold them (the same work a step), or
# only the pieces "seen" in the training text (onmt_build_vocab's).
VOCABULARIES = ("all", "seen")
# The record of a finished OpenNMT-py training that nmt_learning_vs_opennmt
# --keep leaves beside its checkpoints, with the vocabularies it had.
KEPT_TRAINING = "trained.json"


def kept_vocabularies(model: str) -> dict | None:
  """The vocabularies (onmt_vocabularies') the kept training beside
  checkpoint `model` records, or None where no record is there."""
  record = os.path.join(os.path.dirname(model), KEPT_TRAINING)
  if not os.path.exists(record):
    return None
  with open(record, encoding="utf-8") as f:
    return json.load(f)["vocabulary"]


def onmt_vocabularies(bin_dir: str, tmp: str, cfg: str, src_sp, tgt_sp,
                      which: str) -> dict:
  """Writes OpenNMT-py's vocabulary files for `cfg`; the pieces of each."""
  if which == "seen":
    run_logged([f"{bin_dir}/onmt_build_vocab", "-config", cfg,
                "-n_sample", "-1"], f"{tmp}/build_vocab.log")
  else:  # OpenNMT-py adds its own unknown, padding, start and end tokens
    for side, sp in (("src", src_sp), ("tgt", tgt_sp)):
      pieces = (sp.id_to_piece(i) for i in range(sp.get_piece_size())
                if not (sp.is_control(i) or sp.is_unknown(i)))
      # Its files split "piece count" at whitespace: a piece that is
      # whitespace to Python (a no-break space) cannot be listed.
      write_lines(f"{tmp}/vocab.{side}", (f"{p}\t1" for p in pieces
                                          if len(p.split()) == 1))
  sizes = {}
  for side in ("src", "tgt"):
    with open(f"{tmp}/vocab.{side}", encoding="utf-8") as f:
      sizes[side] = sum(1 for _ in f)
  return {"which": which, "pieces": sizes}


def _onmt_train(bin_dir: str, tmp: str, cfg: str, steps: int,
                warmup: int) -> dict:
  """OpenNMT-py trained by `cfg` (onmt_config, its vocabularies written),
  timed as the module says."""
  start = time.perf_counter()
  log = run_logged([f"{bin_dir}/onmt_train", "-config", cfg], f"{tmp}/train.log")
  wall = time.perf_counter() - start
  # The loop's clock: its log lines' timestamps, from "Start training
  # loop" (step 0) to "Step k/N" (after step k).
  marks, tokens, total, begun = {}, {}, 0.0, None
  for line in log.splitlines():
    stamp = _ONMT_STAMP.match(line)
    if not stamp:
      continue
    at = time.mktime(time.strptime(stamp.group(1), "%Y-%m-%d %H:%M:%S")
                     ) + int(stamp.group(2)) / 1000
    report = ONMT_STEP.search(line)
    if "Start training loop" in line:
      begun = at
      marks[0], tokens[0] = 0.0, 0.0
    elif report and begun is not None:
      step = int(report.group(1))
      total += float(report.group(2)) * REPORT_EVERY  # per batch, non-pad
      marks[step], tokens[step] = at - begun, total
  if steps not in marks or warmup not in marks:
    sys.exit(f"no training report at step {warmup} or {steps} in "
             f"{tmp}/train.log; --train-steps and --warmup-steps must be "
             f"multiples of {REPORT_EVERY}")
  # Its own counters over the same intervals, as a check of the clock.
  intervals = [(int(k), float(b), float(r)) for k, b, r
               in ONMT_STEP.findall(log) if int(k) > warmup]
  steady = _rates(marks, tokens, warmup, steps)
  return {"steps": steps, "wall_s": wall,
          "loop": _rates(marks, tokens, 0, steps), "steady": steady,
          "target_tokens_per_s": steady["target_tokens_per_s"],
          "steps_per_s": steady["steps_per_s"],
          "own_counters_target_tokens_per_s":
              sum(b for _, b, _ in intervals)
              / sum(b / r for _, b, r in intervals),
          "marks_s": {str(k): v for k, v in marks.items()}}


def _onmt_decode(bin_dir: str, tmp: str, src: str, model: str, beam: int,
                 batch: int, config, tgt_sp, references) -> dict:
  out = f"{tmp}/out.beam{beam}.txt"
  log = run_logged([f"{bin_dir}/onmt_translate", "-model",
              model, "-src", src, "-output", out,
              "-beam_size", str(beam), "-batch_size", str(batch),
              "-batch_type", "sents", "-max_length",
              str(config.decode.max_output), "-length_penalty", "wu",
              "-alpha", str(config.decode.alpha), "-report_time", "-gpu",
              "-1"], f"{tmp}/translate.beam{beam}.log")
  seconds = float(_ONMT_TIME.search(log).group(1))
  lines = open(out, encoding="utf-8").read().splitlines()
  subwords = sum(len(line.split()) + 1 for line in lines)  # + EOS
  return {"sentences": len(lines), "seconds": seconds,
          "sentences_per_s": len(lines) / seconds,
          "output_subwords_per_sentence": subwords / len(lines),
          "output_subwords_per_s": subwords / seconds,
          **bleu([tgt_sp.decode_pieces(line.split()) for line in lines],
                 references)}


def onmt_versions(bin_dir: str) -> dict:
  code = ("import json, torch, importlib.metadata as m; print(json.dumps("
          "{'torch': torch.__version__, 'OpenNMT-py': m.version('OpenNMT-py'),"
          " 'torch_threads': torch.get_num_threads()}))")
  return json.loads(subprocess.run([f"{bin_dir}/python", "-c", code],
                                   capture_output=True, text=True,
                                   check=True).stdout)


# -------------------------------------------------------------------- main


def pin_cores(cores: int) -> None:
  """Both sides on the first `cores` cores, `cores` threads each: before
  jax starts; OpenNMT-py inherits both."""
  os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:cores])
  os.environ["OMP_NUM_THREADS"] = str(cores)
  if cores == 1:  # XLA's pool otherwise follows the cores it may use
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                               + " --xla_cpu_multi_thread_eigen=false").strip()


def training_inputs(workdir: str, encoder_hidden: int | None):
  """(config, translator, checkpoint, its step, encoded training pairs, their
  bucketed stream) of an NMT workdir; `encoder_hidden` sets the encoder of
  the side-by-side training only (the checkpoint is the workdir's)."""
  config = workdir_lib.load_config(workdir, "nmt")
  if encoder_hidden:
    config.model.encoder_hidden = encoder_hidden
  translator, trained, trained_step = nmt.load_translator(workdir)
  pairs = [(e["source"], e["target"]) for name in config.data.train
           for e in tasks.examples(name, "train")]
  data = bitext.encode(pairs, translator.src_sp.encode,
                       translator.tgt_sp.encode, config.data.max_len,
                       config.data.too_long, "train")
  stream = bitext.BucketStream(data, config.batch_size, 1, config.seed)
  return config, translator, trained, trained_step, data, stream


def _variants(ratio: float) -> list[Variant]:
  plain = [Variant(stop) for stop in STOPS] + [Variant("best_ended", True)]
  if ratio <= 0:
    return plain
  # The limit on the default rule and on OpenNMT-py's (each variant
  # compiles its search: at beam 50 minutes under load).
  return plain + [dataclasses.replace(v, max_output_ratio=ratio)
                  for v in (plain[0], plain[-1])]


def _ratios(row: dict, ours: str) -> dict:
  return {name: found["sentences_per_s"] / row["opennmt"]["sentences_per_s"]
          for name, found in row[ours].items()}


def _fresh(args, config, translator, trained, data, stream, sources,
           references, tmp: str, test_src: str, vocab: int, load: dict
           ) -> dict:
  """Both sides train `--train-steps` from scratch, then decode."""
  src_sp, tgt_sp = translator.src_sp, translator.tgt_sp
  write_lines(f"{tmp}/train.src", (as_pieces(src_sp, s) for s in data.src))
  write_lines(f"{tmp}/train.tgt", (as_pieces(tgt_sp, t) for t in data.tgt))
  recipe = nmt.NMTRecipe(config, src_sp, tgt_sp, stream,
                         mesh=translator.mesh)
  fresh, ours_train = _ours_train(recipe, stream, args.train_steps,
                                  args.warmup_steps)
  print("ours train", json.dumps(ours_train), flush=True)
  load["after_ours_train"] = os.getloadavg()[0]
  cfg = onmt_config(tmp, config, vocab, args.train_steps)
  vocabularies = onmt_vocabularies(args.onmt_bin, tmp, cfg, src_sp, tgt_sp,
                                   args.onmt_vocab)
  onmt_train = _onmt_train(args.onmt_bin, tmp, cfg, args.train_steps,
                           args.warmup_steps)
  print("opennmt train", json.dumps(onmt_train), flush=True)
  load["after_opennmt_train"] = os.getloadavg()[0]
  decode = []
  for beam in args.beams:
    batch = max(1, 256 // beam)  # about the same number of live rows
    variants = [Variant(stop) for stop in STOPS]
    row = {"beam": beam, "batch": batch,
           "ours": {v.name(): _ours_decode(recipe.translator, fresh, sources,
                                           references, beam, batch, v)
                    for v in variants},
           "opennmt": _onmt_decode(
               args.onmt_bin, tmp, test_src,
               f"{tmp}/model_step_{args.train_steps}.pt", beam, batch,
               config, tgt_sp, references),
           "ours_trained": {v.name(): _ours_decode(
               translator, trained, sources, references, beam, batch, v)
                            for v in variants},
           "ours_trained_profile": _network_share(translator, trained,
                                                  sources, beam, batch)}
    row["sentences_per_s_ratio_ours_over_opennmt"] = _ratios(row, "ours")
    decode.append(row)
    print("decode", json.dumps(row), flush=True)
  return {"onmt_vocabulary": vocabularies,
          "train": {"ours": ours_train, "opennmt": onmt_train,
                    "timing": TIMING, "warmup_steps": args.warmup_steps,
                    "target_tokens_per_s_ratio_ours_over_opennmt":
                        ours_train["target_tokens_per_s"]
                        / onmt_train["target_tokens_per_s"],
                    "loop_target_tokens_per_s_ratio_ours_over_opennmt":
                        ours_train["loop"]["target_tokens_per_s"]
                        / onmt_train["loop"]["target_tokens_per_s"]},
          "decode": decode}


def _trained(args, config, translator, trained, sources, references,
             tmp: str, test_src: str, vocabulary: dict) -> dict:
  """The workdir's checkpoint beside `--onmt-model` (trained with
  `vocabulary`), no training."""
  decode = []
  for beam in args.beams:
    batch = max(1, 256 // beam)  # about the same number of live rows
    row = {"beam": beam, "batch": batch,
           "opennmt": _onmt_decode(args.onmt_bin, tmp, test_src,
                                   args.onmt_model, beam, batch, config,
                                   translator.tgt_sp, references),
           "ours_trained": {v.name(): _ours_decode(
               translator, trained, sources, references, beam, batch, v)
                            for v in _variants(args.max_output_ratio)}}
    row["sentences_per_s_ratio_ours_over_opennmt"] = _ratios(
        row, "ours_trained")
    decode.append(row)
    print("decode", json.dumps(row), flush=True)
  return {"opennmt_model": args.onmt_model,
          "onmt_vocabulary": vocabulary,
          "decode": decode}


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--workdir", required=True, help="a trained NMT workdir")
  parser.add_argument("--onmt-bin", required=True,
                      help="bin/ of a venv with OpenNMT-py 3.0.4")
  parser.add_argument("--onmt-model",
                      help="a trained OpenNMT-py checkpoint on the workdir's "
                      "subwords: decode it beside the workdir's, no training")
  parser.add_argument("--max-output-ratio", type=float, default=0.0,
                      help="with --onmt-model, our stop rules again with "
                      "decode.max_output_ratio set to this")
  parser.add_argument("--encoder-hidden", type=int,
                      help="units of each of our encoder directions in the "
                      "side-by-side training (model.encoder_hidden); "
                      "OpenNMT-py's brnn splits its hidden_size over the "
                      "two, so hidden // 2 trains the same model as its "
                      "side; default: the workdir's")
  parser.add_argument("--train-steps", type=int, default=300,
                      help="steps each side trains (a multiple of "
                      f"{REPORT_EVERY})")
  parser.add_argument("--warmup-steps", type=int, default=100,
                      help="the steady-state rates count from this step "
                      f"(a multiple of {REPORT_EVERY}) to the last")
  parser.add_argument("--cores", type=int,
                      help="both sides on the first N cores, N threads each "
                      "(OpenNMT-py's OMP_NUM_THREADS; XLA's pool follows "
                      "the cores, and 1 turns off its Eigen threads): on "
                      "shared cores torch's threads lose far more to other "
                      "jobs than XLA's; default: all cores, each side's own "
                      "threads")
  parser.add_argument("--onmt-vocab", choices=VOCABULARIES, default="all",
                      help="OpenNMT-py's vocabularies in the side-by-side "
                      "training: all pieces of the workdir's sentencepiece "
                      "models, as ours (the same output layer), or those "
                      "seen in the training text (onmt_build_vocab's)")
  parser.add_argument("--sentences", type=int, default=200)
  parser.add_argument("--beams", type=int, nargs="+", default=[5, 50])
  parser.add_argument("--output",
                      default="lab/results/nmt_vs_opennmt.json")
  args = parser.parse_args()
  if (args.train_steps % REPORT_EVERY or args.warmup_steps % REPORT_EVERY
      or not 0 <= args.warmup_steps < args.train_steps):
    parser.error(f"--warmup-steps and --train-steps: multiples of "
                 f"{REPORT_EVERY}, warm-up below the steps")
  kept_vocabulary = (kept_vocabularies(args.onmt_model) if args.onmt_model
                     else None)
  if args.onmt_model and kept_vocabulary is None:
    parser.error(f"--onmt-model {args.onmt_model}: no {KEPT_TRAINING} "
                 "beside it records the vocabularies OpenNMT-py trained "
                 "with; train it with nmt_learning_vs_opennmt.py --keep "
                 "DIR and pass DIR/model_step_N.pt")
  if args.cores:
    pin_cores(args.cores)
  kept = host.keep_freed_memory()  # before jax starts, as `paraflax train`

  # The cores are shared: the 1-minute load average at each phase says how
  # much (contention slows OpenNMT-py's torch threads far more than XLA).
  load = {"start": os.getloadavg()[0]}
  config, translator, trained, trained_step, data, stream = training_inputs(
      args.workdir, args.encoder_hidden)
  src_sp, tgt_sp = translator.src_sp, translator.tgt_sp
  lang = config.lang
  lines, _ = readers.read_lines(
      paths.data_path("newstest_dev", f"newstest2013.{_ISO3[lang]}"))
  references, _ = readers.read_lines(
      paths.data_path("newstest_dev", "newstest2013.eng"))
  sources = [translator.encode(s, f"newstest2013 line {i + 1}", "truncate")
             for i, s in enumerate(lines[:args.sentences])]
  vocab = max(src_sp.get_piece_size(), tgt_sp.get_piece_size())

  with tempfile.TemporaryDirectory(prefix="nmt_vs_opennmt_") as tmp:
    test_src = write_lines(f"{tmp}/test.src", (as_pieces(src_sp, s)
                                               for s in sources))
    if args.onmt_model:
      found = _trained(args, config, translator, trained, sources,
                       references, tmp, test_src, kept_vocabulary)
    else:
      found = _fresh(args, config, translator, trained, data, stream,
                     sources, references, tmp, test_src, vocab, load)

  onmt = onmt_versions(args.onmt_bin)
  report = {
      **children.run_facts(__file__, None), "benchmark": "nmt_vs_opennmt",
      "workdir": children.portable(["--workdir", args.workdir])[1],
      "trained_checkpoint_step": trained_step,
      "model": config.model.to_dict(), "vocab_size": vocab,
      "train_pairs": len(data), "backend": jax.default_backend(),
      "keep_freed_memory": kept, "torch_threads": onmt.pop("torch_threads"),
      "cores": sorted(os.sched_getaffinity(0)),
      "xla_flags": os.environ.get("XLA_FLAGS", ""),
      "load_average_1min": dict(load, end=os.getloadavg()[0]), **found}
  children.write_result(args.output, report, peers=onmt)
  print(f"wrote {args.output}")


if __name__ == "__main__":
  main()
