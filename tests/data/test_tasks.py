"""seqio Tasks over the real corpora, read through the catalogue."""
from __future__ import annotations

import math

import pytest
import seqio

from paraflax.data import corpora
from paraflax.data import jsonl
from paraflax.data import paths
from paraflax.data import readers
from paraflax.data import tasks


@pytest.fixture(scope="module", autouse=True)
def registered():
  tasks.register()


@pytest.mark.parametrize("name, split, count", [
    ("paraphrase_en_generaltest2022_de", "train", 1984),
    ("paraphrase_en_generaltest2022_cs", "train", 1448),
    ("paraphrase_en_wikiauto", "train", 16000),
    ("bitext_multi30k_cs_en", "test_2018_flickr", 1071),
    ("bitext_multi30k_fr_en", "test_2017_mscoco", 461),
    ("bitext_newstest_pool_fr_en", "train", 12070),
    ("bitext_opennmt_wmt_de_en", "train", 9999),  # 1 empty line dropped
    ("bitext_newstest_dev_de_en", "newstest2012", 3003),
    ("mono_en_abc_rural", "train", 17398 - 2424),  # empty lines dropped
    ("mono_en_brown", "train", 57340),
    ("sts_stsb_dev_tuning", "test", 1478),
])
def test_counts(name, split, count):
  assert len(tasks.examples(name, split)) == count


def test_register_is_idempotent():
  tasks.register()
  tasks.register()
  assert set(corpora.catalogue()) <= (set(seqio.TaskRegistry.names())
                                      | set(seqio.MixtureRegistry.names()))


def test_catalogue_names():
  names = set(corpora.catalogue())
  for lang in ("de", "fr", "cs"):
    assert {f"bitext_multi30k_{lang}_en", f"bitext_newstest_pool_{lang}_en",
            f"bitext_newstest_dev_{lang}_en"} <= names
  assert "bitext_opennmt_wmt_de_en" in names
  assert "bitext_opennmt_wmt_fr_en" not in names
  assert {"paraphrase_en_human", "mono_en_news", "sts_sts14_images",
          "sts_stsb_dev_tuning"} <= names
  assert not any("abc_science" in n for n in names)
  assert "test_2017_flickr" not in corpora.get("bitext_multi30k_cs_en").splits


def test_bitext_source_is_the_non_english_side():
  first = tasks.examples("bitext_multi30k_de_en", "validation")[0]
  de, _ = readers.read_lines(paths.data_path("multi30k_task1", "val.de.gz"))
  en, _ = readers.read_lines(paths.data_path("multi30k_task1", "val.en.gz"))
  assert first == {"source": de[0], "target": en[0]}


def test_opennmt_wmt_reads_moses_escapes_as_characters():
  rows = tasks.examples("bitext_opennmt_wmt_de_en", "train")
  assert not any("&apos;" in r["target"] or "&quot;" in r["source"]
                 for r in rows)
  assert "Parliament 's legislative" in rows[0]["target"]
  assert sum('"' in r["source"] for r in rows) == 495


def test_newstest_pool_is_sorted_concatenation():
  rows = tasks.examples("bitext_newstest_pool_de_en", "train")
  assert len(rows) == 24525
  pool = paths.data_path("newstest_train_pool")
  first, _ = readers.read_lines(pool / "news-test2008.deu.gz")
  last, _ = readers.read_lines(pool / "newstest2020.deu-eng.eng.gz")
  assert rows[0]["source"] == first[0]
  assert rows[-1]["target"] == last[-1]


def test_mono_news_deduplicates_keeping_first():
  texts = [ex["text"] for ex in tasks.examples("mono_en_news", "train")]
  assert len(texts) == len(set(texts)) == 31657
  first, _ = readers.read_lines(
      paths.data_path("newstest_train_pool", "news-test2008.eng.gz"))
  unique = list(dict.fromkeys(first))  # news-test2008 repeats 5 lines
  assert len(unique) < len(first)
  assert texts[:len(unique)] == unique


def test_sts_scores_are_floats_with_nan_for_no_gold():
  rows = tasks.examples("sts_sts15_answers_forums", "test")
  assert len(rows) == 2000
  scores = [r["score"] for r in rows]
  assert all(isinstance(s, float) for s in scores)
  assert sum(not math.isnan(s) for s in scores) == 375
  assert set(rows[0]) == {"sentence1", "sentence2", "score"}


def test_mixture_concatenates_members_in_order():
  mixed = tasks.examples("paraphrase_en_human", "train")
  parts = [tasks.examples(n, "train")
           for n in corpora.MIXTURES["paraphrase_en_human"]]
  assert mixed == [ex for p in parts for ex in p]
  mixture = seqio.MixtureRegistry.get("paraphrase_en_human")
  assert mixture.total_rate == 1984 + 1448 + 16000


def test_data_dir_read_at_call_time(cut, sample_root, monkeypatch):
  cut("multi30k_task1/val.de.gz", 7)
  cut("multi30k_task1/val.en.gz", 7)
  real = tasks.examples("bitext_multi30k_de_en", "validation")
  monkeypatch.setenv(paths.ENV_VAR, str(sample_root))
  assert tasks.examples("bitext_multi30k_de_en", "validation") == real[:7]


_WIKIAUTO = ("wikiauto_simplification/"
             "gem2021_full_no_split.valid.complex_simple.tsv.gz")


def test_human_pairs_take_the_filters_of_backtranslated_ones(
    cut, sample_root, monkeypatch, tmp_path):
  from paraflax import errors  # pylint: disable=g-import-not-at-top
  from paraflax.data import words  # pylint: disable=g-import-not-at-top
  from paraflax.filtering import score_paraphrases  # pylint: disable=g-import-not-at-top
  cut(_WIKIAUTO, 40)
  monkeypatch.setenv(paths.ENV_VAR, str(sample_root))
  human = tasks.examples("paraphrase_en_wikiauto", "train")
  out, scored = tmp_path / "human.jsonl", tmp_path / "human.scored.jsonl"
  assert tasks.export_pairs("paraphrase_en_wikiauto", str(out)) == 40
  records = jsonl.read_jsonl(str(out), keys=("id", "reference",
                                             "translation", "rank", "cost"))
  assert [(r["reference"], r["translation"]) for r in records] == [
      (ex["sentence1"], ex["sentence2"]) for ex in human]
  assert {(r["rank"], r["cost"]) for r in records} == {(0, None)}
  before = out.read_bytes()
  tasks.export_pairs("paraphrase_en_wikiauto", str(out))  # a rerun: the same
  assert out.read_bytes() == before

  score_paraphrases.score_file(str(out), str(scored))
  lengths = [len(words.tokenize(ex["sentence2"])) for ex in human]
  lo, hi = sorted(lengths)[10], sorted(lengths)[30]
  name = tasks.register_backtranslated(
      str(scored), dict(score="length", lo=lo, hi=hi))
  assert tasks.examples(name, "train") == [
      ex for ex, n in zip(human, lengths) if lo <= n <= hi]
  with pytest.raises(errors.DataError, match=r"human\.scored\.jsonl:1: "
                     r"scores\.cost is null"):
    tasks.examples(tasks.register_backtranslated(
        str(scored), dict(score="cost", lo=0, hi=1)), "train")


def test_only_paraphrase_tasks_are_exported(tmp_path):
  from paraflax import errors  # pylint: disable=g-import-not-at-top
  with pytest.raises(errors.ConfigError, match="not a paraphrase Task"):
    tasks.export_pairs("bitext_multi30k_de_en", str(tmp_path / "x.jsonl"))
  assert not (tmp_path / "x.jsonl").exists()


def test_a_split_drops_the_rows_its_held_out_sets_hold(tmp_path, caplog):
  for name, lines in {"t.de": "Ja.\nHaus\n", "t.en": "Yes.\nhouse\n",
                      "d.de": "Ja.\n", "d.en": "Yes.\n"}.items():
    (tmp_path / name).write_text(lines)
  corpus = corpora.Corpus("bitext_x_de_en", ("source", "target"), {
      "train": corpora.Split((corpora.Lines(("t.de", "t.en")),),
                             held_out=(corpora.Lines(("d.de", "d.en")),))})
  read = corpora.read(corpus, "train", tmp_path)
  assert read == {"source": ["Haus"], "target": ["house"]}
  assert list(corpora.iter_rows(corpus, "train", tmp_path)) == [
      ("Haus", "house")]
  assert "bitext_x_de_en/train: dropped 1 row(s)" in caplog.text
  assert corpora.files(corpus, "train", tmp_path)[-1].endswith("d.en")


def test_the_newstest_pool_holds_no_pair_of_the_dev_sets():
  pool = corpora.read(corpora.get("bitext_newstest_pool_cs_en"), "train")
  pairs = set(zip(pool["source"], pool["target"]))
  for year in ("newstest2012", "newstest2013"):
    dev = corpora.read(corpora.get("bitext_newstest_dev_cs_en"), year)
    assert not pairs & set(zip(dev["source"], dev["target"]))
