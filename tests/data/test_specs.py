"""Data specs: a user's files, file patterns, gfile URLs and TFDS datasets
read as the bundled corpora are, and the checks made before any work."""
from __future__ import annotations

import gzip
import pathlib

import pytest

from paraflax import errors
from paraflax.data import corpora
from paraflax.data import readers
from paraflax.data import specs
from paraflax.data import tasks

RU = [("Привет, мир.", "Hello, world."), ("Кошка спит.", "The cat sleeps."),
      ("Я читаю книгу.", "I am reading a book.")]


def _tsv(path: pathlib.Path, rows, extra: str | None = None) -> pathlib.Path:
  text = "".join("\t".join((*r, *([extra] if extra else []))) + "\n"
                 for r in rows)
  path.write_bytes(gzip.compress(text.encode()) if path.suffix == ".gz"
                   else text.encode())
  return path


def test_tsv_shards_plain_and_gzip_in_sorted_order(tmp_path):
  _tsv(tmp_path / "b.tsv.gz", RU[2:])
  _tsv(tmp_path / "a.tsv", RU[:2])
  assert specs.pairs(f"tsv:{tmp_path}/*.tsv*") == RU
  rows = tasks.examples(f"tsv:{tmp_path}/*.tsv*", "train")
  assert [(r["source"], r["target"]) for r in rows] == RU


def test_tsv_columns_pick_from_wider_rows(tmp_path):
  _tsv(tmp_path / "c.tsv", [(e, "0.9", x) for x, e in RU])
  assert specs.pairs(f"tsv:{tmp_path}/c.tsv:2,0") == RU
  text = specs.read(f"tsv:{tmp_path}/c.tsv:0", corpora.MONO)
  assert text == {"text": [e for _, e in RU]}


def test_a_tsv_row_with_another_column_count_is_named(tmp_path):
  _tsv(tmp_path / "c.tsv", RU, extra="x")
  with pytest.raises(errors.DataError, match=r"c\.tsv:1: expected 2 "
                     r"tab-separated fields, found 3"):
    specs.pairs(f"tsv:{tmp_path}/c.tsv")


def test_lines_pairs_shards_by_sorted_name(tmp_path):
  for i, (x, e) in enumerate(RU):
    (tmp_path / f"part{i}.ru").write_text(x + "\n")
    (tmp_path / f"part{i}.en").write_text(e + "\n")
  assert specs.pairs(f"lines:{tmp_path}/*.ru,{tmp_path}/*.en") == RU


@pytest.mark.parametrize("spec, message", [
    ("tsv:{t}/none*.tsv", r"none\*\.tsv matches no file"),
    ("lines:{t}/a.ru", r"1 file pattern\(s\), but this data needs 2"),
    ("lines:{t}/a.ru,{t}/*.en", r"the patterns match 1 and 2 files"),
    ("tsv:{t}/a.ru:0,1,2", r"3 column\(s\) named, but this data needs 2"),
    ("tfds:wmt19_translate", r"name the dataset and its config"),
    ("bitext_nothing_xx_en", r"not a catalogued corpus"),
    ("bitext_multi30k_de_en:nosplit", r"has no split 'nosplit'"),
])
def test_a_spec_that_names_nothing_stops_before_reading(spec, message,
                                                        tmp_path):
  for name in ("a.ru", "a.en", "b.en"):
    (tmp_path / name).write_text("x\n")
  with pytest.raises((errors.ConfigError, errors.DataError), match=message):
    specs.parse(spec.format(t=tmp_path))


def test_gfile_urls_read_as_local_files():
  tf = pytest.importorskip("tensorflow")
  tf.io.gfile.makedirs("ram://bitext")
  with tf.io.gfile.GFile("ram://bitext/ru-en.tsv.gz", "wb") as f:
    f.write(gzip.compress("".join(f"{x}\t{e}\n" for x, e in RU).encode()))
  assert specs.pairs("tsv:ram://bitext/*.tsv.gz") == RU
  assert readers.read_lines("ram://bitext/ru-en.tsv.gz")[0][0] == \
      "\t".join(RU[0])


def test_a_catalogued_name_gives_the_examples_it_gave(monkeypatch):
  name, split = "bitext_newstest_dev_de_en", "newstest2013"
  before = corpora.read(corpora.get(name), split)
  assert specs.read(f"{name}:{split}") == before
  rows = tasks.examples(f"{name}:{split}", "train")
  assert rows == tasks.examples(name, split)
  assert [r["source"] for r in rows] == before["source"]


def test_tfds_dataset_prepared_offline(tmp_path, monkeypatch, cut,
                                       sample_root):
  tfds = pytest.importorskip("tensorflow_datasets")
  from paraflax.data import tfds_builder  # pylint: disable=g-import-not-at-top
  for side in ("src", "tgt"):
    cut(f"opennmt_wmt_ende_10k/{side}-train.txt.gz", 3)
    cut(f"opennmt_wmt_ende_10k/{side}-val.txt", 5)
  builder = tfds_builder.ParallelText(config="opennmt_wmt_de_en",
                                      data_dir=tmp_path / "tfds")
  builder.download_and_prepare(download_config=tfds.download.DownloadConfig(
      manual_dir=sample_root))
  monkeypatch.setenv("TFDS_DATA_DIR", str(tmp_path / "tfds"))
  got = specs.pairs("tfds:parallel_text/opennmt_wmt_de_en:validation")
  want = corpora.read(corpora.get("bitext_opennmt_wmt_de_en"), "validation",
                      sample_root)
  assert got == list(zip(want["source"], want["target"])) and len(got) == 5


def test_dev_pairs_in_the_training_data_stop_unless_allowed():
  with pytest.raises(errors.DataError, match=r"data.dev=d: 1 of its 2 pairs "
                     r"are in data.train too"):
    list(specs.DevOverlap([RU[0], ("x", "y")], "d", allowed=False).watch(
        [RU[1:], RU[:1]]))  # found in the second chunk of the stream
  checked = specs.DevOverlap([RU[0], ("x", "y")], "d", allowed=True)
  assert list(checked.watch([RU])) == [RU] and checked.checked


def test_paraflax_tasks_shows_what_a_spec_names(tmp_path, capsys):
  from paraflax import cli  # pylint: disable=g-import-not-at-top
  _tsv(tmp_path / "a.tsv", RU)
  assert cli.main(["tasks", "--data", f"tsv:{tmp_path}/a.tsv"]) == 0
  out = capsys.readouterr().out
  assert "3 rows from 1 part(s)" in out and "Привет, мир. ||| Hello" in out
