r"""Bilingual embedding throughput: encoding (sentences/s, subword tokens/s)
per encoder side, and aligned-pair scoring (pairs/s) per similarity.

Encoding: `bilingual.Embedder` on `--sentences` real news pairs (a seeded
sample of newstest_train_pool de-en), German through the source encoder and
English through the target encoder, batches split over the mesh. Parameters:
the best checkpoint of `--workdir`, or else random ones of `--config`'s
sizes (configs/bilingual.py:de: 512-d embeddings) with subwords trained on
that config's training text as `paraflax train` trains them; the work does
not depend on the weights.

Scoring: `similarity.score` of `--pairs` aligned pairs of random-normal
embeddings of the model's width (exact search does the same work whatever
the data holds), rows split over the mesh: cosine, euclidean, csls (k-NN
both ways, `--k`) and mlp (a randomly initialised `MLPHead`, 512 x 2).

Command (writes lab/results/bilingual_throughput.json, with the run's
facts, by children.write_result):
  .venv/bin/python lab/benchmarks/bilingual_throughput.py --devices 1 8 \
      [--workdir runs/bi_de_en]

The parent never imports jax: each device count runs in a child whose
XLA_FLAGS force that many host (CPU) devices, because jax reads the flag once,
when it starts. Each child prints one JSON line on stdout and saves its
embeddings and scores, which the parent compares across device counts.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import tempfile
import time
from typing import Any

import numpy as np

import children  # lab/benchmarks/children.py, beside this script

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_DEFAULT_OUTPUT = os.path.join(_ROOT, "lab", "results",
                               "bilingual_throughput.json")
_DEFAULT_CONFIG = os.path.join(_ROOT, "configs", "bilingual.py") + ":de"
SIMILARITIES = ("cosine", "euclidean", "csls", "mlp")  # = similarity's
_TEXT = "bitext_newstest_pool_de_en"  # a corpus (no tf.data to read it)
_SEED = 0
_PARAM_STD = 0.1  # random parameters: any finite values do the same work

Result = dict[str, Any]


def _parse(argv: list[str] | None) -> argparse.Namespace:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--devices", type=int, nargs="+", default=[1, 8],
                      help="simulated CPU device counts, one child each")
  parser.add_argument("--workdir", default=None,
                      help="a trained bilingual workdir (default: random "
                      "parameters of --config)")
  parser.add_argument("--config", default=_DEFAULT_CONFIG,
                      help="model sizes and subwords without --workdir")
  # 20,000: about 30-60 s per side and device count on 2 idle cores.
  parser.add_argument("--sentences", type=int, default=20_000,
                      help="sentences encoded per side (at most the "
                      f"{_TEXT} pairs, 24,525)")
  parser.add_argument("--pairs", type=int, default=100_000,
                      help="aligned pairs scored per similarity")
  parser.add_argument("--k", type=int, default=10, help="csls neighbours")
  parser.add_argument("--similarities", nargs="+", choices=SIMILARITIES,
                      default=list(SIMILARITIES))
  parser.add_argument("--calls", type=int, default=1,
                      help="timed calls after the warm-up, per measurement")
  parser.add_argument("--output", default=_DEFAULT_OUTPUT)
  parser.add_argument("--child-devices", type=int, help=argparse.SUPPRESS)
  parser.add_argument("--child-dir", help=argparse.SUPPRESS)
  return parser.parse_args(argv)


# ---------------------------------------------------------------- child ----


def _timed(fn, calls: int) -> tuple[list[float], Any]:
  """Seconds of each of `calls` calls of `fn`, and the last one's result."""
  times, out = [], None
  for _ in range(calls):
    start = time.perf_counter()
    out = fn()
    times.append(time.perf_counter() - start)
  return times, out


def _random_model(config, mesh, subword_dir: str):
  """Embedder (over `mesh`) and random parameters of the config's sizes;
  subwords trained (once per run: the next child finds them in
  `subword_dir`) on the config's training text, in the model's direction."""
  import jax  # pylint: disable=g-import-not-at-top
  from paraflax.data import corpora  # pylint: disable=g-import-not-at-top
  from paraflax.data import sentencepiece_vocab  # pylint: disable=g-import-not-at-top
  from paraflax.recipes import bilingual  # pylint: disable=g-import-not-at-top

  def pairs():  # read only when the subwords are trained
    src, tgt = bilingual.DIRECTIONS[config.direction]
    for name in config.data.train:
      columns = corpora.read(corpora.get(name), "train")
      yield from zip(columns[src], columns[tgt])

  start = time.perf_counter()
  subwords = sentencepiece_vocab.pair(subword_dir, pairs(),
                                      **config.vocab.to_dict())
  subword_s = time.perf_counter() - start
  recipe = bilingual.BilingualRecipe(config, *subwords, mesh=mesh)
  shapes = jax.eval_shape(recipe.init_state, jax.random.key(0))["params"]
  rng = np.random.default_rng(_SEED)
  params = jax.tree.map(
      lambda s: rng.normal(0, _PARAM_STD, s.shape).astype(np.float32), shapes)
  source = {"params": f"random normal (seed {_SEED}, std {_PARAM_STD}) of "
                      "the config's shapes",
            "subwords": "trained on the config's data.train "
                        f"(vocab {config.vocab.size}, {config.vocab.model_type}, "
                        f"joint={config.vocab.joint})",
            "subword_training_s": subword_s}
  return recipe.embedder, params, source


def _texts(n: int) -> dict[str, list[str]]:
  """n seeded-random pairs of real news, as {language: sentences}."""
  from paraflax.data import corpora  # pylint: disable=g-import-not-at-top
  corpus = corpora.get(_TEXT)
  columns = corpora.read(corpus, "train")
  total = len(columns["source"])
  if n > total:
    raise SystemExit(f"--sentences {n}: {_TEXT} has {total} pairs.")
  rows = np.random.default_rng(_SEED).choice(total, n, replace=False)
  return {lang: [columns[f][i] for i in rows]
          for lang, f in zip(corpus.pair, ("source", "target"))}


def _encode(embedder, params, texts: list[str], lang: str, calls: int,
            save: str) -> Result:
  """One side: compile apart (first pass of the warm-up minus the second),
  then `calls` timed calls over every sentence."""
  from paraflax.data import batching  # pylint: disable=g-import-not-at-top

  start = time.perf_counter()
  seqs = embedder.tokenize(texts, lang)
  tokenize_s = time.perf_counter() - start
  tokens = sum(len(s) for s in seqs)
  # A batch is as wide as its longest sentence: one sentence of each padded
  # width compiles every shape the timed calls meet (one batch each).
  by_width = {batching.width(len(s)): t
              for s, t in zip(seqs, texts)}
  warmup, _ = _timed(lambda: [embedder(params, [t], lang)
                              for t in by_width.values()], 2)
  times, out = _timed(lambda: embedder(params, texts, lang), calls)
  np.save(save, out)
  median = statistics.median(times)
  return {"lang": lang, "sentences": len(texts), "subword_tokens": tokens,
          "mean_tokens": tokens / len(texts),
          "widths": sorted(by_width), "warmup_s": warmup,
          "compile_s": warmup[0] - warmup[1], "tokenize_s": tokenize_s,
          "call_s": times, "median_call_s": median,
          "sentences_per_s": len(texts) / median,
          "tokens_per_s": tokens / median, "dim": int(out.shape[1])}


def _score(pairs: int, dim: int, names: list[str], k: int, calls: int,
           mesh, save_dir: str) -> dict[str, Result]:
  """Each similarity: one warm-up call (compiles), then `calls` timed."""
  import jax  # pylint: disable=g-import-not-at-top
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  from paraflax.mining import similarity  # pylint: disable=g-import-not-at-top
  from paraflax.models import heads  # pylint: disable=g-import-not-at-top

  rng = np.random.default_rng(_SEED)
  x = rng.standard_normal((pairs, dim), dtype=np.float32)
  y = rng.standard_normal((pairs, dim), dtype=np.float32)
  head = heads.MLPHead()
  mlp = similarity.MLPSimilarity(
      head, head.init(jax.random.key(_SEED), jnp.zeros((1, dim)),
                      jnp.zeros((1, dim))), dim)
  ctx = {"csls": {"k": k}, "mlp": {"model": mlp}}
  out = {}
  for name in names:
    call = functools.partial(similarity.score, name, x, y, mesh=mesh,
                             **ctx.get(name, {}))
    times, scores = _timed(call, 1 + calls)
    np.save(os.path.join(save_dir, f"scores-{name}-{mesh.size}.npy"),
            scores)
    median = statistics.median(times[1:])
    out[name] = {"pairs": pairs, "first_call_s": times[0],
                 "call_s": times[1:], "median_call_s": median,
                 "pairs_per_s": pairs / median,
                 "peak_rss_mib": children.peak_rss_mib()}
  return out


def _measure(args: argparse.Namespace) -> Result:
  # Imported here so that only the child, with XLA_FLAGS set, starts jax.
  import jax  # pylint: disable=g-import-not-at-top
  import jaxlib  # pylint: disable=g-import-not-at-top
  from paraflax import config as config_lib  # pylint: disable=g-import-not-at-top
  from paraflax.recipes import bilingual  # pylint: disable=g-import-not-at-top
  from paraflax.training import partitioning  # pylint: disable=g-import-not-at-top

  n = args.child_devices
  mesh = partitioning.make_mesh(n)  # the child's one mesh
  if args.workdir:
    embedder, params, step = bilingual.load_for_inference(args.workdir, mesh)
    workdir = children.portable_path(args.workdir, "WORKDIR")
    source = {"params": f"{workdir}, checkpoint step {step}",
              "subwords": f"{workdir}'s"}
  else:
    embedder, params, source = _random_model(
        config_lib.load(args.config, []), mesh,
        os.path.join(args.child_dir, "subwords"))
  texts = _texts(args.sentences)
  encoding = {lang: _encode(embedder, params, texts[lang], lang, args.calls,
                            os.path.join(args.child_dir,
                                         f"embeddings-{lang}-{n}.npy"))
              for lang in embedder.languages}
  encoding_rss = children.peak_rss_mib()
  dim = 2 * embedder.model.hidden
  scoring = _score(args.pairs, dim, args.similarities, args.k, args.calls,
                   mesh, args.child_dir)
  return {"devices": embedder.mesh.size, "backend": jax.default_backend(),
          **source, "model": embedder.model.__class__.__name__,
          "word_dim": embedder.model.word_dim,
          "hidden": embedder.model.hidden, "max_len": embedder.max_len,
          "encoding": encoding, "encoding_peak_rss_mib": encoding_rss,
          "score_dim": dim, "scoring": scoring,
          "peak_rss_mib": children.peak_rss_mib(),
          "jax": jax.__version__, "jaxlib": jaxlib.__version__}


# --------------------------------------------------------------- parent ----


def _agreement(results: list[Result], work: str) -> dict[str, Result]:
  """Largest |difference| of each count's embeddings and scores from the
  first count's: the same numbers, up to float rounding."""
  base = results[0]["devices"]

  def diff(stem: str, devices: int) -> float:
    a, b = (np.load(os.path.join(work, f"{stem}-{d}.npy"))
            for d in (base, devices))
    return float(np.max(np.abs(a - b), initial=0.0))

  return {f"{r['devices']}/{base}": {
      "embeddings_max_abs_diff": {
          lang: diff(f"embeddings-{lang}", r["devices"])
          for lang in r["encoding"]},
      "scores_max_abs_diff": {
          name: diff(f"scores-{name}", r["devices"])
          for name in r["scoring"]}} for r in results[1:]}


def _table(results: list[Result]) -> str:
  rows = [f"{'devices':>7} {'side':<13} {'per s':>10} {'tokens/s':>9} "
          f"{'median s':>8} {'compile s':>9} {'peak RSS MiB':>12}"]
  for r in results:
    for lang, e in r["encoding"].items():
      rows.append(f"{r['devices']:>7} {'encode ' + lang:<13} "
                  f"{e['sentences_per_s']:>10.1f} {e['tokens_per_s']:>9.0f} "
                  f"{e['median_call_s']:>8.2f} {e['compile_s']:>9.2f} "
                  f"{r['encoding_peak_rss_mib']:>12.0f}")
    for name, s in r["scoring"].items():
      rows.append(f"{r['devices']:>7} {'score ' + name:<13} "
                  f"{s['pairs_per_s']:>10.0f} {'-':>9} "
                  f"{s['median_call_s']:>8.2f} "
                  f"{s['first_call_s'] - s['median_call_s']:>9.2f} "
                  f"{s['peak_rss_mib']:>12.0f}")
  rows.append("per s: sentences (encode) or pairs (score); compile s: "
              "warm-up minus a timed pass (score: first call minus median).")
  return "\n".join(rows)


def main(argv: list[str] | None = None) -> None:
  args = _parse(argv)
  if min(args.calls, args.sentences, args.pairs) < 1:
    raise SystemExit("--calls, --sentences and --pairs must be positive")
  if args.child_devices:
    print(json.dumps(_measure(args)), flush=True)
    return
  child_argv = ["--config", args.config, "--sentences", str(args.sentences),
                "--pairs", str(args.pairs), "--k", str(args.k),
                "--calls", str(args.calls),
                "--similarities", *args.similarities]
  if args.workdir:
    child_argv += ["--workdir", args.workdir]
  with tempfile.TemporaryDirectory() as work:
    results = [children.run_child(
        [os.path.abspath(__file__), *child_argv, "--child-devices", str(n),
         "--child-dir", work], n) for n in args.devices]
    agreement = _agreement(results, work)
  report = {
      **children.run_facts(__file__, argv),
      "benchmark": "bilingual_throughput",
      "workdir": args.workdir and children.portable_path(args.workdir,
                                                         "WORKDIR"),
      "config": None if args.workdir else children.portable_path(
          args.config, "CONFIG"),
      "text": f"{_TEXT} train, {args.sentences} pairs sampled with seed "
              f"{_SEED}; each side through its own encoder",
      "score_embeddings": f"random normal, seed {_SEED}",
      "mlp": f"random MLPHead (hidden 512, 2 layers, seed {_SEED})",
      "k": args.k, "calls": args.calls,
      "results": results, "agreement": agreement}
  children.write_result(args.output, report)
  print(_table(results))
  print(json.dumps(agreement))
  print(f"wrote {args.output}")


if __name__ == "__main__":
  main()
