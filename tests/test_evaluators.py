"""Evaluators named by config.evals, on real data with stand-in models."""
import zlib

import numpy as np
import pytest

from paraflax import errors
from paraflax.data import corpora
from paraflax.evaluation import evaluators

DEV = {"type": "bleu", "data": "bitext_newstest_dev_de_en:newstest2013",
       "sentences": 50, "beam": 3}


def _bag_of_words(texts, lang):
  del lang
  out = np.zeros((len(texts), 64), np.float32)
  for i, text in enumerate(texts):
    for word in text.lower().split():
      out[i, zlib.crc32(word.encode()) % 64] += 1
  return out


def _references():
  rows = corpora.read(corpora.get("bitext_newstest_dev_de_en"),
                      "newstest2013")
  return dict(zip(rows["source"], rows["target"]))


def test_bleu_of_the_references_is_100():
  refs = _references()
  model = evaluators.Model(translate=lambda texts, beam: evaluators.Translations(
      [refs[t] for t in texts], [i != 7 for i in range(len(texts))]))
  report = evaluators.run({"dev": DEV}, model)["dev"]
  assert report.metrics == {"bleu": pytest.approx(100.0),
                            "length_ratio": pytest.approx(1.0),
                            "hit_max_output": pytest.approx(2.0)}  # 1 of 50
  assert report.details["n"] == 50
  assert "2.0 % cut at the output limit" in report.table


def test_bleu_reports_the_length_ratio():
  refs = _references()
  model = evaluators.Model(translate=lambda texts, beam: evaluators.Translations(
      [f"{refs[t]} {refs[t]}" for t in texts], [True] * len(texts)))
  report = evaluators.run({"dev": DEV}, model)["dev"]
  assert report.metrics["length_ratio"] == pytest.approx(2.0, abs=0.01)
  assert report.metrics["hit_max_output"] == 0.0


def test_alignment_finds_the_translation_it_is_given():
  refs = _references()

  def embed(texts, lang):
    return _bag_of_words([refs[t] for t in texts] if lang == "de" else texts,
                         lang)

  evals = {"dev": dict(DEV, type="alignment", lang="de")}
  del evals["dev"]["beam"]
  report = evaluators.run(evals, evaluators.Model(embed=embed))["dev"]
  assert report.metrics["align_accuracy"] > 95


def test_sts_logs_pearson_and_spearman_per_set():
  reports = evaluators.run(
      {"sts": {"type": "sts", "sets": ("STSb.dev-tuning",)}},
      evaluators.Model(embed=_bag_of_words))
  assert set(evaluators.metrics(reports)) == {
      "sts/STSb.dev-tuning/pearson", "sts/STSb.dev-tuning/spearman"}
  assert 0.2 < reports["sts"].metrics["STSb.dev-tuning/pearson"] < 0.9


def test_in_training_by_default():
  evals = {"a": {}, "b": {"in_training": False}, "c": {"in_training": True}}
  assert evaluators.in_training(evals) == ["a", "c"]


@pytest.mark.parametrize("evals, names, message", [
    ({"x": {"type": "rouge"}}, None, r"config\.evals\.x\.type='rouge'"),
    ({"x": {"type": "bleu", "lang": "de"}}, None, r"takes no 'lang'"),
    ({"x": {"type": "bleu"}}, ["y"], r"no evaluator 'y'"),
    ({"x": {"type": "sts"}}, None, r"needs a model that can embed"),
])
def test_mistakes_are_config_errors(evals, names, message):
  with pytest.raises(errors.ConfigError, match=message):
    evaluators.run(evals, evaluators.Model(), names)


def test_the_bilingual_tables_as_evaluators():
  evals = {"tests": {"type": "alignment_recovery", "lang": "de",
                     "sets": ("multi30k_test_2016_flickr",),
                     "similarities": ("cosine", "csls")},
           "paracrawl": {"type": "paracrawl", "lang": "de",
                         "releases": ("v6",), "similarities": ("cosine",)}}
  reports = evaluators.run(evals, evaluators.Model(embed=_bag_of_words))
  metrics = evaluators.metrics(reports)
  assert set(metrics) >= {
      "tests/multi30k_test_2016_flickr/cosine/error",
      "tests/multi30k_test_2016_flickr/csls/error",
      "paracrawl/v6/cosine/auc", "paracrawl/v6/bicleaner/precision"}
  # German bags of words rarely meet their English translation's words.
  assert 50 < metrics["tests/multi30k_test_2016_flickr/cosine/error"] <= 100
  assert "multi30k_test_2016_flickr" in reports["tests"].table


def test_evaluators_follow_data_dev_unless_they_name_their_own(tmp_path):
  from paraflax import config as config_lib  # pylint: disable=g-import-not-at-top
  from tests.conftest import ROOT  # pylint: disable=g-import-not-at-top
  dev = tmp_path / "dev.tsv"
  dev.write_text("Ein Mann.\tA man.\n")
  config = config_lib.load(f"{ROOT}/configs/nmt.py:de",
                           [f"--config.data.dev=tsv:{dev}"])
  checked = evaluators.settings_of(config.evals, config.data.dev)
  assert checked["dev"][1]["data"] == checked["dev_all"][1]["data"] == \
      f"tsv:{dev}"
  config = config_lib.load(f"{ROOT}/configs/nmt.py:de",
                           ["--config.evals.dev.data=tsv:/nowhere/*.tsv"])
  with pytest.raises(errors.DataError, match=r"/nowhere/\*\.tsv matches no"):
    evaluators.settings_of(config.evals, config.data.dev)
