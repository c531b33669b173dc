"""Filtering judged downstream: the word budget, the runs it trains (a fake
NMT here) and that a rerun resumes."""
import json

import numpy as np

from paraflax.inference import eval_filtering


def test_the_best_pairs_up_to_n_target_words():
  scores = np.asarray([0.1, 0.9, 0.5, 0.9, 0.3])
  words = np.asarray([4, 3, 2, 5, 1])
  # By score: 1 (3 words), 3 (5: 8 in all), 2 (2: 10), 4 (1: 11), 0.
  assert list(eval_filtering.select(scores, words, 10)) == [1, 2, 3]
  assert list(eval_filtering.select(scores, words, 2)) == []
  assert list(eval_filtering.select(scores, words, 100)) == [0, 1, 2, 3, 4]


def test_margin_scores_are_the_ratio_against_both_neighbourhoods():
  rng = np.random.default_rng(0)
  x = rng.normal(size=(12, 6)).astype(np.float32)
  y = (x + 0.5 * rng.normal(size=x.shape)).astype(np.float32)
  got = eval_filtering.margin_scores(x, y, k=3)
  xn = x / np.linalg.norm(x, axis=1, keepdims=True)
  yn = y / np.linalg.norm(y, axis=1, keepdims=True)
  cos = xn @ yn.T
  mean_x = np.sort(cos, 1)[:, -3:].mean(1)
  mean_y = np.sort(cos, 0)[-3:].mean(0)
  np.testing.assert_allclose(got, np.diag(cos) / (mean_x / 2 + mean_y / 2),
                             rtol=1e-4)


def test_each_selection_trains_once_and_a_rerun_resumes(tmp_path):
  src = [f"quelle {i}" for i in range(10)]
  tgt = [("w " * (1 + i % 3)).strip() for i in range(10)]
  labels = ["clean"] * 5 + ["untranslated"] * 5
  trained = []

  def fake_train(config, overrides, workdir):
    path = overrides[-1].split("tsv:", 1)[1]
    trained.append(workdir)
    return float(len(open(path).read().splitlines()))

  scores = {"cosine": np.arange(10, 0, -1, dtype=float)}
  rows = eval_filtering.evaluate(src, tgt, scores, [6], str(tmp_path),
                                 config="c.py", labels=labels,
                                 train_fn=fake_train)
  by = {(r["scorer"], r["words"]): r for r in rows}
  assert set(by) == {("unfiltered", 0), ("cosine", 6), ("random", 6)}
  assert by["unfiltered", 0]["pairs"] == 10
  cosine = by["cosine", 6]
  assert cosine["target_words"] <= 6 and cosine["bleu"] == cosine["pairs"]
  assert cosine["kept"]["clean"] == cosine["pairs"]  # lines 0.. score best
  sel = (tmp_path / "sel_cosine_6.tsv").read_text().splitlines()
  assert sel == [f"{src[i]}\t{tgt[i]}" for i in range(cosine["pairs"])]
  again = eval_filtering.evaluate(src, tgt, scores, [6], str(tmp_path),
                                  config="c.py", labels=labels,
                                  train_fn=fake_train)
  assert len(trained) == 3 and again == rows
  report = json.loads((tmp_path / eval_filtering.REPORT).read_text())
  assert len(report["rows"]) == 3


def test_the_noisy_file_brings_its_score_columns_and_labels(tmp_path):
  path = tmp_path / "noisy.tsv"
  path.write_text("a\tb\t0.5\nc\td\t-1\n")
  (tmp_path / "noisy.tsv.labels").write_text("clean\nshort\n")
  src, tgt, columns, labels = eval_filtering.read_noisy(str(path))
  assert (src, tgt, labels) == (["a", "c"], ["b", "d"], ["clean", "short"])
  np.testing.assert_array_equal(columns["column2"], [0.5, -1.0])
