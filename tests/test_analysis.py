"""`paraflax analyze-backtranslations` (filtering/analysis.py): Table 9's
entropies and repetition rates by hand, Table 10's correlations against
scipy and its IDF on a toy list, Table 11's ordering, the file rules."""
from __future__ import annotations

import json
import math
import os

import pytest
from scipy import stats

from paraflax import cli
from paraflax import errors
from paraflax.data import paths
from paraflax.filtering import analysis

# IDF toy list: T = 5 + 3 + 2 = 10, the smallest count 2.
TOY_IDF = analysis.idf_from_counts({"the": 5, "cat": 3, "t": 2})


def _record(i: int, reference: str, translation: str, rank: int = 0,
            ref_prob: float | None = None) -> dict:
  record = {"id": i, "reference": reference, "translation": translation,
            "rank": rank, "cost": 0.5}
  if ref_prob is not None:
    record["scores"] = {"length": 1.0, "ref_prob": ref_prob}
  return record


def _jsonl(tmp_path, records) -> str:
  path = tmp_path / "scored.jsonl"
  path.write_text("".join(json.dumps(r) + "\n" for r in records))
  return str(path)


def test_side_by_hand():
  side = analysis.Side()
  side.add("the cat the cat the".split())  # t c t c t
  side.add(["a", "cat"])
  t9 = side.table()
  # Unigrams: the 3, cat 3, a 1 of N = 7:
  # H = -(2 * 3/7 log2(3/7) + 1/7 log2(1/7))
  #   = 2 * 0.428571 * 1.222392 + 0.142857 * 2.807355 = 1.448816 bits.
  assert t9["unigram_entropy"] == pytest.approx(1.448816, abs=1e-6)
  # Trigrams (none in "a cat"): (the cat the) 2, (cat the cat) 1:
  # H = -(2/3 log2(2/3) + 1/3 log2(1/3)) = 0.918296 bits.
  assert t9["trigram_entropy"] == pytest.approx(0.918296, abs=1e-6)
  # Words of 3+ characters: t c t c t (3 seen before) and cat ("a" is too
  # short; 0 seen before): (3 + 0) / (5 + 1) = 0.5.
  assert t9["unigram_repetition"] == 0.5
  # Trigrams: tct, ctc, tct (1 seen before) and none: 1 / 3.
  assert t9["trigram_repetition"] == pytest.approx(1 / 3)


def test_entropy_and_repeats_edges():
  assert analysis.entropy({}) == 0.0
  assert analysis.entropy({"a": 4}) == 0.0
  assert analysis.entropy({"a": 1, "b": 1, "c": 1, "d": 1}) == 2.0  # log2 4
  assert analysis.repeats("abab") == (2, 4)
  assert analysis.rate(0, 0) == 0.0  # nothing to repeat: nothing did


def test_table9_difference_is_reference_minus_translation(tmp_path):
  report = analysis.analyze(_jsonl(tmp_path, [
      _record(0, "the cat the cat the", "the cat"),
      _record(0, "ignored ignored", "ignored ignored", rank=1),
      _record(1, "a cat", "a dog")]))
  t9 = report["table9"]
  assert report["pairs"] == 2 and report["table10"] is None
  assert t9["reference"]["unigram_repetition"] == 0.5  # as above
  # Translations "the cat", "a dog": the, cat, dog 1 each, a 1: 2 bits;
  # no trigram, no repeated word.
  assert t9["translation"] == {"unigram_entropy": 2.0, "trigram_entropy": 0.0,
                               "unigram_repetition": 0.0,
                               "trigram_repetition": 0.0}
  for key, value in t9["difference"].items():
    assert value == t9["reference"][key] - t9["translation"][key]


def test_idf_on_a_toy_list():
  # idf(w) = ln(T / count(w)); absent words get the smallest count's.
  assert TOY_IDF.values["the"] == pytest.approx(math.log(10 / 5))
  assert TOY_IDF.values["cat"] == pytest.approx(math.log(10 / 3))
  assert TOY_IDF.floor == pytest.approx(math.log(10 / 2))
  assert analysis.token_idf("zebra", TOY_IDF) == TOY_IDF.floor
  assert analysis.token_idf(".", TOY_IDF) is None  # not a word
  assert analysis.token_idf("42", TOY_IDF) is None
  # "t-shirt" -> t (ln 5) and shirt (absent: ln 5): their mean, ln 5.
  assert analysis.token_idf("t-shirt", TOY_IDF) == pytest.approx(math.log(5))
  # the, cat, zebra, t-shirt ("." left out):
  # (ln 2 + ln(10/3) + ln 5 + ln 5) / 4.
  expected = (math.log(2) + math.log(10 / 3) + 2 * math.log(5)) / 4
  assert analysis.average_idf(["the", "cat", "zebra", ".", "t-shirt"],
                              TOY_IDF) == pytest.approx(expected)
  assert math.isnan(analysis.average_idf([".", "3"], TOY_IDF))


def test_the_shared_word_list_loads():
  path = analysis.word_freq_path()
  if not os.path.isfile(path):
    pytest.skip(f"{path} is not here")
  idf = analysis.load_idf()
  assert len(idf.values) == 188033 and idf.floor_count == 200
  assert idf.values["the"] < idf.values["dog"] < idf.floor


def test_correlations_match_scipy():
  x = [1.0, 2.0, 3.0, 4.0, 10.0, math.nan]
  y = [2.0, 1.0, 4.0, 3.0, 8.0, 5.0]  # the NaN pair is left out
  got = analysis.correlation(x, y)
  pearson, spearman = stats.pearsonr(x[:5], y[:5]), stats.spearmanr(x[:5],
                                                                    y[:5])
  assert got["n"] == 5
  assert got["pearson"] == pytest.approx(pearson[0])
  assert got["pearson_p"] == pytest.approx(pearson[1])
  assert got["spearman"] == pytest.approx(spearman[0])
  assert got["spearman_p"] == pytest.approx(spearman[1])
  constant = analysis.correlation([1.0, 2.0, 3.0], [5.0, 5.0, 5.0])
  assert constant["pearson"] is None and constant["spearman"] is None


def test_table10_and_examples(tmp_path):
  probs = [0.5, 0.9, 0.1, 0.9, 0.3]
  translations = ["the cat", "the cat the cat", "a t-shirt", "cat cat cat",
                  "the the cat ."]
  records = [_record(i, f"reference {i}", t, ref_prob=p)
             for i, (p, t) in enumerate(zip(probs, translations))]
  records.insert(1, _record(0, "r", "rank one is left out", rank=1,
                            ref_prob=1.0))
  report = analysis.analyze(_jsonl(tmp_path, records), examples=2,
                            idf=TOY_IDF)
  t10, t11 = report["table10"], report["table11"]
  lengths = [2.0, 4.0, 2.0, 3.0, 4.0]  # "t-shirt" is one token
  assert t10["length"]["spearman"] == pytest.approx(
      stats.spearmanr(probs, lengths)[0])
  # Unigram repetition per sentence (3+ characters): 0/2, 2/4, 0/1
  # (t-shirt), 2/3, 1/3 (the, the, cat: one repeat).
  assert t10["unigram_repetition"]["pearson"] == pytest.approx(
      stats.pearsonr(probs, [0, 0.5, 0, 2 / 3, 1 / 3])[0])
  assert t10["average_idf"]["n"] == 5
  # Ties go to the earlier record; the least list starts at the lowest.
  assert [e["ref_prob"] for e in t11["most_reference_like"]] == [0.9, 0.9]
  assert [e["id"] for e in t11["most_reference_like"]] == [1, 3]
  assert [e["id"] for e in t11["least_reference_like"]] == [2, 4]
  assert t11["least_reference_like"][0]["translation"] == "a t-shirt"
  none = analysis.analyze(_jsonl(tmp_path, records), examples=0, idf=TOY_IDF)
  assert none["table11"] == {"most_reference_like": [],
                             "least_reference_like": []}


def test_no_ref_prob_prints_table9_and_says_why(tmp_path, monkeypatch,
                                                capsys):
  # No word list is read without ref_prob: a data folder without one works.
  monkeypatch.setenv(paths.ENV_VAR, str(tmp_path / "empty"))
  assert cli.main(["analyze-backtranslations", "--input", _jsonl(
      tmp_path, [_record(0, "a cat", "a dog")])]) == 0
  out = capsys.readouterr().out
  assert "Table 9" in out and "Table 10" not in out
  assert analysis.NO_REF_PROB in out and "--classifier-workdir" in out


def test_missing_word_list_names_the_setting(tmp_path, monkeypatch, capsys):
  monkeypatch.setenv(paths.ENV_VAR, str(tmp_path / "empty"))
  argv = ["analyze-backtranslations", "--input", _jsonl(
      tmp_path, [_record(0, "a cat", "a dog", ref_prob=0.5)]), "--output",
          str(tmp_path / "out.json")]
  assert cli.main(argv) == cli.EXIT_BAD_INPUT
  err = capsys.readouterr().err
  assert "word_freq/enwiki_vocab_min200.txt.gz: not found" in err
  assert paths.ENV_VAR in err and not (tmp_path / "out.json").exists()


def test_output_rules(tmp_path, capsys):
  data = _jsonl(tmp_path, [_record(0, "a cat", "a dog")])
  out = str(tmp_path / "report.json")
  argv = ["analyze-backtranslations", "--input", data, "--output", out]
  assert cli.main(argv) == 0
  first = open(out).read()
  assert json.loads(first)["table9"]["translation"]["unigram_entropy"] == 1.0
  assert cli.main(argv) == 0 and open(out).read() == first  # same result
  assert cli.main([*argv, "--examples", "1"]) == 0  # no ref_prob: the same
  with open(data, "a") as f:
    f.write(json.dumps(_record(1, "a dog", "a cat cat")) + "\n")
  assert cli.main(argv) == cli.EXIT_BAD_INPUT  # another result: refused
  assert "--overwrite" in capsys.readouterr().err
  assert open(out).read() == first
  assert cli.main([*argv, "--overwrite"]) == 0
  assert json.loads(open(out).read())["pairs"] == 2


def test_negative_examples_refused(tmp_path):
  with pytest.raises(errors.ConfigError, match="--examples -1"):
    analysis.analyze(_jsonl(tmp_path, [_record(0, "a", "b")]), examples=-1)
