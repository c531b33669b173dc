"""`paraflax <command>`: the command line.

Imports stay inside the commands so that `--help` answers at once and no
command pays for a framework it does not use.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

EXIT_BAD_INPUT = 2


def _add_stop(parser: argparse.ArgumentParser) -> None:
  # Written out (= beam_search.STOP_RULES) so that --help does not import jax.
  parser.add_argument(
      "--stop", choices=("exact", "k_finished"), default="exact",
      help="when a beam search ends: 'exact' (the true n best up to the "
      "maximum length; slow with length normalisation) or 'k_finished' "
      "(once beam-many hypotheses have ended; faster, may miss a longer "
      "better one)")


def _parser() -> argparse.ArgumentParser:
  parser = argparse.ArgumentParser(
      prog="paraflax", description="Paraphrastic sentence embeddings and "
      "bitext mining in JAX/Flax.")
  sub = parser.add_subparsers(dest="command", required=True)

  train = sub.add_parser("train", help="train a model from a config file",
                         description="Trains (or resumes) the experiment of "
                         "a config file; override keys with "
                         "--config.key=value.")
  train.add_argument("--config", required=True, help="configs/<name>.py")
  train.add_argument("--workdir", required=True,
                     help="checkpoints, metrics and the vocabulary go here; "
                     "rerunning resumes from the newest checkpoint")
  train.add_argument("--distributed", action="store_true",
                     help="call jax.distributed.initialize() (multi-host)")

  embed = sub.add_parser("embed", help="embed sentences with a trained model",
                         description="One sentence per line in; a raw "
                         "little-endian float32 N x d matrix out (LASER's "
                         "format), same row order.")
  embed.add_argument("--workdir", required=True)
  embed.add_argument("--input", required=True)
  embed.add_argument("--output", required=True)
  embed.add_argument("--lang", help="the input's language: required with a "
                     "bilingual workdir (picks its source or target "
                     "encoder); optional with an English paraphrase workdir "
                     "(must be en)")

  tr = sub.add_parser("translate", help="translate with a trained NMT model",
                      description="One input line -> one output line (the "
                      "1-best), same order. Empty input lines give empty "
                      "output lines; lines over data.max_len subwords are "
                      "truncated; both are counted on stderr.")
  tr.add_argument("--workdir", required=True)
  tr.add_argument("--input", required=True)
  tr.add_argument("--output", required=True)
  tr.add_argument("--beam", type=int, default=5)
  tr.add_argument("--alpha", type=float, default=None,
                  help="length normalisation (default: the config's)")
  tr.add_argument("--batch-size", type=int, default=32)
  _add_stop(tr)

  bt = sub.add_parser(
      "backtranslate", help="back-translate bitext into paraphrase pairs",
      description="Translates the non-English side of a bitext Task (or of "
      "--src/--ref files) and appends JSONL records {id, reference, "
      "translation, rank, cost, source}; rerunning the same command resumes.")
  bt.add_argument("--workdir", required=True, help="an NMT workdir")
  bt.add_argument("--output", required=True, help="OUT.jsonl (appended)")
  bt.add_argument("--beam", type=int, default=50)
  bt.add_argument("--nbest", type=int, default=50)
  bt.add_argument("--alpha", type=float, default=None)
  bt.add_argument("--batch-size", type=int, default=16)
  _add_stop(bt)
  bt.add_argument("--task", help="bitext Task, e.g. bitext_multi30k_de_en")
  bt.add_argument("--split", default="train")
  bt.add_argument("--src", help="non-English file (instead of --task)")
  bt.add_argument("--ref", help="English file line-aligned with --src")
  bt.add_argument("--empty-lines", choices=("error", "drop"), default="error",
                  help="for --src/--ref: rows with an empty side")

  ps = sub.add_parser(
      "pair-stats", help="statistics and random examples of a "
      "back-translated corpus", description="Length and cost statistics of "
      "the 1-best pairs of a `paraflax backtranslate` JSONL, and random "
      "examples (the same for the same --seed).")
  ps.add_argument("input", help="OUT.jsonl from paraflax backtranslate")
  ps.add_argument("--examples", type=int, default=10)
  ps.add_argument("--seed", type=int, default=0)
  ps.add_argument("--json", help="also write the statistics here")

  sub.add_parser("tasks", help="list the registered data Tasks and Mixtures",
                 description="Tasks and Mixtures a config can name in "
                 "data.task, with their features and splits.")

  _add_mine(sub)
  _add_mining_eval(sub)
  _add_bilingual(sub)

  ev = sub.add_parser("eval-sts", help="STS table of a trained model",
                      description="Prints the STS table and writes it to "
                      "<workdir>/sts.json.")
  ev.add_argument("--workdir", required=True)
  return parser


def _add_mine(sub) -> None:
  # Choices are spelled out here: importing the registries would import jax.
  mine = sub.add_parser(
      "mine", help="mine parallel sentences by margin score (LASER files)",
      description="Margin-based mining (Artetxe & Schwenk 2019) of two "
      "embedded corpora. Embeddings are LASER's raw N x d matrices (float32, "
      "or float16 with --fp16), or are computed from the text files with "
      "--workdir. Output: a TSV of score<TAB>src<TAB>tgt, by descending "
      "score; src and tgt are the sentences when --src-text/--tgt-text are "
      "given, else 0-based line numbers. Progress goes to stderr; finished "
      "k-NN blocks are kept in OUTPUT.parts/ until the TSV is written, so "
      "rerunning the same command after a crash resumes.")
  mine.add_argument("--src-emb", help="source embeddings (LASER raw file)")
  mine.add_argument("--tgt-emb", help="target embeddings (LASER raw file)")
  mine.add_argument("--dim", type=int, help="embedding dimension (e.g. 1024 "
                    "for LASER); required with --src-emb/--tgt-emb")
  mine.add_argument("--fp16", action="store_true",
                    help="the embedding files hold float16")
  mine.add_argument("--src-text", help="source sentences, one per embedding")
  mine.add_argument("--tgt-text", help="target sentences, one per embedding")
  mine.add_argument("--workdir", help="embed --src-text/--tgt-text with this "
                    "workdir's encoder instead of reading embedding files "
                    "(a bilingual workdir, or an English paraphrase one)")
  mine.add_argument("--src-lang", help="source language, with --workdir")
  mine.add_argument("--tgt-lang", help="target language, with --workdir")
  mine.add_argument("--margin", choices=("ratio", "distance", "absolute"),
                    default="ratio", help="margin(cos, neighbourhood mean): "
                    "a / b, a - b, or plain cosine a (default: ratio)")
  mine.add_argument("--retrieval", choices=("fwd", "bwd", "intersect", "max"),
                    default="max", help="candidates: each source's best "
                    "target (fwd), each target's best source (bwd), pairs "
                    "chosen both ways (intersect), or both, greedily by score "
                    "using each sentence once (max; default)")
  mine.add_argument("--k", type=int, default=4,
                    help="neighbours per sentence (default: 4)")
  mine.add_argument("--threshold", type=float,
                    help="keep pairs with score >= this (default: all)")
  mine.add_argument("--dedup", action=argparse.BooleanOptionalAction,
                    help="mine each distinct sentence once, then give every "
                    "line that holds a mined sentence the pair and its score "
                    "(so a repeated sentence can appear in several pairs, "
                    "even with --retrieval max); --no-dedup mines lines as "
                    "they are, duplicates competing for partners. Needs the "
                    "text files; default: on when they are given")
  mine.add_argument("--backend", choices=("jax", "faiss"), default="jax",
                    help="k-NN search: exact blocked search on the JAX "
                    "devices (default), or faiss on the CPU")
  mine.add_argument("--faiss-index", choices=("flat", "ivf"), default="flat",
                    help="faiss: exact (flat, same neighbours as jax) or "
                    "clustered (ivf: approximate, faster on big corpora)")
  mine.add_argument("--nlist", type=int,
                    help="ivf clusters (default: about 4 sqrt(corpus rows))")
  mine.add_argument("--nprobe", type=int, default=16,
                    help="ivf clusters searched per query (default: 16; "
                    "nprobe >= nlist is exact)")
  mine.add_argument("--block", type=int, default=8192,
                    help="queries per k-NN block, the unit of progress and "
                    "resumption; bounds device memory (default: 8192)")
  mine.add_argument("--output", required=True, help="OUT.tsv")


def _add_langs(parser: argparse.ArgumentParser) -> None:
  parser.add_argument("--src-lang", required=True,
                      help="language of the first column / --src (e.g. de)")
  parser.add_argument("--tgt-lang", required=True,
                      help="language of the second column / --tgt (e.g. en)")


SIMILARITIES = ("cosine", "euclidean", "csls", "mlp")


def _add_similarity(parser: argparse.ArgumentParser, **kwargs) -> None:
  # Choices spelled out (= similarity.SIMILARITIES): no jax for --help.
  parser.add_argument("--similarity", choices=SIMILARITIES, **kwargs)
  parser.add_argument("--k", type=int, default=10,
                      help="csls: nearest neighbours per sentence, counted "
                      "among the other side's sentences given (default: 10)")


def _add_bilingual(sub) -> None:
  sp = sub.add_parser(
      "score-pairs", help="score sentence pairs with a bilingual workdir",
      description="One source<TAB>target pair per line in; one float per "
      "line out, same order, higher = more likely a translation. mlp needs "
      "`paraflax train-mlp` on the workdir first; csls compares each "
      "sentence with its --k nearest neighbours among all the file's other "
      "side.")
  sp.add_argument("--workdir", required=True, help="a bilingual workdir")
  sp.add_argument("--input", required=True, help="PAIRS.tsv")
  sp.add_argument("--output", required=True)
  _add_langs(sp)
  _add_similarity(sp, default="cosine", help="(default: cosine)")

  ae = sub.add_parser(
      "align-eval", help="sentence alignment recovery error of a bilingual "
      "workdir", description="Shuffles the English side of two "
      "line-aligned files, gives every sentence its nearest neighbour on "
      "the other side under each similarity, and prints the share (%%) not "
      "matched with their translation, xx->en, en->xx and their mean.")
  ae.add_argument("--workdir", required=True, help="a bilingual workdir")
  ae.add_argument("--src", required=True)
  ae.add_argument("--tgt", required=True, help="line-aligned with --src")
  _add_langs(ae)
  _add_similarity(ae, action="append", help="repeat for several (default: "
                  "cosine, euclidean, csls, and mlp once trained)")
  ae.add_argument("--seed", type=int, default=0, help="of the shuffle")
  ae.add_argument("--output", help="also write the rows here as JSON")

  tm = sub.add_parser(
      "train-mlp", help="train the MLP similarity of a bilingual workdir",
      description="Positives: newstest_train_pool pairs; negatives: the "
      "--worst-fraction lowest-cosine pairs of the ParaCrawl v3 sample "
      "(labels unused) or random pairs. Writes WORKDIR/"
      "mlp_similarity.msgpack and mlp_similarity.json.")
  tm.add_argument("--workdir", required=True, help="a bilingual workdir")
  tm.add_argument("--negatives", choices=("worst", "random"),
                  default="worst")
  tm.add_argument("--worst-fraction", type=float, default=0.6)
  tm.add_argument("--epochs", type=int, default=10)
  tm.add_argument("--seed", type=int, default=0)

  eb = sub.add_parser(
      "eval-bilingual", help="alignment recovery and ParaCrawl tables of a "
      "bilingual workdir", description="Alignment recovery on newstest2012 "
      "and the Multi30k test sets, ParaCrawl v3/v6 AUC and precision at "
      "25%% beside the bundled filters, and cosine vs MLP score plots; "
      "trains the MLP similarity first if the workdir has none. Writes "
      "WORKDIR/bilingual_eval.json and WORKDIR/paracrawl_*.png.")
  eb.add_argument("--workdir", required=True, help="a bilingual workdir")
  eb.add_argument("--k", type=int, default=10, help="csls neighbours")
  eb.add_argument("--seed", type=int, default=0, help="of the shuffle")


def _add_mining_eval(sub) -> None:
  # Choices spelled out (= mining.SIDES, mining.GOLD_SETS): no jax for --help.
  ms = sub.add_parser(
      "mining-set", help="build a mining benchmark from the news test sets",
      description="Hides --gold aligned pairs of newstest2012 (dev) or "
      "newstest2013 (test) among --distractors sentences per side from other "
      "news test sets, so that most sentences have no translation. Writes "
      "OUTPUT/src.txt, tgt.txt (non-English, English; one sentence per "
      "line), gold.tsv (0-based src_idx<TAB>tgt_idx) and a README with the "
      "recipe. The same arguments give the same files.")
  ms.add_argument("--lang", choices=("de", "fr", "cs"), required=True,
                  help="the non-English language (paired with English)")
  ms.add_argument("--split", choices=("dev", "test"), required=True,
                  help="dev (to choose thresholds) or test")
  ms.add_argument("--output", required=True, help="folder to write")
  ms.add_argument("--gold", type=int, default=1000,
                  help="gold pairs (default: 1000)")
  ms.add_argument("--distractors", type=int, default=4000,
                  help="sentences without translation, per side (default: "
                  "4000)")
  ms.add_argument("--seed", type=int, default=0)

  me = sub.add_parser(
      "mining-eval", help="mining P/R/F1 on a dev and a test benchmark",
      description="Mines both benchmarks (from `paraflax mining-set`) with "
      "every margin x retrieval strategy, picks the F1-optimal threshold on "
      "dev and applies it to test. Prints precision / recall / F1 x 100 "
      "(dev at its optimum, test at the dev threshold, test with no "
      "threshold); embeddings are LASER raw files, row i = line i of the "
      "folder's src.txt / tgt.txt.")
  me.add_argument("--dev", required=True, help="dev benchmark folder")
  me.add_argument("--test", required=True, help="test benchmark folder")
  for split in ("dev", "test"):
    for side in ("src", "tgt"):
      me.add_argument(f"--{split}-{side}-emb", required=True,
                      help=f"embeddings of the {split} folder's {side}.txt")
  me.add_argument("--dim", type=int, required=True,
                  help="embedding dimension (e.g. 1024 for LASER)")
  me.add_argument("--fp16", action="store_true",
                  help="the embedding files hold float16")
  me.add_argument("--k", type=int, default=4,
                  help="neighbours per sentence (default: 4)")
  me.add_argument("--output", help="also write the table here as JSON")


def _train(args: argparse.Namespace, overrides: list[str]) -> None:
  from paraflax import config as config_lib  # pylint: disable=g-import-not-at-top
  config = config_lib.load(args.config, overrides)
  _check_same_experiment(args.workdir, config)
  _hide_gpus_from_tensorflow()
  import jax  # pylint: disable=g-import-not-at-top
  if args.distributed:
    jax.distributed.initialize()
  from paraflax import recipes  # pylint: disable=g-import-not-at-top
  from paraflax.training import loop  # pylint: disable=g-import-not-at-top
  from paraflax.training import partitioning  # pylint: disable=g-import-not-at-top
  shards = partitioning.make_mesh(config.mesh.num_devices).size
  recipe = recipes.build(config, args.workdir, shards)
  loop.check_intervals(config, recipe.updates_per_call)

  def report(step: int, values: dict[str, float]) -> None:
    shown = ", ".join(f"{k}={v:.4f}" for k, v in values.items()
                      if not k.endswith("spearman"))
    print(f"step {step}: {shown}", flush=True)

  loop.train(recipe, config, args.workdir, on_eval=report)
  print(f"done: {config.train_steps} steps in {args.workdir}", flush=True)


def _check_same_experiment(workdir: str, config) -> None:
  """Resuming with another config would mix two experiments in one run."""
  from paraflax import config as config_lib  # pylint: disable=g-import-not-at-top
  from paraflax.recipes import workdir as workdir_lib  # pylint: disable=g-import-not-at-top
  path = os.path.join(workdir, workdir_lib.CONFIG_FILE)
  if not os.path.exists(path):
    return
  with open(path, encoding="utf-8") as f:
    saved = json.load(f)
  now = json.loads(config.to_json())
  diff = sorted(k for k in set(saved) | set(now)
                if k != "train_steps" and saved.get(k) != now.get(k))
  if diff:
    raise config_lib.ConfigError(
        f"{workdir} holds a run of a different config (differs in: "
        f"{', '.join(diff)}). Use a new --workdir, or the same config (only "
        "train_steps may change on resume).")


def _hide_gpus_from_tensorflow() -> None:
  # TensorFlow only feeds data; it must not grab accelerator memory from JAX.
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  tf.config.set_visible_devices([], "GPU")


def _embed(args: argparse.Namespace) -> None:
  from paraflax import embedders  # pylint: disable=g-import-not-at-top
  from paraflax.data import readers  # pylint: disable=g-import-not-at-top
  from paraflax.mining import embeddings_io  # pylint: disable=g-import-not-at-top
  texts, _ = readers.read_lines(args.input)
  if not texts:
    raise readers.DataError(f"{args.input}: empty file, nothing to embed. "
                            "Give one sentence per line.")
  embed, step = embedders.load(args.workdir, [args.lang])
  emb = embed(texts, args.lang)
  embeddings_io.write(args.output, emb)
  print(f"wrote {emb.shape[0]} x {emb.shape[1]} float32 to {args.output} "
        f"(checkpoint step {step})", file=sys.stderr)


def _mine(args: argparse.Namespace) -> None:
  from paraflax import errors  # pylint: disable=g-import-not-at-top
  from paraflax.mining import pipeline  # pylint: disable=g-import-not-at-top
  texts = (args.src_text, args.tgt_text)
  if args.workdir and (args.src_emb or args.tgt_emb):
    raise errors.ConfigError(
        "give either --workdir (to embed the texts) or --src-emb/--tgt-emb, "
        "not both.")
  if args.workdir:
    src, tgt = pipeline.embed_sides(args.workdir, texts,
                                    (args.src_lang, args.tgt_lang))
  else:
    src, tgt = pipeline.load_sides((args.src_emb, args.tgt_emb), args.dim,
                                   args.fp16, texts)
  options = pipeline.Options(
      k=args.k, margin=args.margin, retrieval=args.retrieval,
      threshold=args.threshold, backend=args.backend, block=args.block,
      faiss_index=args.faiss_index, nlist=args.nlist, nprobe=args.nprobe,
      dedup=args.dedup)
  written = pipeline.mine(src, tgt, options, args.output)
  print(f"mined {written} pairs from {len(src.emb)} x {len(tgt.emb)} "
        f"sentences into {args.output}", file=sys.stderr)


def _mining_set(args: argparse.Namespace) -> None:
  from paraflax.evaluation import mining  # pylint: disable=g-import-not-at-top
  built = mining.build(args.lang, args.split, gold=args.gold,
                       distractors=args.distractors, seed=args.seed)
  mining.write(built, args.output)
  print(f"wrote {len(built.src)} x {len(built.tgt)} sentences with "
        f"{len(built.gold)} gold pairs to {args.output}", file=sys.stderr)


def _mining_eval(args: argparse.Namespace) -> None:
  from paraflax import files  # pylint: disable=g-import-not-at-top
  from paraflax.evaluation import mining  # pylint: disable=g-import-not-at-top
  emb = {f"{split}_{side}_emb": getattr(args, f"{split}_{side}_emb")
         for split in ("dev", "test") for side in ("src", "tgt")}

  def load(split: str):
    return mining.load_embedded(
        getattr(args, split), emb[f"{split}_src_emb"],
        emb[f"{split}_tgt_emb"], args.dim, fp16=args.fp16)

  dev, test = load("dev"), load("test")
  rows = mining.evaluate(dev, test, k=args.k)
  print(f"mining P/R/F1 x 100, k={args.k}; dev {args.dev}, test {args.test}")
  print(mining.format_table(rows))
  if args.output:
    files.write_text_atomic(args.output, mining.to_json(
        rows, k=args.k, dev=args.dev, test=args.test, embeddings=emb))


def _score_pairs(args: argparse.Namespace) -> None:
  from paraflax import errors  # pylint: disable=g-import-not-at-top
  from paraflax import pair_scoring  # pylint: disable=g-import-not-at-top
  pairs = pair_scoring.read_pairs(args.input)
  if not pairs:
    raise errors.DataError(
        f"{args.input}: empty file, nothing to score. Give one "
        "source<TAB>target pair per line.")
  enc = pair_scoring.open_workdir(args.workdir, args.src_lang,
                                  args.tgt_lang)
  ctx = pair_scoring.context(args.similarity, args.workdir, k=args.k)
  scores = pair_scoring.score_pairs(enc, pairs, args.src_lang,
                                    args.similarity, ctx)
  pair_scoring.write_scores(args.output, scores)
  print(f"scored {len(scores)} pairs by {args.similarity} into "
        f"{args.output} (checkpoint step {enc.step})", file=sys.stderr)


def _align_eval(args: argparse.Namespace) -> None:
  from paraflax import files  # pylint: disable=g-import-not-at-top
  from paraflax import pair_scoring  # pylint: disable=g-import-not-at-top
  from paraflax.data import readers  # pylint: disable=g-import-not-at-top
  from paraflax.evaluation import alignment  # pylint: disable=g-import-not-at-top
  rows, _ = readers.read_parallel([args.src, args.tgt])
  enc = pair_scoring.open_workdir(args.workdir, args.src_lang,
                                  args.tgt_lang)
  names = args.similarity or [
      s for s in SIMILARITIES if s != "mlp"
      or os.path.exists(pair_scoring.mlp_path(args.workdir))]
  sims = {name: pair_scoring.context(name, args.workdir, k=args.k)
          for name in dict.fromkeys(names)}
  table = pair_scoring.align_errors(
      enc, [r[0] for r in rows], [r[1] for r in rows], args.src_lang, sims,
      seed=args.seed, name=os.path.basename(args.src))
  print(f"alignment recovery error % of {len(rows)} pairs, checkpoint step "
        f"{enc.step} of {args.workdir}")
  print(alignment.format_table(table))
  if "mlp" not in sims:
    print("(no mlp: run `paraflax train-mlp` on the workdir to add it)",
          file=sys.stderr)
  if args.output:
    files.write_text_atomic(args.output, json.dumps(table, indent=2) + "\n")


def _train_mlp(args: argparse.Namespace) -> None:
  from paraflax import pair_scoring  # pylint: disable=g-import-not-at-top
  from paraflax import similarity  # pylint: disable=g-import-not-at-top
  config = similarity.MLPConfig(negatives=args.negatives,
                                worst_fraction=args.worst_fraction,
                                epochs=args.epochs, seed=args.seed)
  enc = pair_scoring.open_workdir(
      args.workdir, *pair_scoring.workdir_languages(args.workdir))
  report = pair_scoring.train_mlp(enc, config)
  for epoch in report["epochs"]:
    print(", ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}"
                    for k, v in epoch.items()))
  print(f"wrote {pair_scoring.mlp_path(args.workdir)}", file=sys.stderr)


def _eval_bilingual(args: argparse.Namespace) -> None:
  from paraflax import pair_scoring  # pylint: disable=g-import-not-at-top
  from paraflax import similarity  # pylint: disable=g-import-not-at-top
  from paraflax.evaluation import bilingual  # pylint: disable=g-import-not-at-top
  enc = pair_scoring.open_workdir(
      args.workdir, *pair_scoring.workdir_languages(args.workdir))
  if not os.path.exists(pair_scoring.mlp_path(args.workdir)):
    print("training the MLP similarity first (paraflax train-mlp defaults)",
          file=sys.stderr)
    pair_scoring.train_mlp(enc, similarity.MLPConfig())
  sims = {name: pair_scoring.context(name, args.workdir, k=args.k)
          for name in SIMILARITIES}
  report = bilingual.evaluate(enc, sims, seed=args.seed)
  print(bilingual.format_report(report))
  print(f"wrote {bilingual.write(report)}", file=sys.stderr)


def _eval_sts(args: argparse.Namespace) -> None:
  from paraflax import files  # pylint: disable=g-import-not-at-top
  from paraflax.evaluation import sts  # pylint: disable=g-import-not-at-top
  from paraflax.recipes import paraphrase  # pylint: disable=g-import-not-at-top
  embedder, params, step = paraphrase.load_for_inference(args.workdir)
  result = sts.evaluate(lambda texts: embedder(params, texts))
  result["checkpoint_step"] = step
  print(f"STS, checkpoint step {step} of {args.workdir}")
  print(sts.format_table(result))
  files.write_text_atomic(os.path.join(args.workdir, "sts.json"),
                          json.dumps(result, indent=2) + "\n")


def _translate(args: argparse.Namespace) -> None:
  from paraflax import files  # pylint: disable=g-import-not-at-top
  from paraflax.data import readers  # pylint: disable=g-import-not-at-top
  from paraflax.recipes import nmt  # pylint: disable=g-import-not-at-top
  if args.beam < 1:
    raise readers.DataError(f"--beam {args.beam}: the beam must be >= 1.")
  lines, _ = readers.read_lines(args.input, empty="keep")
  translator, params, step = nmt.load_translator(args.workdir)
  alpha = translator.alpha if args.alpha is None else args.alpha
  todo = [i for i, line in enumerate(lines) if line.strip()]
  sources = [translator.encode(lines[i], f"{args.input}:{i + 1}", "truncate")
             for i in todo]
  truncated = sum(len(translator.src_sp.encode(lines[i])) >= translator.max_len
                  for i in todo)
  out = [""] * len(lines)
  for j, (best,) in translator.translate(params, sources, beam=args.beam,
                                         alpha=alpha, stop=args.stop,
                                         batch_size=args.batch_size):
    out[todo[j]] = best.text
  with files.atomic_output(args.output, "w") as f:
    f.write("".join(line + "\n" for line in out))
  print(f"translated {len(todo)} lines to {args.output} (checkpoint step "
        f"{step}, beam {args.beam}); {len(lines) - len(todo)} empty lines "
        f"left empty, {truncated} truncated at {translator.max_len} subwords",
        file=sys.stderr)


def _backtranslate(args: argparse.Namespace) -> None:
  from paraflax import backtranslation  # pylint: disable=g-import-not-at-top
  from paraflax.data import readers  # pylint: disable=g-import-not-at-top
  backtranslation.check_beam(args.beam, args.nbest)
  if bool(args.task) == bool(args.src or args.ref) or (
      args.src and not args.ref):
    raise readers.DataError("give either --task NAME [--split S] or both "
                            "--src FILE and --ref FILE.")
  if args.task:
    from paraflax.data import tasks  # pylint: disable=g-import-not-at-top
    rows = [(e["source"], e["target"])
            for e in tasks.examples(args.task, args.split)]
    name = f"{args.task}:{args.split}"
  else:
    rows, _ = readers.read_parallel([args.src, args.ref],
                                    empty=args.empty_lines)
    name = args.src
  from paraflax.recipes import nmt  # pylint: disable=g-import-not-at-top
  translator, params, step = nmt.load_translator(args.workdir)
  written = backtranslation.run(
      translator, params, [r[0] for r in rows], [r[1] for r in rows],
      args.output, beam=args.beam, nbest=args.nbest,
      alpha=translator.alpha if args.alpha is None else args.alpha,
      batch_size=args.batch_size, name=name, stop=args.stop)
  print(f"{len(rows)} inputs, {written} records appended to {args.output} "
        f"(checkpoint step {step}, beam {args.beam}, nbest {args.nbest})",
        file=sys.stderr)


def _pair_stats(args: argparse.Namespace) -> None:
  from paraflax import files, pair_stats  # pylint: disable=g-import-not-at-top
  from paraflax.data import readers  # pylint: disable=g-import-not-at-top
  records = readers.read_jsonl(args.input, keys=pair_stats.KEYS)
  stats = pair_stats.summarize(records)
  print(pair_stats.format_report(
      stats, pair_stats.sample(records, args.examples, args.seed)))
  if args.json:
    files.write_text_atomic(args.json, json.dumps(stats, indent=2) + "\n")


def _tasks(_: argparse.Namespace) -> None:
  from paraflax.data import corpora  # pylint: disable=g-import-not-at-top
  for name, summary in corpora.catalogue().items():
    print(f"{name:<40} {summary}")


def main(argv: list[str] | None = None) -> int:
  args, rest = _parser().parse_known_args(argv)
  overrides = [a for a in rest if a.startswith("--config.")]
  unknown = [a for a in rest if not a.startswith("--config.")]
  if unknown or (overrides and args.command != "train"):
    _parser().error(f"unrecognized arguments: {' '.join(unknown or overrides)}")
  from paraflax import errors  # pylint: disable=g-import-not-at-top
  try:
    {"train": lambda: _train(args, overrides),
     "embed": lambda: _embed(args),
     "eval-sts": lambda: _eval_sts(args),
     "mine": lambda: _mine(args),
     "mining-set": lambda: _mining_set(args),
     "mining-eval": lambda: _mining_eval(args),
     "score-pairs": lambda: _score_pairs(args),
     "align-eval": lambda: _align_eval(args),
     "train-mlp": lambda: _train_mlp(args),
     "eval-bilingual": lambda: _eval_bilingual(args),
     "translate": lambda: _translate(args),
     "backtranslate": lambda: _backtranslate(args),
     "pair-stats": lambda: _pair_stats(args),
     "tasks": lambda: _tasks(args)}[args.command]()
  except errors.USER_ERRORS as e:
    print(f"paraflax {args.command}: error: {e}", file=sys.stderr)
    return EXIT_BAD_INPUT
  return 0


if __name__ == "__main__":
  sys.exit(main())
