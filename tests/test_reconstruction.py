"""Reconstructing a known bitext (`paraflax eval-reconstruction`): the
mechanics on synthetic embeddings with a planted alignment, the
deduplication `mine` does, and one run of the command on the tiny
bilingual workdir."""
import json

import numpy as np
import pytest

from paraflax import cli
from paraflax import errors
from paraflax.evaluation import reconstruction
from paraflax.inference import eval_filtering
from paraflax.mining import margin
from tests import conftest


def _planted(n: int, noise: float, seed: int = 0):
  """n pairs ("s<i>", "t<i>") and an embedding per sentence: y_i = x_i +
  noise."""
  rng = np.random.default_rng(seed)
  x = rng.normal(size=(n, 16)).astype(np.float32)
  y = (x + noise * rng.normal(size=x.shape)).astype(np.float32)
  src = {f"s{i}": x[i] for i in range(n)}
  tgt = {f"t{i}": y[i] for i in range(n)}
  return src, tgt


def _embedded(bitext, src, tgt):
  return (np.stack([src[s] for s in bitext.src_unique]),
          np.stack([tgt[t] for t in bitext.tgt_unique]))


def test_a_planted_alignment_is_reconstructed_whole():
  src, tgt = _planted(50, 0.1)
  bitext = reconstruction.Shuffled(list(zip(src, tgt)), seed=3)
  assert bitext.src != sorted(bitext.src, key=lambda s: int(s[1:]))
  # The gold pairs are where the shuffle put each pair.
  assert len(bitext.gold) == 50
  assert all(bitext.src[a][1:] == bitext.tgt[b][1:] for a, b in bitext.gold)
  rows = reconstruction.evaluate(
      bitext, *_embedded(bitext, src, tgt), ks=(2, 4),
      margins=("ratio", "distance"), retrievals=("max", "intersect"),
      thresholds={None: [-np.inf], "ratio": [np.inf]})
  assert [(r["k"], r["margin"], r["retrieval"]) for r in rows] == [
      (k, m, r) for k in (2, 4) for m in ("ratio", "distance")
      for r in ("max", "intersect")]
  for r in rows:
    assert (r["precision"], r["recall"], r["f1"]) == (1.0, 1.0, 1.0)
    assert r["pairs"] == r["mined"] == 50
    assert r["fixed"][0]["pairs"] == 50 and r["fixed"][0]["f1"] == 1.0
    assert len(r["fixed"]) == (2 if r["margin"] == "ratio" else 1)
  assert rows[0]["fixed"][1] == {"threshold": np.inf, "pairs": 0,
                                 "precision": 0.0, "recall": 0.0, "f1": 0.0}
  assert "fixed thresholds" in reconstruction.format_table(rows)


def test_noise_lowers_the_figures_and_the_best_threshold_is_the_ceiling():
  src, tgt = _planted(80, 1.5)
  bitext = reconstruction.Shuffled(list(zip(src, tgt)), seed=0)
  x, y = _embedded(bitext, src, tgt)
  [row] = reconstruction.evaluate(bitext, x, y,
                                  thresholds={"ratio": [1.0, 1.05, 1.1]})
  assert 0 < row["f1"] < 1
  assert all(f["f1"] <= row["f1"] for f in row["fixed"])
  # The same pairs as the margin module mines, scored against the gold.
  pairs = margin.mine(x, y, 4)
  found = set(zip(pairs.src.tolist(), pairs.tgt.tolist()))
  assert row["mined"] == len(found)


def test_duplicates_are_mined_once_and_every_copy_of_a_pair_is_gold():
  src, tgt = _planted(30, 0.05)
  pairs = [*zip(src, tgt), ("s0", "t0"), ("s1", "t2")]  # a copy; s1 twice
  bitext = reconstruction.Shuffled(pairs, seed=1)
  assert (len(bitext.src_unique), len(bitext.tgt_unique)) == (30, 30)
  lines = lambda side, text: [i for i, t in enumerate(side) if t == text]
  s0, t0 = lines(bitext.src, "s0"), lines(bitext.tgt, "t0")
  assert {(a, b) for a in s0 for b in t0} <= bitext.gold
  # s0-t0 and s1-t2 4 ways each, s1-t1 and s2-t2 2 ways, 27 pairs once.
  assert len(bitext.gold) == 4 + 4 + 2 + 2 + 27
  [row] = reconstruction.evaluate(bitext, *_embedded(bitext, src, tgt),
                                  ks=(3,))
  # Each distinct sentence is mined once (no copy is its own neighbour),
  # then every line that holds it: the s0-t0 pair counts 4 times.
  assert row["mined"] == 4 + 2 + 2 + 27 and row["precision"] == 1.0


def test_bad_settings_are_named():
  with pytest.raises(errors.ConfigError, match="not a margin"):
    reconstruction.parse_thresholds(["cosine=1"])
  with pytest.raises(errors.ConfigError, match="give a number"):
    reconstruction.parse_thresholds(["ratio=high"])
  assert reconstruction.parse_thresholds(["1", "ratio=1.05"]) == {
      None: [1.0], "ratio": [1.05]}
  src, tgt = _planted(5, 0.1)
  bitext = reconstruction.Shuffled(list(zip(src, tgt)))
  with pytest.raises(errors.ConfigError, match="--retrieval"):
    reconstruction.evaluate(bitext, *_embedded(bitext, src, tgt),
                            retrievals=("both",))
  with pytest.raises(errors.DataError, match="distinct sentences"):
    reconstruction.evaluate(bitext, *_embedded(bitext, src, tgt)[::-1][:1],
                            np.zeros((2, 16), np.float32))


def test_eval_filtering_margin_excludes_duplicates_as_mine_does():
  rng = np.random.default_rng(0)
  x = rng.normal(size=(10, 6)).astype(np.float32)
  y = (x + 0.5 * rng.normal(size=x.shape)).astype(np.float32)
  src, tgt = [f"s{i}" for i in range(10)], [f"t{i}" for i in range(10)]
  once = eval_filtering.margin_scores(x, y, 3, src, tgt)
  # Line 10 repeats pair 0: without deduplication it would be its copy's
  # nearest neighbour (cosine 1) and lower the margins of both.
  twice = eval_filtering.margin_scores(np.concatenate([x, x[:1]]),
                                       np.concatenate([y, y[:1]]), 3,
                                       src + src[:1], tgt + tgt[:1])
  np.testing.assert_allclose(twice, np.append(once, once[0]), rtol=1e-6)
  undeduplicated = eval_filtering.margin_scores(
      np.concatenate([x, x[:1]]), np.concatenate([y, y[:1]]), 3)
  assert undeduplicated[0] < twice[0]


def test_the_command_on_the_tiny_workdir(bilingual_workdir, tmp_path,
                                        monkeypatch):
  de, en = conftest.multi30k_val(tmp_path, 40)
  out = tmp_path / "recon.json"
  monkeypatch.chdir(bilingual_workdir.parent)
  argv = ["eval-reconstruction", "--workdir", bilingual_workdir.name,
          "--data", f"lines:{de},{en}", "--margin", "ratio", "absolute",
          "--retrieval", "max", "fwd", "--k", "2",
          "--thresholds", "ratio=1.0", "absolute=0.5", "--output", str(out)]
  assert cli.main(argv) == 0
  report = json.loads(out.read_text())
  assert report["lines"] == 40 and report["gold"] >= 40
  assert report["workdir"] == bilingual_workdir.name  # as given
  assert [(r["margin"], r["retrieval"]) for r in report["rows"]] == [
      ("ratio", "max"), ("ratio", "fwd"), ("absolute", "max"),
      ("absolute", "fwd")]
  assert [f["threshold"] for f in report["rows"][2]["fixed"]] == [0.5]
  assert cli.main(argv) == 0  # already written: read back
  assert cli.main([*argv[:-2], "--seed", "1", "--output", str(out)]) != 0
