"""`paraflax pair-stats`: statistics of the 1-best pairs, reproducible
examples, and a clear error on a record that lacks a field."""
import json

from paraflax import cli
from paraflax.evaluation import pair_stats


def _records():
  rows = [("a b c d", "a b c", 0, 1.0), ("e f", "e f", 0, 0.5),
          ("g h i j", "x y z w u v w x", 0, 2.0), ("g h i j", "other", 1, 3.0)]
  return [{"id": i if rank == 0 else 2, "reference": ref, "translation": hyp,
           "rank": rank, "cost": cost, "source": f"src {i}"}
          for i, (ref, hyp, rank, cost) in enumerate(rows)]


def test_summary_counts_only_the_one_best():
  stats = pair_stats.summarize(_records())
  assert (stats["records"], stats["pairs"], stats["identical"]) == (4, 3, 1)
  assert stats["reference_words"]["max"] == 4
  assert stats["translation_words"]["mean"] == (3 + 2 + 8) / 3
  assert stats["length_ratio"]["max"] == 2.0
  assert stats["cost"]["mean"] == (1.0 + 0.5 + 2.0) / 3


def test_examples_depend_only_on_the_seed():
  records = _records() * 5
  for r, i in zip(records, range(len(records))):
    r["id"] = i
  first = pair_stats.sample(records, 4, seed=3)
  assert first == pair_stats.sample(list(records), 4, seed=3)
  assert [r["id"] for r in first] == sorted(r["id"] for r in first)
  assert all(r["rank"] == 0 for r in first)


def test_cli_writes_json_and_names_a_bad_record(tmp_path, capsys):
  path = tmp_path / "bt.jsonl"
  path.write_text("".join(json.dumps(r) + "\n" for r in _records()))
  assert cli.main(["pair-stats", str(path), "--examples", "2",
                   "--json", str(tmp_path / "s.json")]) == 0
  assert json.loads((tmp_path / "s.json").read_text())["pairs"] == 3
  assert "3 pairs (rank 0) of 4 records" in capsys.readouterr().out
  path.write_text(json.dumps({"id": 0, "reference": "a"}) + "\n")
  assert cli.main(["pair-stats", str(path)]) == cli.EXIT_BAD_INPUT
  assert f"{path}:1: record lacks" in capsys.readouterr().err


def test_scores_of_a_scored_file_are_described_with_their_percentiles():
  records = _records()
  for r, ppl in zip(records, (10.0, 20.0, float("inf"), 5.0)):
    r["scores"] = {"lm_ppl": ppl, "overlap_1": 0.5, "label": "x"}
  stats = pair_stats.summarize(records)
  assert set(stats["scores"]) == {"lm_ppl", "overlap_1"}
  ppl = stats["scores"]["lm_ppl"]
  assert (ppl["non_finite"], ppl["min"], ppl["max"], ppl["p50"]) == (
      1, 10.0, 20.0, 15.0)
  assert ppl["p10"] == 11.0 and ppl["p90"] == 19.0
  text = pair_stats.format_report(stats, [])
  assert "lm_ppl" in text and "(1 not finite)" in text
  assert pair_stats.summarize(_records())["scores"] == {}
