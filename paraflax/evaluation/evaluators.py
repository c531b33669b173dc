"""Evaluators a config names, as big_vision's `evaluators/common.py`.

    config.evals.<name> = {"type": <a key of EVALUATORS>,
                           "in_training": True | False,  # default True
                           ...settings of that type}

Each evaluator takes a `Model` (what a trained model can do, its parameters
bound) and its settings and returns a `Report`. Its metrics are logged as
`<name>/<metric>` (`config.select` names the one that picks the best
checkpoint). The train loop runs those `in_training` at every evaluation
(`config.eval_every`); `paraflax eval` runs them all, or those named.
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from paraflax import errors
from paraflax.data import specs
from paraflax.decoding.translator import Translations  # (texts, ended)
from paraflax.evaluation import alignment as alignment_lib
from paraflax.evaluation import paracrawl as paracrawl_lib
from paraflax.evaluation import sts as sts_lib
from paraflax.mining import similarity

ENGLISH = "en"


@dataclasses.dataclass(frozen=True)
class Model:
  """What a trained model offers to evaluators; None where it cannot."""
  # (texts, language) -> [N, d] embeddings.
  embed: Callable[[Sequence[str], str], np.ndarray] | None = None
  # (texts, beam) -> 1-best translations (the config's length penalty).
  translate: Callable[[Sequence[str], int], Translations] | None = None
  # texts -> [N] probability of class 1 (a sentence classifier).
  classify: Callable[[Sequence[str]], np.ndarray] | None = None
  # split name -> (texts, [N] labels 0 / 1) of the model's own data, for a
  # classifier whose config holds its data (e.g. a split by id of a file).
  labelled: Callable[[str], tuple[Sequence[str], np.ndarray]] | None = None


class Report(NamedTuple):
  metrics: dict[str, float]  # logged as <evaluator name>/<key>
  table: str  # for people
  details: dict[str, Any]  # for JSON


def _needs(model: Model, what: str, kind: str) -> Callable:
  found = getattr(model, what)
  if found is None:
    raise errors.ConfigError(f"evaluator type {kind!r} needs a model that "
                             f"can {what}; this one cannot. Remove it from "
                             "config.evals.")
  return found


@functools.cache
def _pairs(data: str) -> tuple[tuple[str, str], ...]:
  return tuple(specs.pairs(data))


def _first(data: str, sentences: int) -> tuple[tuple[str, str], ...]:
  pairs = _pairs(data)
  return pairs[:sentences] if sentences > 0 else pairs


def sts(model: Model, *, sets: Sequence[str] = sts_lib.DEFAULT_SETS
        ) -> Report:
  """Pearson / Spearman of cosine similarities on STS sets (`sts_lib`)."""
  embed = _needs(model, "embed", "sts")
  result = sts_lib.evaluate(lambda texts: embed(texts, ENGLISH), sets)
  metrics = {f"{name}/{metric}": value
             for name, row in result["datasets"].items()
             for metric, value in row.items() if metric != "n"}
  return Report(metrics, sts_lib.format_table(result), result)


def bleu(model: Model, *, data: str, sentences: int = 0,
         beam: int = 4) -> Report:
  """Corpus BLEU (sacrebleu, 13a) of the 1-best translations (beam search
  of width `beam`) of the first `sentences` pairs of bitext `data` (a data
  spec; "": the config's data.dev) (0: all),
  the hypothesis / reference length ratio, and the % of translations the
  search cut at its output limit (a model that loops shows there first).
  """
  import sacrebleu  # pylint: disable=g-import-not-at-top
  translate = _needs(model, "translate", "bleu")
  pairs = _first(data, sentences)
  out = translate([s for s, _ in pairs], beam)
  score = sacrebleu.corpus_bleu(out.texts, [[t for _, t in pairs]])
  found = {"bleu": score.score,
           "length_ratio": score.sys_len / max(score.ref_len, 1),
           "hit_max_output": 100.0 * out.ended.count(False) / max(len(pairs),
                                                                 1)}
  return Report(found,
                f"BLEU {score.score:.2f} on {len(pairs)} pairs of "
                f"{data} ({score}); length ratio "
                f"{found['length_ratio']:.3f}, {found['hit_max_output']:.1f} % "
                "cut at the output limit without ending",
                {**found, "signature": str(score), "n": len(pairs)})


def alignment(model: Model, *, data: str, lang: str,
              sentences: int = 0) -> Report:
  """% of the first `sentences` sources of bitext `data` (a data spec, in
  `lang`; "": the config's data.dev) whose nearest English sentence by
  cosine is their own translation."""
  embed = _needs(model, "embed", "alignment")
  pairs = _first(data, sentences)
  x = embed([s for s, _ in pairs], lang)
  y = embed([t for _, t in pairs], ENGLISH)
  src2tgt, _ = similarity.nearest("cosine", x, y)
  accuracy = 100.0 * float(np.mean(src2tgt == np.arange(len(pairs))))
  return Report({"align_accuracy": accuracy},
                f"alignment accuracy {accuracy:.2f} % on {len(pairs)} pairs "
                f"of {data}", {"align_accuracy": accuracy,
                                       "n": len(pairs)})


UNTRAINED_SIMILARITIES = ("cosine", "euclidean", "csls")


def _contexts(names: Sequence[str], k: int) -> dict[str, dict]:
  return {name: {"k": k} if name == "csls" else {} for name in names}


def alignment_recovery(model: Model, *, lang: str,
                       sets: Sequence[str] | None = None,
                       similarities: Sequence[str] = UNTRAINED_SIMILARITIES,
                       k: int = 10, seed: int = 0, dev: str = ""
                       ) -> Report:
  """Alignment recovery error (%) on the parallel test sets of `lang`-en
  (default: all but the dev set `dev`, the config's data.dev;
  `alignment.TEST_SETS`), both ways, by each similarity."""
  embed = _needs(model, "embed", "alignment_recovery")
  sets, left_out = alignment_lib.test_sets(lang, dev, sets)
  rows = alignment_lib.evaluate(embed, lang, _contexts(similarities, k),
                                sets, seed=seed)
  return Report({f"{r['set']}/{r['similarity']}/error": r["mean"]
                 for r in rows},
                "\n".join([alignment_lib.format_table(rows),
                           *alignment_lib.left_out_lines(left_out, dev)]),
                {"rows": rows, "left_out": left_out})


def paracrawl(model: Model, *, lang: str,
              releases: Sequence[str] = paracrawl_lib.RELEASES,
              similarities: Sequence[str] = UNTRAINED_SIMILARITIES,
              k: int = 10) -> Report:
  """ParaCrawl pairs scored by each similarity against the human labels:
  ROC-AUC and precision at the top 25 %, beside the bundled filters."""
  embed = _needs(model, "embed", "paracrawl")
  rows = paracrawl_lib.evaluate_all(embed, _contexts(similarities, k),
                                    releases=releases, langs=(lang,))
  return Report({f"{r['release']}/{r['scorer']}/{key}": r[key]
                 for r in rows for key in ("auc", "precision")},
                paracrawl_lib.format_table(rows), {"rows": rows})


def accuracy(model: Model, *, split: str) -> Report:
  """% of the labelled sentences of `split` of the model's data whose
  label the classifier gets right (class 1 where its probability > 0.5)."""
  classify = _needs(model, "classify", "accuracy")
  texts, labels = _needs(model, "labelled", "accuracy")(split)
  labels = np.asarray(labels)
  right = (np.asarray(classify(texts)) > 0.5) == (labels == 1)
  found = {"accuracy": 100.0 * float(np.mean(right)) if len(right) else 0.0}
  return Report(found, f"accuracy {found['accuracy']:.2f} % on "
                f"{len(labels)} sentences of {split} ({int(labels.sum())} of "
                "class 1)", {**found, "n": len(labels),
                            "positives": int(labels.sum())})


EVALUATORS: dict[str, Callable[..., Report]] = {
    "sts": sts, "bleu": bleu, "alignment": alignment,
    "alignment_recovery": alignment_recovery, "paracrawl": paracrawl,
    "accuracy": accuracy}


def in_training(evals: Mapping[str, Mapping]) -> list[str]:
  """The evaluators the train loop runs."""
  return [name for name, e in evals.items() if e.get("in_training", True)]


def run_in_training(evals: Mapping[str, Mapping], model: Model, *,
                    dev: str = "") -> dict[str, float]:
  """The metrics of the evaluators the train loop runs, as it logs them."""
  return metrics(run(evals, model, in_training(evals), dev=dev))


def settings_of(evals: Mapping[str, Mapping], dev: str = ""
                ) -> dict[str, tuple[Callable[..., Report], dict]]:
  """Each evaluator's function and settings, checked: its type and keys
  exist, and the data it reads (`data`, "" meaning `dev`, the config's
  data.dev) is a data spec that names files. A train loop checks them
  before its first step, so a mistake costs no training."""
  out = {}
  for name, given in evals.items():
    settings = dict(given)
    kind = settings.pop("type", None)
    settings.pop("in_training", None)
    if kind not in EVALUATORS:
      raise errors.ConfigError(
          f"config.evals.{name}.type={kind!r}; use one of "
          f"{', '.join(sorted(EVALUATORS))}.")
    takes = inspect.signature(EVALUATORS[kind]).parameters
    unknown = sorted(set(settings) - set(takes))
    if unknown:
      raise errors.ConfigError(
          f"config.evals.{name}: {kind!r} takes no {unknown[0]!r}; it takes "
          f"{', '.join(k for k in takes if k != 'model')} (and in_training).")
    if "data" in takes:
      settings["data"] = settings.get("data") or dev
      if not settings["data"]:
        raise errors.ConfigError(
            f"config.evals.{name} reads dev pairs, and neither it nor the "
            "config names them: set --config.data.dev=SPEC "
            "(docs/your-data.md), or config.evals."
            f"{name}.data.")
      specs.parse(settings["data"])  # the files are there
    if "dev" in takes:  # the set that picks the checkpoint, left untested
      settings.setdefault("dev", dev)
    out[name] = (EVALUATORS[kind], settings)
  return out


def run(evals: Mapping[str, Mapping], model: Model,
        names: Sequence[str] | None = None, *, dev: str = ""
        ) -> dict[str, Report]:
  """Runs the evaluators `names` (default: all) of `config.evals`; `dev` is
  the config's data.dev, what evaluators without their own `data` read."""
  names = list(evals) if names is None else names
  unknown = [n for n in names if n not in evals]
  if unknown:
    raise errors.ConfigError(f"no evaluator {unknown[0]!r} in config.evals; "
                             f"it has {', '.join(evals) or 'none'}.")
  checked = settings_of({n: evals[n] for n in names}, dev)
  return {name: function(model, **settings)
          for name, (function, settings) in checked.items()}


def metrics(reports: Mapping[str, Report]) -> dict[str, float]:
  """`<evaluator>/<metric>` of every report, as the train loop logs them."""
  return {f"{name}/{key}": value for name, report in reports.items()
          for key, value in report.metrics.items()}
