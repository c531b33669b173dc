"""Alignment recovery and ParaCrawl filtering evaluation: metrics on
hand-computed cases, the readers and loaders on the real files."""
import re
import zlib

import numpy as np
import pytest

from paraflax import errors
from paraflax.evaluation import alignment
from paraflax.evaluation import paracrawl
from paraflax.recipes import mlp_similarity

SIMILARITIES = ("cosine", "euclidean", "csls")


def _trigrams(texts, lang, dim=256):
  """A real (if weak) encoder: hashed character trigram counts."""
  del lang
  out = np.zeros((len(texts), dim), np.float32)
  for i, text in enumerate(texts):
    text = f"  {text.lower()} "
    for j in range(len(text) - 2):
      out[i, zlib.crc32(text[j:j + 3].encode()) % dim] += 1
  return out


# --- Alignment recovery ----------------------------------------------------


@pytest.mark.parametrize("name", SIMILARITIES)
def test_identical_embeddings_are_recovered(name):
  x = np.random.default_rng(0).normal(size=(50, 16)).astype(np.float32)
  ctx = {"k": 3} if name == "csls" else {}
  assert alignment.recovery_errors(x, x, name, **ctx) == {
      "src2tgt": 0.0, "tgt2src": 0.0, "mean": 0.0}


def test_a_rotated_triple_gives_three_errors_each_way():
  x = np.random.default_rng(1).normal(size=(20, 16)).astype(np.float32)
  y = x.copy()
  y[[0, 1, 2]] = x[[1, 2, 0]]  # each of the three meets another's partner
  results = [alignment.recovery_errors(x, y, "cosine", seed=s)
             for s in range(3)]
  # 3 of 20 sentences in each direction; the shuffle changes nothing.
  assert results == [{"src2tgt": 15.0, "tgt2src": 15.0, "mean": 15.0}] * 3


def test_directions_are_counted_apart():
  x = np.eye(4, dtype=np.float32)
  y = x.copy()
  y[1] = x[0] + 0.5 * x[1]  # nearer x_0 than x_1, but still x_1's nearest
  assert alignment.recovery_errors(x, y, "cosine") == {
      "src2tgt": 0.0, "tgt2src": 25.0, "mean": 12.5}


def test_recovery_needs_parallel_rows():
  with pytest.raises(errors.DataError, match="one of each"):
    alignment.recovery_errors(np.ones((3, 2)), np.ones((4, 2)), "cosine")


def test_test_sets_are_line_aligned():
  assert alignment.available_sets("cs") == [
      "newstest2012", "multi30k_test_2016_flickr",
      "multi30k_test_2018_flickr"]
  sizes = {"newstest2012": 3003, "multi30k_test_2016_flickr": 1000,
           "multi30k_test_2017_flickr": 1000,
           "multi30k_test_2017_mscoco": 461,
           "multi30k_test_2018_flickr": 1071}
  english = {}
  for lang in alignment.LANGS:
    for name in alignment.available_sets(lang):
      src, tgt = alignment.load(name, lang)
      assert len(src) == len(tgt) == sizes[name]
      # Multi-way parallel: every language has the same English line i.
      assert english.setdefault(name, tgt) == tgt
  src, tgt = alignment.load("newstest2012", "de")
  assert src[0].startswith("Keine befreiende Novelle für Tymoshenko")
  assert tgt[0].startswith("Parliament Does Not Support Amendment")
  src, tgt = alignment.load("multi30k_test_2016_flickr", "fr")
  assert src[0].startswith("Un homme avec un chapeau orange")
  assert tgt[0].startswith("A man in an orange hat")
  with pytest.raises(errors.ConfigError, match="no cs side"):
    alignment.load("multi30k_test_2017_mscoco", "cs")
  with pytest.raises(errors.ConfigError, match="unknown alignment"):
    alignment.load("newstest2099", "de")


def test_evaluate_on_real_text():
  src, tgt = alignment.load("multi30k_test_2017_mscoco", "de")
  index = {t: i for i, t in enumerate(src + tgt)}

  def oracle(texts, lang):  # one-hot of the line number: a perfect encoder
    del lang
    return np.eye(len(src), dtype=np.float32)[[index[t] % len(src)
                                                for t in texts]]

  sets = ["multi30k_test_2017_mscoco"]
  ctx = {"cosine": {}, "euclidean": {}, "csls": {"k": 4}}
  rows = alignment.evaluate(oracle, "de", ctx, sets)
  assert [r["mean"] for r in rows] == [0.0, 0.0, 0.0]
  rows = alignment.evaluate(_trigrams, "de", ctx, sets)
  assert [(r["set"], r["n"], r["similarity"]) for r in rows] == [
      ("multi30k_test_2017_mscoco", 461, s) for s in SIMILARITIES]
  assert all(0 < r["mean"] < 100 for r in rows)
  table = alignment.format_table(rows)
  assert len(table.splitlines()) == 4 and "csls" in table


# --- Metrics ---------------------------------------------------------------


def test_auc_counts_ties_as_half():
  scores = [0.1, 0.4, 0.4, 0.8, 0.4]
  positive = [False, True, False, True, False]
  # Positive 0.4 beats 0.1, ties 0.4 twice: 2; positive 0.8 beats all: 3.
  assert paracrawl.roc_auc(scores, positive) == pytest.approx(5 / 6)
  rng = np.random.default_rng(0)
  scores = rng.integers(0, 5, size=200).astype(float)
  positive = rng.random(200) < 0.4
  pos, neg = scores[positive], scores[~positive]
  wins = (pos[:, None] > neg[None]).sum() + 0.5 * (pos[:, None]
                                                   == neg[None]).sum()
  assert paracrawl.roc_auc(scores, positive) == pytest.approx(
      wins / (len(pos) * len(neg)))
  assert np.isnan(paracrawl.roc_auc([1.0, 2.0], [True, True]))


def test_precision_at_top_quarter():
  scores = [5, 4, 3, 3, 3, 1, 0, 0]
  assert paracrawl.precision_at(scores, [1, 0, 1, 1, 1, 1, 1, 1]) == 0.5
  # Top 2 = the 5 and one of three tied 3s (one of them valid): expected
  # (1 + 1/3) / 2.
  assert paracrawl.precision_at([5, 3, 3, 3, 1, 1, 1, 1],
                                [1, 1, 0, 0, 0, 0, 0, 0]) == pytest.approx(
                                    2 / 3)
  # ceil(0.25 * 10) = 3 pairs kept.
  assert paracrawl.precision_at(np.arange(10), np.arange(10) >= 8) == 2 / 3
  result = paracrawl.evaluate([0.9, 0.2, 0.5, 0.1], ["V", "A", "MT", "V"])
  assert result == {"auc": 0.5, "precision": 1.0, "n": 4, "valid": 2}


def test_histograms_split_valid_and_rest():
  scores = {"cosine": np.linspace(0, 1, 11), "mlp": np.arange(11.0)}
  valid = np.arange(11) < 4
  counts = paracrawl.histograms(scores, valid, bins=5)
  for name, h in counts.items():
    assert len(h["edges"]) == 6
    assert h["valid"].sum() == 4 and h["rest"].sum() == 7
    assert h["edges"][0] == scores[name][0]


def test_plot_writes_a_png(tmp_path):
  pytest.importorskip("matplotlib")
  path = tmp_path / "scores.png"
  paracrawl.plot_distributions(path, {"cosine": np.linspace(0, 1, 11)},
                               np.arange(11) < 4)
  assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# --- ParaCrawl files -------------------------------------------------------


@pytest.mark.parametrize("release,rows,names", [
    ("v3", 2000, ["hunalign", "zipporah", "bicleaner"]),
    ("v6", 1000, ["bicleaner"])])
@pytest.mark.parametrize("lang", paracrawl.LANGS)
def test_real_files(release, rows, names, lang):
  sample = paracrawl.load(release, lang)
  assert len(sample.source) == len(sample.target) == len(sample.labels) == rows
  assert sample.lines == list(range(1, rows + 1))
  assert set(sample.labels) <= set(paracrawl.LABELS)
  assert 0 < sample.valid.sum() < rows
  result = paracrawl.baselines(sample)
  assert list(result) == names
  for metrics in result.values():
    assert 0 < metrics["auc"] < 1 and 0 < metrics["precision"] <= 1


def test_real_file_columns_and_counts():
  sample = paracrawl.load("v3", "de")
  counts = {l: sample.labels.count(l) for l in set(sample.labels)}
  assert counts == {"V": 1048, "MT": 343, "E": 257, "A": 253, "L": 45,
                    "F": 43, "T": 11}
  assert sample.target[3] == "No one has any bad thoughts."  # English
  assert sample.source[3] == "Keiner wird an Schlechtes denken."
  assert sample.baselines["hunalign"][3] == 0.653571
  assert sample.baselines["bicleaner"][3] == 0.5005628221734384
  # Pinned baseline AUCs (V vs rest), computed by paracrawl.baselines.
  auc = {k: round(v["auc"], 4) for k, v in
         paracrawl.baselines(sample).items()}
  assert auc == {"hunalign": 0.5265, "zipporah": 0.5901, "bicleaner": 0.5473}
  sample = paracrawl.load("v6", "de")
  assert sample.labels.count("V") == 596 and sample.labels.count("L") == 2
  assert (sample.source[0], sample.target[0]) == (
      "Endstücke austauschbar", "Exchangeable end sections")
  assert round(paracrawl.baselines(sample)["bicleaner"]["auc"], 4) == 0.6386


_V3_ROW = ("u1\tu2\tHello.\tHallo.\t0.5\t1.2\t0.7\tV\t\n")


@pytest.mark.parametrize("line,message", [
    ("u1\tu2\tHello.\tHallo.\t0.5\t1.2\t0.7\n", "expected 9"),
    ("u1\tu2\tHello.\tHallo.\t0.5\t1.2\t0.7\tOK\t\n", "label 'OK'"),
    ("u1\tu2\tHello.\tHallo.\t0.5\tn/a\t0.7\tV\t\n", "zipporah score"),
    ("u1\tu2\tHello.\tHallo.\t0.5\tnan\t0.7\tV\t\n", "zipporah score"),
])
def test_malformed_rows_name_file_and_line(tmp_path, line, message):
  path = tmp_path / "v3.sorted.en-de"
  path.write_text(_V3_ROW + line, encoding="utf-8")
  where = re.escape(f"{path}:2: {message}")
  with pytest.raises(errors.DataError, match=where):
    paracrawl.read(path, "v3")


def test_a_v6_file_read_as_v3_fails_on_line_1(tmp_path):
  path = tmp_path / "v6.sorted.en-de"
  path.write_text("u1\tu2\tHello.\tHallo.\t0.5\tV\t\t3\n", encoding="utf-8")
  assert paracrawl.read(path, "v6").labels == ["V"]
  where = re.escape(f"{path}:1: expected 9")
  with pytest.raises(errors.DataError, match=where):
    paracrawl.read(path, "v3")
  with pytest.raises(errors.ConfigError, match="unknown ParaCrawl"):
    paracrawl.read(path, "v5")


def test_evaluate_all_and_table():
  rows = paracrawl.evaluate_all(_trigrams, {"cosine": {}, "csls": {"k": 5}},
                                releases=["v6"], langs=["de"])
  assert [(r["scorer"], r["kind"]) for r in rows] == [
      ("cosine", "similarity"), ("csls", "similarity"),
      ("bicleaner", "baseline")]
  assert all(r["n"] == 1000 and r["valid"] == 596 for r in rows)
  assert all(0 < r["auc"] < 1 for r in rows)
  table = paracrawl.format_table(rows)
  assert len(table.splitlines()) == 4 and "P@25%" in table


def test_train_mlp_on_text(tmp_path):
  config = mlp_similarity.default_config(hidden=8, batch_size=512, epochs=1,
                                         heldout_fraction=0.0)
  evals = mlp_similarity.train_for_language(_trigrams, "fr", config,
                                            str(tmp_path))
  model, step = mlp_similarity.load_for_inference(str(tmp_path))
  assert model.dim == 256 and evals == [{"step": step}]
  sample = paracrawl.load("v6", "fr")
  scores = paracrawl.score_sample(_trigrams, "fr", sample,
                                  {"mlp": {"model": model}})
  assert np.all(np.isfinite(scores["mlp"])) and len(scores["mlp"]) == 1000
