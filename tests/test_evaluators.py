"""Evaluators named by config.evals, on real data with stand-in models."""
import zlib

import numpy as np
import pytest

from paraflax import errors
from paraflax.data import corpora
from paraflax.evaluation import evaluators

DEV = {"type": "bleu", "task": "bitext_newstest_dev_de_en",
       "split": "newstest2013", "sentences": 50, "every": 100}


def _bag_of_words(texts, lang):
  del lang
  out = np.zeros((len(texts), 64), np.float32)
  for i, text in enumerate(texts):
    for word in text.lower().split():
      out[i, zlib.crc32(word.encode()) % 64] += 1
  return out


def _references():
  rows = corpora.read(corpora.get(DEV["task"]), DEV["split"])
  return dict(zip(rows["source"], rows["target"]))


def test_bleu_of_the_references_is_100():
  refs = _references()
  model = evaluators.Model(translate=lambda texts: [refs[t] for t in texts])
  report = evaluators.run({"dev": DEV}, model)["dev"]
  assert report.metrics == {"bleu": pytest.approx(100.0)}
  assert report.details["n"] == 50


def test_alignment_finds_the_translation_it_is_given():
  refs = _references()

  def embed(texts, lang):
    return _bag_of_words([refs[t] for t in texts] if lang == "de" else texts,
                         lang)

  evals = {"dev": dict(DEV, type="alignment", lang="de")}
  report = evaluators.run(evals, evaluators.Model(embed=embed))["dev"]
  assert report.metrics["align_accuracy"] > 95


def test_sts_logs_pearson_and_spearman_per_set():
  reports = evaluators.run(
      {"sts": {"type": "sts", "sets": ("STSb.dev-tuning",), "every": 40}},
      evaluators.Model(embed=_bag_of_words))
  assert set(evaluators.metrics(reports)) == {
      "sts/STSb.dev-tuning/pearson", "sts/STSb.dev-tuning/spearman"}
  assert 0.2 < reports["sts"].metrics["STSb.dev-tuning/pearson"] < 0.9


def test_due_by_every():
  evals = {"a": {"every": 10}, "b": {"every": 0}, "c": {"every": 4}}
  assert evaluators.due(evals, 20) == ["a", "c"]
  assert evaluators.due(evals, 6) == []


@pytest.mark.parametrize("evals, names, message", [
    ({"x": {"type": "rouge"}}, None, r"config\.evals\.x\.type='rouge'"),
    ({"x": {"type": "bleu", "beam": 4}}, None, r"takes no 'beam'"),
    ({"x": {"type": "bleu"}}, ["y"], r"no evaluator 'y'"),
    ({"x": {"type": "sts"}}, None, r"needs a model that can embed"),
])
def test_mistakes_are_config_errors(evals, names, message):
  with pytest.raises(errors.ConfigError, match=message):
    evaluators.run(evals, evaluators.Model(), names)
