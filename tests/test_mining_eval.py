"""Mining benchmarks from the news test sets, and P/R/F1 with the dev
threshold applied to test."""
import collections
import itertools
import json
import pathlib

import numpy as np
import pytest

from paraflax import cli
from paraflax import errors
from paraflax.data import paths
from paraflax.data import readers
from paraflax.evaluation import mining
from paraflax.evaluation import mining_set
from paraflax.mining import embeddings_io
from paraflax.mining import margin

GOLD, DISTRACTORS = 50, 200
N = GOLD + DISTRACTORS
DIM = 128


@pytest.fixture(scope="module")
def de_sets():
  return {split: mining_set.build("de", split, gold=GOLD, distractors=DISTRACTORS,
                              seed=0)
          for split in ("dev", "test")}


def _aligned(files: list[tuple[pathlib.Path, pathlib.Path]]
             ) -> list[tuple[str, str]]:
  return [r for pair in files for r in readers.read_parallel(pair)[0]]


def _gold_rows(split: str) -> list[tuple[str, str]]:
  year = mining_set.GOLD_SETS[split]
  return _aligned([(paths.data_path("newstest_dev", f"{year}.deu"),
                    paths.data_path("newstest_dev", f"{year}.eng"))])


def _pool_rows(stems) -> list[tuple[str, str]]:
  stems = [s.format(x="deu") for s in stems]
  return _aligned([(paths.data_path("newstest_train_pool", f"{s}.deu.gz"),
                    paths.data_path("newstest_train_pool", f"{s}.eng.gz"))
                   for s in stems])


@pytest.mark.parametrize("split", ["dev", "test"])
def test_gold_pairs_are_aligned_newstest_lines(de_sets, split):
  s = de_sets[split]
  assert len(s.src) == len(s.tgt) == N and len(s.gold) == GOLD
  assert len(set(s.src)) == N and len(set(s.tgt)) == N  # distinct lines
  english_of = dict(_gold_rows(split))
  for i, j in s.gold:
    assert english_of[s.src[i]] == s.tgt[j]
  assert len({i for i, _ in s.gold}) == len({j for _, j in s.gold}) == GOLD
  assert mining_set.GOLD_SETS[split] in s.recipe


@pytest.mark.parametrize("split", ["dev", "test"])
def test_distractors_are_no_gold_sentence_and_have_no_translation(
    de_sets, split):
  s = de_sets[split]
  gold_rows = _gold_rows(split)
  src_gold = {s.src[i] for i, _ in s.gold}
  tgt_gold = {s.tgt[j] for _, j in s.gold}
  src_distractors = set(s.src) - src_gold
  tgt_distractors = set(s.tgt) - tgt_gold
  # Not any sentence of the gold year, sampled or not.
  assert not src_distractors & {x for x, _ in gold_rows}
  assert not tgt_distractors & {e for _, e in gold_rows}
  # Each distractor comes from its side's pool sets ...
  sides = mining_set.SIDES["de"][split]
  src_pool, tgt_pool = _pool_rows(sides.src), _pool_rows(sides.tgt)
  assert src_distractors <= {x for x, _ in src_pool}
  assert tgt_distractors <= {e for _, e in tgt_pool}
  # ... and no line aligned with it anywhere is on the other side.
  known = collections.defaultdict(set)
  for x, e in gold_rows + src_pool + tgt_pool:
    known[x].add(("en", e))
    known[e].add(("de", x))
  assert not any(("en", e) in known[x]
                 for x in src_distractors for e in s.tgt)
  assert not any(("de", x) in known[e]
                 for e in tgt_distractors for x in s.src)


def test_same_seed_same_set_other_seed_differs(de_sets):
  again = mining_set.build("de", "dev", gold=GOLD, distractors=DISTRACTORS,
                       seed=0)
  assert again == de_sets["dev"]
  other = mining_set.build("de", "dev", gold=GOLD, distractors=DISTRACTORS,
                       seed=1)
  assert other.src != again.src and other.gold != again.gold


def test_dev_and_test_differ(de_sets):
  dev, test = de_sets["dev"], de_sets["test"]
  assert not ({dev.src[i] for i, _ in dev.gold}
              & {test.src[i] for i, _ in test.gold})
  assert not {dev.tgt[j] for _, j in dev.gold} & {test.tgt[j]
                                                   for _, j in test.gold}
  for lang, splits in mining_set.SIDES.items():
    for sides in splits.values():  # src and tgt never share a set
      assert not set(sides.src) & set(sides.tgt), lang
    assert splits["dev"].src != splits["test"].src, lang
    assert splits["dev"].tgt != splits["test"].tgt, lang
  for lang in ("de", "cs"):  # enough data: four disjoint groups
    groups = [g for s in mining_set.SIDES[lang].values() for g in s]
    for a, b in itertools.combinations(groups, 2):
      assert not set(a) & set(b), lang


@pytest.mark.parametrize("kwargs, error, message", [
    ({"distractors": 10**6}, errors.DataError, "only .* usable lines"),
    ({"gold": 4000}, errors.DataError, "gold pairs .* only 2999"),
    ({"gold": 0}, errors.ConfigError, "at least 1 gold"),
    ({"lang": "es"}, errors.ConfigError, "no mining benchmark for 'es'"),
])
def test_impossible_requests_are_refused(kwargs, error, message):
  args = {"lang": "de", "gold": 10, "distractors": 10, **kwargs}
  with pytest.raises(error, match=message):
    mining_set.build(args.pop("lang"), "dev", seed=0, **args)


def test_mining_set_command_writes_the_set(de_sets, tmp_path):
  out = tmp_path / "dev"
  assert cli.main(["mining-set", "--lang", "de", "--split", "dev", "--output",
                   str(out), "--gold", str(GOLD), "--distractors",
                   str(DISTRACTORS)]) == 0
  assert sorted(p.name for p in out.iterdir()) == sorted(mining_set.FILES)
  assert mining_set.read(out) == de_sets["dev"]
  gold_lines = (out / "gold.tsv").read_text().splitlines()
  assert gold_lines == [f"{i}\t{j}" for i, j in sorted(de_sets["dev"].gold)]
  assert "newstest_train_pool/news-test2008.deu.gz" in (
      out / "README").read_text()


@pytest.mark.parametrize("text, message", [
    ("0\t1\n2\tx\n", r"gold.tsv:2: tgt index 'x' is not an integer"),
    ("0\t1\n1 2\n", r"gold.tsv:2: expected 2 tab-separated fields"),
    ("0\t1\n9\t0\n", r"gold.tsv:2: src index 9 is out of range"),
    ("0\t1\n0\t1\n", r"gold.tsv:2: pair \(0, 1\) repeats line 1"),
    ("", r"gold.tsv: empty file, nothing to read"),
])
def test_bad_gold_file_names_file_and_line(tmp_path, text, message):
  path = tmp_path / "gold.tsv"
  path.write_text(text)
  with pytest.raises(errors.DataError, match=message):
    mining_set.read_gold(path, 5, 5)


# --- Evaluation with embeddings whose answer is known -----------------------


def _unit(v: np.ndarray) -> np.ndarray:
  return v / np.linalg.norm(v, axis=-1, keepdims=True)


def _embedded(seed: int, weak: int = 0) -> mining.Embedded:
  """Gold pairs 0..GOLD-1 (shuffled positions on the target side) as
  near-copies, the last `weak` of them at cosine 0.45 only; the distractors
  random (cosines about 0 +- 0.1 in 128 dimensions)."""
  rng = np.random.default_rng(seed)
  x = _unit(rng.normal(size=(N, DIM)))
  noise = _unit(rng.normal(size=(GOLD, DIM)))
  noise = _unit(noise - np.sum(noise * x[:GOLD], 1, keepdims=True) * x[:GOLD])
  cos = np.where(np.arange(GOLD) < GOLD - weak, 0.999, 0.45)[:, None]
  y_gold = cos * x[:GOLD] + np.sqrt(1 - cos**2) * noise
  y = np.concatenate([y_gold, _unit(rng.normal(size=(DISTRACTORS, DIM)))])
  order = rng.permutation(N)  # y row order[j] goes to line j
  where = np.argsort(order)
  gold = frozenset((i, int(where[i])) for i in range(GOLD))
  return mining.Embedded(x.astype(np.float32), y[order].astype(np.float32),
                         gold, f"synthetic{seed}")


def test_clear_answer_gives_f1_near_one_for_every_combination():
  rows = mining.evaluate(_embedded(0), _embedded(1), k=4)
  assert [(r["margin"], r["retrieval"]) for r in rows] == list(
      itertools.product(margin.MARGINS, margin.STRATEGIES))
  for r in rows:
    assert r["dev_f1"] == 1.0 and r["test_f1"] == 1.0, r
    assert r["test_pairs"] == GOLD
  fwd = [r for r in rows if r["retrieval"] == "fwd"]
  # Without a threshold every source sentence gets a partner.
  assert all(r["test_all_precision"] == GOLD / N for r in fwd)
  table = mining.format_table(rows)
  assert len(table.splitlines()) == 2 + len(rows)
  assert "intersect" in table and "100.00" in table


def test_dev_threshold_is_applied_to_test():
  weak = GOLD // 2
  rows = mining.evaluate(_embedded(0), _embedded(1, weak=weak), k=4)
  for r in rows:
    if r["margin"] != "absolute":
      continue
    # The dev optimum lies between the weak (0.45) and strong gold cosines,
    # so on test the weak gold pairs fall below it ...
    assert 0.45 < r["threshold"] < 0.99, r
    assert r["test_precision"] == 1.0, r
    assert r["test_recall"] == (GOLD - weak) / GOLD, r
    # ... although they are each other's nearest neighbours.
    assert r["test_all_recall"] == 1.0, r


def _write_folder(folder: pathlib.Path, e: mining.Embedded) -> dict[str, str]:
  folder.mkdir()
  for side, emb in (("src", e.src), ("tgt", e.tgt)):
    (folder / f"{side}.txt").write_text(
        "".join(f"{side} {i}\n" for i in range(len(emb))))
    embeddings_io.write(str(folder / f"{side}.f32"), emb)
  (folder / "gold.tsv").write_text(
      "".join(f"{i}\t{j}\n" for i, j in sorted(e.gold)))
  return {side: str(folder / f"{side}.f32") for side in ("src", "tgt")}


def _eval_args(tmp_path: pathlib.Path, dev: dict, test: dict) -> list[str]:
  return ["mining-eval", "--dev", str(tmp_path / "dev"), "--test",
          str(tmp_path / "test"), "--dev-src-emb", dev["src"],
          "--dev-tgt-emb", dev["tgt"], "--test-src-emb", test["src"],
          "--test-tgt-emb", test["tgt"], "--dim", str(DIM)]


def test_mining_eval_command_prints_and_writes_the_table(tmp_path, capsys):
  dev = _write_folder(tmp_path / "dev", _embedded(0))
  test = _write_folder(tmp_path / "test", _embedded(1, weak=GOLD // 2))
  out = tmp_path / "table.json"
  assert cli.main(_eval_args(tmp_path, dev, test)
                  + ["--output", str(out)]) == 0
  printed = capsys.readouterr().out
  result = json.loads(out.read_text())
  assert result["k"] == 4 and result["embeddings"]["dev_src_emb"] == dev["src"]
  assert len(result["rows"]) == len(margin.MARGINS) * len(margin.STRATEGIES)
  assert all(r["dev_f1"] == 1.0 for r in result["rows"])
  for name in margin.MARGINS:
    assert name in printed


def test_mining_eval_refuses_embeddings_of_another_length(tmp_path, capsys):
  dev = _write_folder(tmp_path / "dev", _embedded(0))
  test = _write_folder(tmp_path / "test", _embedded(1))
  short = tmp_path / "short.f32"
  embeddings_io.write(str(short), np.ones((N - 1, DIM), np.float32))
  code = cli.main(_eval_args(tmp_path, dev, {**test, "tgt": str(short)}))
  assert code == cli.EXIT_BAD_INPUT
  err = capsys.readouterr().err
  assert f"{short}: {N - 1} embeddings but" in err
  assert f"test/tgt.txt has {N} lines" in err


def test_threshold_that_keeps_nothing_is_null_in_json():
  row = {"margin": "ratio", "retrieval": "max", "threshold": float("inf")}
  assert json.loads(mining.to_json([row], k=4))["rows"][0]["threshold"] is None


def test_help_stays_light(run_python):
  run_python("import sys\nfrom paraflax import cli\n"
             "for c in ('mining-set', 'mining-eval'):\n"
             "  try: cli.main([c, '--help'])\n  except SystemExit: pass\n"
             "assert not {'jax', 'flax'} & set(sys.modules)\n")
