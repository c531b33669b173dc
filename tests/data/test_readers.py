"""Readers on the real quirks of the shared corpora."""
from __future__ import annotations

import gzip
import math
import pathlib
import re

import pytest

from paraflax import errors
from paraflax.data import paths
from paraflax.data import readers
from paraflax.data import sts

OPENNMT = "opennmt_wmt_ende_10k"


def test_invalid_utf8_names_file_and_line():
  path = paths.data_path("mono_en_domains", "abc_science.txt.gz")
  with pytest.raises(errors.DataError) as e:
    readers.read_lines(path)
  assert f"{path}:613:" in str(e.value)
  assert "0xb0" in str(e.value)


def test_single_empty_line_errors_by_default():
  path = paths.data_path(OPENNMT, "src-train.txt.gz")
  with pytest.raises(errors.DataError, match=r"1 empty line\(s\) at line 5\b"):
    readers.read_lines(path)


def test_single_empty_line_dropped_with_report(caplog):
  path = paths.data_path(OPENNMT, "src-train.txt.gz")
  lines, report = readers.read_lines(path, empty="drop")
  assert (len(lines), report.lines) == (9999, 10000)
  assert (report.empty_lines, report.dropped) == ((5,), 1)
  assert "dropped 1 empty line(s) at line 5" in caplog.text


def test_parallel_drop_keeps_alignment():
  de, en = (paths.data_path(OPENNMT, f) for f in
            ("tgt-train.txt.gz", "src-train.txt.gz"))
  with pytest.raises(errors.DataError, match="src-train.txt.gz line 5"):
    readers.read_parallel([de, en])
  rows, reports = readers.read_parallel([de, en], empty="drop")
  de_lines, _ = readers.read_lines(de)
  assert len(rows) == 9999
  assert rows[4][0] == de_lines[5]  # German line 6 now pairs at index 4
  assert [r.dropped for r in reports] == [1, 1]


def test_ragged_parallel_names_both_files(cut):
  de = cut("multi30k_task1/val.de.gz", 20)
  en = cut("multi30k_task1/val.en.gz", 20, skip=7)
  with pytest.raises(errors.DataError) as e:
    readers.read_parallel([de, en])
  message = str(e.value)
  assert str(de) in message and str(en) in message
  assert "20 lines" in message and "has 19" in message


def test_iter_parallel_streams_what_read_parallel_drops(cut, caplog):
  de, en = (paths.data_path(OPENNMT, f) for f in
            ("tgt-train.txt.gz", "src-train.txt.gz"))
  rows, _ = readers.read_parallel([de, en], empty="drop")
  assert list(readers.iter_parallel([de, en])) == rows
  assert "dropped 1 row(s) with an empty side" in caplog.text
  short = cut("multi30k_task1/val.en.gz", 20, skip=7)
  long = cut("multi30k_task1/val.de.gz", 20)
  streamed = readers.iter_parallel([long, short])
  assert len([next(streamed) for _ in range(19)]) == 19
  with pytest.raises(errors.DataError, match=f"{short} has 19 lines but "
                     f"{long} has 20 lines.*Line 20 of {long} has no "
                     "partner"):
    next(streamed)


def test_missing_file(tmp_path):
  path = tmp_path / "nope.txt"
  with pytest.raises(errors.DataError, match=re.escape(f"{path}: file not "
                                                        "found")):
    readers.read_lines(path)


def test_gzip_detected_by_content_not_name(cut, tmp_path):
  sample = cut("multi30k_task1/val.en.gz", 30)
  expected, _ = readers.read_lines(sample)
  plain_named_gz = tmp_path / "plain.gz"
  plain_named_gz.write_bytes(gzip.decompress(sample.read_bytes()))
  gz_named_txt = tmp_path / "packed.txt"
  gz_named_txt.write_bytes(sample.read_bytes())
  assert readers.read_lines(plain_named_gz)[0] == expected
  assert readers.read_lines(gz_named_txt)[0] == expected
  assert len(expected) == 30


@pytest.mark.parametrize("damage, found", [
    (lambda l: l.replace("\t", " ", 1), 2),
    (lambda l: l + "\textra", 4),
])
def test_tsv_field_count_error_names_line(cut, damage, found):
  path = cut("mono_en_domains/brown.genre_fileid_sent.tsv.gz", 10)
  lines, _ = readers.read_lines(path)
  lines[2] = damage(lines[2])
  path.write_bytes(gzip.compress("".join(l + "\n" for l in lines).encode()))
  with pytest.raises(errors.DataError,
                     match=re.escape(f"{path}:3: expected 3 tab-separated "
                                     f"fields, found {found}")):
    readers.read_tsv(path, fields=3)


def test_sts15_keeps_unscored_rows_as_nan():
  s = sts.load("STS15.answers-forums")
  assert len(s.scores) == 2000
  assert int(s.scored().sum()) == 375
  assert math.isnan(s.scores[~s.scored()][0])


def test_stsb_train_reads_first_seven_fields():
  path = paths.data_path("sts", "stsbenchmark", "sts-train.csv")
  # Some lines carry two trailing source columns.
  with pytest.raises(errors.DataError, match="expected 7 tab-separated"):
    readers.read_tsv(path, fields=7)
  s = sts.load("STSb.train")
  assert len(s.sentence1) == len(s.scores) == 5749
  assert s.scored().all() and s.scores.min() >= 0 and s.scores.max() <= 5


def test_sick_trial():
  s = sts.load("SICK.trial")
  assert len(s.scores) == 500
  assert s.scores.min() >= 1 and s.scores.max() <= 5


def _overlap_dev_lines(root: pathlib.Path) -> set[int]:
  lines, _ = readers.read_lines(
      root / "stsbenchmark" / "OVERLAP_with_heldout_STS2016.tsv")
  return {int(l.split("\t")[1]) for l in lines if l.startswith("dev\t")}


def test_stsb_dev_tuning_excludes_the_overlap():
  excluded = _overlap_dev_lines(paths.data_path("sts"))
  dev, tuning = sts.load("STSb.dev"), sts.load("STSb.dev-tuning")
  assert len(excluded) == 22
  assert tuning.lines == tuple(n for n in dev.lines if n not in excluded)
  assert len(tuning.scores) == 1500 - 22


@pytest.mark.parametrize("packed", [False, True])
def test_bom_and_crlf_are_removed_the_same_way_and_reported(
    cut, tmp_path, caplog, packed):
  sample = cut("multi30k_task1/val.en.gz", 6)
  expected, _ = readers.read_lines(sample)
  raw = b"\xef\xbb\xbf" + "".join(l + "\r\n" for l in expected).encode()
  path = tmp_path / ("windows.txt.gz" if packed else "windows.txt")
  path.write_bytes(gzip.compress(raw) if packed else raw)
  assert readers.read_lines(path)[0] == expected
  assert f"{path}: removed the UTF-8 byte-order mark" in caplog.text
  assert f"{path}: 6 line(s) end with CRLF (Windows)" in caplog.text
  rows, _ = readers.read_parallel([path, sample])
  assert rows == list(zip(expected, expected))

