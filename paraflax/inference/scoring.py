"""Sentence pairs scored with a bilingual workdir's two encoders: the work
behind `paraflax score-pairs`, `align-eval` and `train-mlp`.

Every similarity sees the non-English sentence as its source x and the
English one as its target y, whatever order the user's files are in: the
MLP similarity is not symmetric and was trained that way round. The MLP
lives in its own workdir inside the bilingual one (`MLP_WORKDIR`), trained
by `paraflax train-mlp` with configs/mlp_similarity.py.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Mapping, Sequence

import ml_collections
import numpy as np

from paraflax import choices
from paraflax import errors
from paraflax import files
from paraflax.data import readers
from paraflax.evaluation import alignment
from paraflax.evaluation import bilingual as bilingual_eval
from paraflax.evaluation import paracrawl
from paraflax.evaluation import text_baselines
from paraflax.inference import embedders
from paraflax.mining import similarity
from paraflax.recipes import mlp_similarity
from paraflax.recipes import config_check
from paraflax.recipes import workdir as workdir_lib

MLP_WORKDIR = "mlp_similarity"
MLP_REPORT = "mlp_similarity.json"
ENGLISH = "en"


def workdir_languages(workdir: str) -> tuple[str, str]:
  """(the other language, English) of a bilingual workdir, from its config."""
  from paraflax.recipes import bilingual  # pylint: disable=g-import-not-at-top
  langs = bilingual.languages(workdir_lib.load_config(workdir, "bilingual"))
  return tuple(sorted(langs, key=lambda lang: lang == ENGLISH))


def check_languages(workdir: str, src_lang: str, tgt_lang: str) -> str:
  """The non-English language of the pairs, once both languages are the
  workdir's two, one each (reads only the config)."""
  langs = (src_lang, tgt_lang)
  if src_lang == tgt_lang or ENGLISH not in langs:
    raise errors.ConfigError(
        f"--src-lang {src_lang} --tgt-lang {tgt_lang}: give the workdir's "
        "two languages, English and the other one, one on each side.")
  embedders.check(workdir, langs, "--src-lang / --tgt-lang")
  return src_lang if tgt_lang == ENGLISH else tgt_lang


def open_workdir(workdir: str, src_lang: str, tgt_lang: str
                 ) -> bilingual_eval.Encoders:
  """The encoders of `workdir`, once both languages are its two, one each."""
  other = check_languages(workdir, src_lang, tgt_lang)
  embed, step = embedders.load(workdir, [])
  return bilingual_eval.Encoders(workdir, embed, other, step)


def mlp_workdir(workdir: str) -> str:
  return os.path.join(workdir, MLP_WORKDIR)


def context(name: str, workdir: str, *, k: int = 10) -> dict:
  """What similarity `name` needs besides the embeddings."""
  if name == "csls":
    return {"k": k}
  if name != "mlp":
    return {}
  path = mlp_workdir(workdir)
  if not os.path.isdir(path):
    raise errors.DataError(
        f"{path}: no MLP similarity for this workdir yet. Train it with "
        f"`paraflax train-mlp --workdir {workdir}`, or pick another "
        "--similarity.")
  return {"model": mlp_similarity.load_for_inference(path)[0]}


def read_pairs(path: str) -> list[tuple[str, str]]:
  """`source<TAB>target` per line; anything else stops at its line."""
  rows, numbers = readers.read_tsv(path, fields=2)
  for (src, tgt), number in zip(rows, numbers):
    if not src.strip() or not tgt.strip():
      side = "source" if not src.strip() else "target"
      raise errors.DataError(
          f"{path}:{number}: empty {side} sentence. Every line needs "
          "source<TAB>target, both non-empty.")
  return rows


def _oriented(enc: bilingual_eval.Encoders, src_lang: str, src: Sequence[str],
              tgt: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
  """(non-English embeddings, English embeddings) of two aligned sides."""
  xx, en = (src, tgt) if src_lang == enc.lang else (tgt, src)
  return enc.embed(list(xx), enc.lang), enc.embed(list(en), ENGLISH)


def score_pairs(enc: bilingual_eval.Encoders, pairs: Sequence[tuple[str, str]],
                src_lang: str, name: str, ctx: Mapping) -> np.ndarray:
  """[N] float32, higher = more likely a translation, in input order."""
  x, y = _oriented(enc, src_lang, [p[0] for p in pairs],
                   [p[1] for p in pairs])
  return similarity.score(name, x, y, **ctx)


def write_scores(path: str, scores: np.ndarray, *, overwrite: bool = False
                 ) -> None:
  # 9 significant digits give back the float32 exactly, so no ties appear.
  files.write_once(path, "".join(f"{s:.9g}\n" for s in scores),
                   overwrite=overwrite)


def align_errors(enc: bilingual_eval.Encoders, src: Sequence[str],
                 tgt: Sequence[str],
                 src_lang: str, similarities: Mapping[str, Mapping], *,
                 seed: int = 0, name: str = "") -> list[dict]:
  """Alignment recovery error rows (`alignment.format_table`), xx <-> en."""
  x, y = _oriented(enc, src_lang, src, tgt)
  return [{"set": name, "lang": enc.lang, "n": len(x), "similarity": sim,
           **alignment.recovery_errors(x, y, sim, seed=seed, **ctx)}
          for sim, ctx in similarities.items()]


def train_mlp(enc: bilingual_eval.Encoders,
              config: ml_collections.ConfigDict) -> dict:
  """Trains the workdir's MLP similarity afresh (`mlp_similarity.
  train_for_language`: positives from newstest_train_pool, negatives from
  ParaCrawl v3 text or random) and writes a JSON report of the config and
  evaluations beside it. A run replaces the previous one only once it is
  complete; the embeddings are recomputed anyway, so nothing resumes.
  `config`: one `config_check.check` passed."""
  final = mlp_workdir(enc.workdir)
  partial = final + ".partial"
  shutil.rmtree(partial, ignore_errors=True)  # a killed run's leftovers
  evals = mlp_similarity.train_for_language(enc.embed, enc.lang, config,
                                            partial)
  shutil.rmtree(final, ignore_errors=True)
  os.rename(partial, final)
  _, step = mlp_similarity.load_for_inference(final)
  report = {"lang": enc.lang, "checkpoint_step": enc.step,
            "config": workdir_lib.load_config(final, mlp_similarity.RECIPE)
            .to_dict(), "selected_step": step, "evals": evals}
  files.write_text_atomic(os.path.join(enc.workdir, MLP_REPORT),
                          json.dumps(report, indent=2) + "\n")
  return report


# --- Commands ---------------------------------------------------------------


def score_file(workdir: str, input: str, output: str, src_lang: str,
               tgt_lang: str, similarity: str = "cosine", k: int = 10,
               overwrite: bool = False) -> None:
  """`paraflax score-pairs`: one float per `source<TAB>target` line."""
  files.check_output(output)
  pairs = read_pairs(input)
  if not pairs:
    raise errors.DataError(
        f"{input}: empty file, nothing to score. Give one "
        "source<TAB>target pair per line.")
  enc = open_workdir(workdir, src_lang, tgt_lang)
  scores = score_pairs(enc, pairs, src_lang, similarity,
                       context(similarity, workdir, k=k))
  write_scores(output, scores, overwrite=overwrite)
  print(f"scored {len(scores)} pairs by {similarity} into {output} "
        f"(checkpoint step {enc.step})", file=sys.stderr)


def baseline_rows(src: Sequence[str], tgt: Sequence[str], lang: str,
                  baselines: Sequence[str], *, name: str, seed: int = 0,
                  nmt_workdir: str | None = None) -> list[dict]:
  """Alignment recovery rows of Kim et al.'s baselines without embeddings
  (`text_baselines.BASELINES`): Levenshtein distance, NMT posterior."""
  rows = []
  for baseline in dict.fromkeys(baselines):
    if baseline == "levenshtein":
      scores = -text_baselines.levenshtein_matrix(src, tgt)
    elif baseline == "nmt_posterior":
      if not nmt_workdir:
        raise errors.ConfigError(
            "--baseline nmt_posterior scores with an X->English NMT: name "
            "its workdir with --nmt-workdir.")
      from paraflax.inference import nmt_posterior  # pylint: disable=g-import-not-at-top
      scores = nmt_posterior.posterior_matrix(nmt_workdir, src, tgt)
    else:
      raise errors.ConfigError(f"unknown baseline {baseline!r}; use one of "
                               f"{text_baselines.BASELINES}.")
    rows.append({"set": name, "lang": lang, "n": len(src),
                 "similarity": baseline,
                 **text_baselines.recovery_errors(scores, seed=seed)})
  return rows


def align_eval(workdir: str, src: str, tgt: str, src_lang: str,
               tgt_lang: str, similarity: Sequence[str] | None = None,
               k: int = 10, seed: int = 0, output: str | None = None,
               overwrite: bool = False, baseline: Sequence[str] = (),
               nmt_workdir: str | None = None) -> None:
  """`paraflax align-eval`: alignment recovery errors of two files."""
  if output:
    files.check_output(output)
  rows, _ = readers.read_parallel([src, tgt])
  enc = open_workdir(workdir, src_lang, tgt_lang)
  names = similarity or [s for s in choices.SIMILARITIES
                         if s != "mlp" or os.path.isdir(mlp_workdir(workdir))]
  sims = {name: context(name, workdir, k=k) for name in dict.fromkeys(names)}
  table = align_errors(enc, [r[0] for r in rows], [r[1] for r in rows],
                       src_lang, sims, seed=seed, name=os.path.basename(src))
  table += baseline_rows([r[0] for r in rows], [r[1] for r in rows],
                         src_lang, baseline or (), name=os.path.basename(src),
                         seed=seed, nmt_workdir=nmt_workdir)
  print(f"alignment recovery error % of {len(rows)} pairs, checkpoint step "
        f"{enc.step} of {workdir}")
  print(alignment.format_table(table))
  if "mlp" not in sims:
    print("(no mlp: run `paraflax train-mlp` on the workdir to add it)",
          file=sys.stderr)
  if output:
    files.write_once(output, json.dumps(table, indent=2) + "\n",
                     overwrite=overwrite)


def _open_both(workdir: str) -> bilingual_eval.Encoders:
  return open_workdir(workdir, *workdir_languages(workdir))


def train_mlp_for_workdir(workdir: str,
                          config: ml_collections.ConfigDict | None = None
                          ) -> dict:
  """`paraflax train-mlp`: the workdir's MLP similarity, trained and saved;
  `config` as configs/mlp_similarity.py makes it (None: that file)."""
  config = config or mlp_similarity.default_config()
  config_check.check(config, family=mlp_similarity)  # before the model loads
  report = train_mlp(_open_both(workdir), config)
  for values in report["evals"]:
    print(", ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}"
                    for k, v in values.items() if k != mlp_similarity.SELECT))
  print(f"wrote {mlp_workdir(workdir)} (step {report['selected_step']} "
        "selected)", file=sys.stderr)
  return report


def refuse_seen_data(workdir: str, tests: Sequence[tuple[str, str]]
                     ) -> None:
  """Stops when a test set ((flag, spec) pairs) reads a file of the
  workdir's training data or of its dev set: its figures would be those
  of pairs the model was trained on, or of the set that picked its
  checkpoint."""
  if not tests:
    return  # nothing to compare: the training files need not be there
  from paraflax.data import specs  # pylint: disable=g-import-not-at-top
  saved = workdir_lib.read_config(workdir)
  train = [(f"data.train of {workdir}", spec)
           for spec in specs.train_specs(saved.data)]
  specs.refuse_shared_files(
      [*train, *tests], "Give a test set kept out of the workdir's training "
      "data (docs/your-data.md).")
  specs.refuse_shared_files(
      [(f"data.dev of {workdir}", saved.data.get("dev", "")), *tests],
      "The dev set picked the workdir's checkpoint: give a test set apart "
      "from it (docs/your-data.md).")


def check_data_languages(workdir: str, data: Sequence[str], flag: str
                         ) -> None:
  """Each bitext spec of `data` is of the bilingual workdir's pair (a
  catalogued one by its name, a tsv: one by its English column)."""
  from paraflax.data import english_side  # pylint: disable=g-import-not-at-top
  from paraflax.data import specs  # pylint: disable=g-import-not-at-top
  lang, _ = workdir_languages(workdir)
  for spec in data:
    pair = specs.parse_bitext(spec, flag).corpus.pair
    if pair and pair != (lang, ENGLISH):
      raise errors.ConfigError(
          f"{flag} {spec} is {'-'.join(pair)} bitext, but {workdir} embeds "
          f"{lang}-{ENGLISH}: give {lang}-{ENGLISH} bitext.")
    english_side.check(spec, flag)


def eval_bilingual(workdir: str, k: int = 10, seed: int = 0,
                   data: Sequence[str] = (), baseline: Sequence[str] = (),
                   nmt_workdir: str | None = None) -> dict:
  """`paraflax eval-bilingual`: alignment and ParaCrawl tables, and plots;
  trains the MLP similarity first if the workdir has none. `data`: more
  alignment test sets (data specs of the user's bitext); `baseline`: Kim
  et al.'s baselines on every alignment set besides."""
  check_data_languages(workdir, data or (), "--data")
  refuse_seen_data(workdir, [("--data", spec) for spec in data or ()])
  enc = _open_both(workdir)
  names = list(choices.SIMILARITIES)
  if os.path.isdir(mlp_workdir(workdir)):
    pass  # trained before
  elif enc.lang in paracrawl.LANGS:
    print("training the MLP similarity first (paraflax train-mlp defaults)",
          file=sys.stderr)
    config = mlp_similarity.default_config()
    config_check.check(config, family=mlp_similarity)
    train_mlp(enc, config)
  else:
    names.remove("mlp")
    print(f"no MLP similarity: {enc.lang}-en has no bundled bitext to train "
          f"it on; paraflax train-mlp --workdir {workdir} "
          "--config.positives=SPEC --config.noisy=SPEC adds it",
          file=sys.stderr)
  sims = {name: context(name, workdir, k=k) for name in names}
  report = bilingual_eval.evaluate(
      enc, sims, seed=seed, data=data or (),
      dev=workdir_lib.read_config(workdir).data.get("dev", ""))
  for name in dict.fromkeys(r["set"] for r in list(report["alignment"])):
    src, tgt = alignment.load(name, enc.lang)
    report["alignment"] += baseline_rows(src, tgt, enc.lang, baseline or (),
                                         name=name, seed=seed,
                                         nmt_workdir=nmt_workdir)
  print(bilingual_eval.format_report(report))
  print(f"wrote {bilingual_eval.write(report)}", file=sys.stderr)
  return report
