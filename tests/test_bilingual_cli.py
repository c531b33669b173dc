"""`paraflax score-pairs`, `align-eval`, `train-mlp` and `eval-bilingual`
on a tiny bilingual model of real multi30k de-en."""
import gzip
import json
import pathlib
import shutil

import numpy as np
import pytest

from paraflax import cli
from paraflax.data import paths
from paraflax.evaluation import alignment
from paraflax.evaluation import paracrawl
from paraflax.inference import embedders


@pytest.fixture(scope="module")
def workdir(bilingual_workdir):
  return bilingual_workdir


def _lines(lang: str, n: int) -> list[str]:
  with gzip.open(paths.data_path("multi30k_task1", f"val.{lang}.gz"), "rt",
                 encoding="utf-8") as f:
    return f.read().splitlines()[:n]


def _score(workdir, tmp_path, text: str, *extra) -> tuple[int, pathlib.Path]:
  pairs, out = tmp_path / "pairs.tsv", tmp_path / "scores.txt"
  pairs.write_text(text, encoding="utf-8")
  out.unlink(missing_ok=True)
  code = cli.main(["score-pairs", "--workdir", str(workdir), "--input",
                   str(pairs), "--output", str(out), *extra])
  return code, out


def _tsv(rows) -> str:
  return "".join(f"{a}\t{b}\n" for a, b in rows)


DE_EN = ("--src-lang", "de", "--tgt-lang", "en")
EN_DE = ("--src-lang", "en", "--tgt-lang", "de")


def test_cosine_scores_are_the_embedding_cosines(workdir, tmp_path):
  de, en = _lines("de", 20), _lines("en", 20)
  code, out = _score(workdir, tmp_path, _tsv(zip(de, en)), *DE_EN)
  assert code == 0
  scores = np.loadtxt(out)
  embed, _ = embedders.load(str(workdir), ["de", "en"])
  x, y = embed(de, "de"), embed(en, "en")
  cos = np.sum(x * y, 1) / np.linalg.norm(x, axis=1)
  cos /= np.linalg.norm(y, axis=1)
  np.testing.assert_allclose(scores, cos, atol=1e-6)
  # English first, said so: the same pairs, the same scores.
  code, out = _score(workdir, tmp_path, _tsv(zip(en, de)), *EN_DE)
  assert code == 0
  np.testing.assert_array_equal(np.loadtxt(out), scores)


def test_loading_an_encoder_builds_no_optimizer(workdir, forbid):
  """Embedding needs the model and its parameters, restored alone: no
  training recipe, no optimizer is built."""
  from paraflax.recipes import bilingual  # pylint: disable=g-import-not-at-top
  from paraflax.training import optimizers  # pylint: disable=g-import-not-at-top
  forbid("an optimizer was built to embed", (optimizers, "make"),
         (bilingual, "BilingualRecipe"))
  embed, step = embedders.load(str(workdir), ["de", "en"])
  x = embed(_lines("de", 3), "de")
  assert step > 0 and x.shape[0] == 3 and np.all(np.isfinite(x))


@pytest.mark.parametrize("name", ["euclidean", "csls"])
def test_other_similarities_give_one_score_per_pair(workdir, tmp_path, name):
  rows = list(zip(_lines("de", 30), _lines("en", 30)))
  code, out = _score(workdir, tmp_path, _tsv(rows), *DE_EN,
                     "--similarity", name, "--k", "3")
  assert code == 0
  scores = np.loadtxt(out)
  assert scores.shape == (30,) and np.isfinite(scores).all()
  assert len(set(scores)) > 1


@pytest.mark.parametrize("text, extra, message", [
    ("Ein Hund\tA dog\nEin Hund. A dog.\n", DE_EN,
     "pairs.tsv:2: expected 2 tab-separated fields, found 1"),
    ("Ein Hund\tA dog\tUn chien\n", DE_EN,
     "pairs.tsv:1: expected 2 tab-separated fields, found 3"),
    ("Ein Hund\tA dog\n \tA cat\n", DE_EN, "pairs.tsv:2: empty source"),
    ("", DE_EN, "empty file"),
    ("Un chien\tA dog\n", ("--src-lang", "fr", "--tgt-lang", "en"),
     "bilingual model of de and en"),
    ("Ein Hund\tEin Hund\n", ("--src-lang", "de", "--tgt-lang", "de"),
     "English and the other one"),
    ("Ein Hund\tA dog\n", (*DE_EN, "--similarity", "mlp"),
     "paraflax train-mlp --workdir"),
])
def test_bad_pairs_and_languages_stop_without_output(
    workdir, tmp_path, capsys, text, extra, message):
  code, out = _score(workdir, tmp_path, text, *extra)
  assert code == cli.EXIT_BAD_INPUT
  assert message in capsys.readouterr().err
  assert not out.exists()


def _align(workdir, tmp_path, src, tgt, *extra) -> int:
  (tmp_path / "src.txt").write_text("".join(l + "\n" for l in src))
  (tmp_path / "tgt.txt").write_text("".join(l + "\n" for l in tgt))
  return cli.main(["align-eval", "--workdir", str(workdir), "--src",
                   str(tmp_path / "src.txt"), "--tgt",
                   str(tmp_path / "tgt.txt"), *extra])


def test_align_eval_table_in_either_file_order(workdir, tmp_path, capsys):
  de, en = _lines("de", 60), _lines("en", 60)
  out = tmp_path / "rows.json"
  assert _align(workdir, tmp_path, de, en, *DE_EN, "--k", "3", "--output",
                str(out)) == 0
  printed = capsys.readouterr().out
  rows = json.loads(out.read_text())
  assert [r["similarity"] for r in rows] == ["cosine", "euclidean", "csls"]
  for r in rows:
    assert r["n"] == 60 and 0 <= r["src2tgt"] <= 100
    assert r["mean"] == pytest.approx((r["src2tgt"] + r["tgt2src"]) / 2)
    assert f"{r['mean']:.2f}" in printed
  # English given first: still reported de->en, en->de.
  assert _align(workdir, tmp_path, en, de, *EN_DE, "--k", "3", "--output",
                str(out), "--similarity", "cosine") == cli.EXIT_BAD_INPUT
  assert "--overwrite" in capsys.readouterr().err  # other rows: kept
  assert json.loads(out.read_text()) == rows
  assert _align(workdir, tmp_path, en, de, *EN_DE, "--k", "3", "--output",
                str(out), "--similarity", "cosine", "--overwrite") == 0
  assert json.loads(out.read_text()) == rows[:1]


def test_align_eval_needs_line_aligned_files(workdir, tmp_path, capsys):
  assert _align(workdir, tmp_path, _lines("de", 5), _lines("en", 4),
                *DE_EN) == cli.EXIT_BAD_INPUT
  assert "tgt.txt" in capsys.readouterr().err


def test_train_mlp_then_score_and_evaluate_everything(workdir, tmp_path,
                                                      capsys):
  own = tmp_path / "w"
  shutil.copytree(workdir, own)
  # A narrow MLP: eval-bilingual scores every pair of each alignment set
  # (newstest2012: 9M) through it, which at the default 512 was most of
  # this test's time.
  narrow = "--config.hidden=32"
  assert cli.main(["train-mlp", "--workdir", str(own), "--epochs", "2",
                   "--seed", "3", narrow]) == 0
  report = json.loads((own / "mlp_similarity.json").read_text())
  # The flags set the keys of configs/mlp_similarity.py; the held-out loss
  # of every evaluation picks the state that is kept.
  config = report["config"]
  assert report["lang"] == "de" and (
      config["epochs"], config["seed"], config["hidden"]) == (2, 3, 32)
  assert report["evals"][-1]["step"] == config["train_steps"]
  best = min(report["evals"], key=lambda e: e["heldout/loss"])
  assert report["selected_step"] == best["step"]
  assert (own / "mlp_similarity" / "best").is_dir()
  # Another run replaces it whole: 1 epoch with random lines of the noisy
  # corpus as negatives is another step count.
  assert cli.main(["train-mlp", "--workdir", str(own), "--epochs", "1",
                   "--negatives", "random", narrow]) == 0
  report = json.loads((own / "mlp_similarity.json").read_text())
  steps = report["config"]["train_steps"]
  assert report["config"]["negatives"] == "random"
  assert steps != config["train_steps"]
  metrics = (own / "mlp_similarity" / "metrics.jsonl").read_text()
  assert max(json.loads(line)["step"] for line in metrics.splitlines()) \
      == steps
  assert not (own / "mlp_similarity.partial").exists()
  rows = list(zip(_lines("de", 10), _lines("en", 10)))
  code, out = _score(own, tmp_path, _tsv(rows), *DE_EN, "--similarity",
                     "mlp")
  assert code == 0
  mlp = np.loadtxt(out)
  # The MLP is not symmetric, but always reads [German; English].
  code, out = _score(own, tmp_path, _tsv((b, a) for a, b in rows), *EN_DE,
                     "--similarity", "mlp")
  np.testing.assert_array_equal(np.loadtxt(out), mlp)

  assert cli.main(["eval-bilingual", "--workdir", str(own)]) == 0
  assert "alignment recovery" in capsys.readouterr().out
  result = json.loads((own / "bilingual_eval.json").read_text())
  sims = ["cosine", "euclidean", "csls", "mlp"]
  assert ({(r["set"], r["similarity"]) for r in result["alignment"]}
          == {(s, m) for s in alignment.available_sets("de") for m in sims})
  scorers = {(r["release"], r["scorer"]) for r in result["paracrawl"]}
  assert {("v3", "hunalign"), ("v6", "bicleaner"), ("v6", "mlp")} <= scorers
  assert len(scorers) == 4 * 2 + 3 + 1
  for release in paracrawl.RELEASES:
    png = own / f"paracrawl_{release}_de.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
