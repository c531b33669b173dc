"""Mining benchmarks of a user's own bitext (`mining-set --data`) and of
BUCC's files (`mining-set --bucc`)."""
from __future__ import annotations

import pytest

from paraflax import cli
from paraflax import errors
from paraflax.evaluation import mining_set

ROWS = [(f"предложение {i}", f"sentence {i}") for i in range(40)]


@pytest.fixture
def bitext(tmp_path):
  path = tmp_path / "ru-en.tsv"
  path.write_text("".join(f"{x}\t{e}\n" for x, e in ROWS), encoding="utf-8")
  return f"tsv:{path}"


def test_gold_pairs_are_translations_and_distractors_have_none(bitext):
  bench = mining_set.build_from_bitext(bitext, gold=5, distractors=8, seed=3)
  translation = dict(ROWS)
  assert len(bench.src) == len(bench.tgt) == 13 and len(bench.gold) == 5
  for s, t in bench.gold:
    assert translation[bench.src[s]] == bench.tgt[t]
  gold_src = {s for s, _ in bench.gold}
  for i, x in enumerate(bench.src):
    if i not in gold_src:
      assert translation[x] not in bench.tgt
  again = mining_set.build_from_bitext(bitext, gold=5, distractors=8, seed=3)
  assert again == bench


def test_too_few_rows_is_named(bitext):
  with pytest.raises(errors.DataError, match=r"asked for 45 rows of tsv:"):
    mining_set.build_from_bitext(bitext, gold=5, distractors=20)


def test_the_command_writes_a_benchmark_mining_eval_reads(bitext, tmp_path):
  out = tmp_path / "bench"
  assert cli.main(["mining-set", "--data", bitext, "--gold", "4",
                   "--distractors", "6", "--output", str(out)]) == 0
  read = mining_set.read(out)
  assert len(read.gold) == 4 and len(read.src) == 10


def test_bucc_files(tmp_path):
  (tmp_path / "s").write_text("ru-1\tодин\nru-2\tдва\n", encoding="utf-8")
  (tmp_path / "t").write_text("en-1\ttwo\nen-2\tthree\nen-3\tone\n")
  (tmp_path / "g").write_text("ru-1\ten-3\nru-2\ten-1\n")
  bench = mining_set.read_bucc(*(str(tmp_path / n) for n in "stg"))
  assert bench.gold == {(0, 2), (1, 0)} and bench.tgt[2] == "one"
  (tmp_path / "g").write_text("ru-1\ten-9\n")
  with pytest.raises(errors.DataError, match=r"g:1: id 'en-9' is not in"):
    mining_set.read_bucc(*(str(tmp_path / n) for n in "stg"))


def test_one_source_of_the_benchmark(capsys, bitext, tmp_path):
  assert cli.main(["mining-set", "--data", bitext, "--lang", "de", "--split",
                   "dev", "--output", str(tmp_path / "o")]) == 2
  assert "give one of --lang with --split" in capsys.readouterr().err
