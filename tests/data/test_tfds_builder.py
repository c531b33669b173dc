"""The TFDS builder prepared from a sample cut into a temp manual dir."""
from __future__ import annotations

import html

import tensorflow_datasets as tfds

from paraflax.data import corpora
from paraflax.data import readers
from paraflax.data import tfds_builder

OPENNMT = "opennmt_wmt_ende_10k"


def test_prepare_and_load_matches_readers(cut, sample_root, tmp_path):
  # 12 train lines include src-train's empty line 5, dropped by the policy.
  de = cut(f"{OPENNMT}/tgt-train.txt.gz", 12)
  en = cut(f"{OPENNMT}/src-train.txt.gz", 12)
  cut(f"{OPENNMT}/tgt-val.txt", 6)
  cut(f"{OPENNMT}/src-val.txt", 6)
  out = tmp_path / "tfds"
  builder = tfds_builder.ParallelText(config="opennmt_wmt_de_en",
                                      data_dir=out)
  builder.download_and_prepare(download_config=tfds.download.DownloadConfig(
      manual_dir=sample_root))
  loaded = {
      split: list(tfds.as_numpy(tfds.load(
          "parallel_text/opennmt_wmt_de_en", split=split, data_dir=out,
          download=False, try_gcs=False, as_supervised=True)))
      for split in ("train", "validation")}
  loaded = {s: [(x.decode(), y.decode()) for x, y in rows]
            for s, rows in loaded.items()}
  rows, _ = readers.read_parallel([de, en], empty="drop")
  # The corpus reads Moses' escapes (line 1: "Parliament &apos;s") as text.
  expected = [tuple(html.unescape(v) for v in r) for r in rows]
  assert expected != rows
  assert loaded["train"] == expected and len(expected) == 11
  corpus = corpora.get("bitext_opennmt_wmt_de_en")
  val = corpora.read(corpus, "validation", sample_root)
  assert loaded["validation"] == list(zip(val["source"], val["target"]))
  assert len(loaded["validation"]) == 6


def test_one_config_per_bitext_corpus():
  names = {c.name for c in tfds_builder.ParallelText.BUILDER_CONFIGS}
  assert names == {c.name.removeprefix("bitext_")
                   for c in corpora.BITEXT_CORPORA}
  assert "multi30k_cs_en" in names
