"""NMT and bilingual training pairs streamed into the workdir's encoded
cache: the batches of the in-memory path (pinned from it), resumable at a
step, the cache reused or rebuilt, and a kill while it is written leaves
a workdir the same build finishes."""
import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from paraflax import config as config_lib
from paraflax.data import bitext
from paraflax.data import tasks
from paraflax.training import partitioning
from tests.conftest import ROOT
from tests.conftest import multi30k_val

# sha256[:16] of the batches of steps _STEPS, from the recipes' in-memory
# path before the pairs were streamed (400 multi30k train pairs, 230 kept
# at 40 subwords), at the settings of `_config`.
_STEPS = (0, 1, 2, 3, 49, 50, 51, 120)
_PINNED = {
    "nmt": ["c574f7511348beb0", "5bd54bce0079508e", "9cb1d256b8888b22",
            "cd829b48a6b300fc", "5f38a7e79898898e", "82f166116d668e3d",
            "46c3f9d18e8d813f", "eb9e8200ab4d597c"],
    "bilingual": ["392be4944140680e", "d8ea2d4ce07cd447", "7987558ea8c5b8b3",
                  "a5de33a2e576e17a", "b4df3db51eb66935", "d526e1425976465d",
                  "62166b61965290d8", "706f6a0dd9a7c9fb"]}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
  import gzip  # pylint: disable=g-import-not-at-top
  from paraflax.data import paths  # pylint: disable=g-import-not-at-top
  folder = tmp_path_factory.mktemp("bitext")
  sides = []
  for lang in ("de", "en"):
    with gzip.open(paths.data_path("multi30k_task1", f"train.{lang}.gz"),
                   "rt", encoding="utf-8") as f:
      sides.append(f.read().splitlines()[:400])
  train = folder / "train.tsv"
  train.write_text("".join(f"{s}\t{t}\n" for s, t in zip(*sides)), "utf-8")
  de, en = multi30k_val(folder, 8)
  dev = folder / "dev.tsv"
  dev.write_text("".join(
      f"{s}\t{t}\n" for s, t in zip(de.read_text("utf-8").splitlines(),
                                    en.read_text("utf-8").splitlines())),
                 "utf-8")
  return train, dev


def _config(recipe, data):
  config = config_lib.load(f"{ROOT}/configs/{recipe}.py:de")
  config.data.train = (f"tsv:{data[0]}",)
  config.data.dev = f"tsv:{data[1]}"
  config.vocab.size = 200
  config.data.max_len = 40
  config.batch_size = 8
  config.mesh.num_devices = 1
  return config


def _build(recipe, data, workdir):
  from paraflax.recipes import bilingual  # pylint: disable=g-import-not-at-top
  from paraflax.recipes import nmt  # pylint: disable=g-import-not-at-top
  module = {"nmt": nmt, "bilingual": bilingual}[recipe]
  return module.build(_config(recipe, data), str(workdir),
                      partitioning.make_mesh(1))


def _digest(batch):
  h = hashlib.sha256()
  for key in sorted(batch):
    h.update(key.encode())
    h.update(np.ascontiguousarray(batch[key]).tobytes())
    h.update(str(batch[key].shape).encode())
  return h.hexdigest()[:16]


@pytest.mark.parametrize("recipe", ["nmt", "bilingual"])
def test_streamed_batches_are_those_of_the_in_memory_path(
    data, tmp_path, recipe):
  stream = _build(recipe, data, tmp_path / "w").stream
  assert [_digest(stream.get(s)) for s in _STEPS] == _PINNED[recipe]
  # Resumed at step 50: the batches of the uninterrupted stream, and the
  # cache read back, not built again.
  again = _build(recipe, data, tmp_path / "w").stream.from_step(50)
  assert [_digest(next(again)) for _ in range(2)] == _PINNED[recipe][5:7]
  assert sorted(os.listdir(tmp_path / "w" / "data_cache")) == ["bitext"]


def test_the_cache_is_reused_and_rebuilt_when_the_data_changes(
    data, tmp_path, monkeypatch):
  _build("nmt", data, tmp_path / "w")
  passes = []
  real = tasks.iter_examples

  def counted(*args, **kwargs):
    passes.append(args[0])
    return real(*args, **kwargs)

  monkeypatch.setattr(tasks, "iter_examples", counted)
  _build("nmt", data, tmp_path / "w")
  assert not passes  # models and cache there: nothing read
  changed = tmp_path / "train.tsv"
  changed.write_text(data[0].read_text("utf-8").replace("Zwei", "Drei"),
                     "utf-8")
  stream = _build("nmt", (changed, data[1]), tmp_path / "w").stream
  assert len(passes) == 1  # the models stay: one pass, the encoding
  from paraflax.data import sentencepiece_vocab  # pylint: disable=g-import-not-at-top
  src_sp, tgt_sp = sentencepiece_vocab.load_pair(str(tmp_path / "w"))
  pairs = [tuple(line.split("\t"))
           for line in changed.read_text("utf-8").splitlines()]
  config = _config("nmt", data)
  want = bitext.encode(pairs, src_sp.encode, tgt_sp.encode,
                       config.data.max_len, config.data.too_long, "train")
  assert len(stream.data) == len(want) != 230
  for got, expected in ((stream.data.src, want.src),
                        (stream.data.tgt, want.tgt)):
    for i in (0, 100, len(want) - 1):
      np.testing.assert_array_equal(got[i], expected[i])


def test_bilingual_sentences_chain_the_targets_and_the_mono_text():
  first = (np.arange(3), np.arange(5))
  second = (np.arange(2),)
  chained = bitext.Chained(first, second)
  assert len(chained) == 3
  np.testing.assert_array_equal(chained[2], np.arange(2))
  np.testing.assert_array_equal(chained.lengths(np.array([2, 0, 1])),
                                [2, 3, 5])


_WRITE = """
import json, sys
from paraflax.data import bitext
pairs = [(f"a b {i % 9}", f"c {i}" + " d" * (i % 4)) for i in range(50)]
encode = lambda text: [len(word) + 2 for word in text.split()]
def chunks():
  for i in range(0, 50, 10):
    yield pairs[i:i + 10]
cache = bitext.cached(sys.argv[1], {"v": 1}, chunks, encode, encode, 4,
                      "skip", "train")
print(json.dumps([[cache[side][i].tolist() for side in ("src", "tgt")]
                  for i in range(cache.rows)]))
"""


@pytest.mark.parametrize("moment", ["data_cache.chunk:3",
                                    "data_cache.written:1"])
def test_a_kill_while_the_cache_is_written_is_finished_by_a_rerun(
    tmp_path, moment):
  folder = tmp_path / "data_cache" / "bitext"

  def run(crash_at=""):
    env = dict(os.environ, PARAFLAX_CRASH_AT=crash_at)
    return subprocess.run([sys.executable, "-c", _WRITE, str(folder)],
                          cwd=ROOT, env=env, capture_output=True, text=True,
                          check=False)

  assert run(moment).returncode == -9
  rerun = run()
  assert rerun.returncode == 0, rerun.stderr
  pairs = [(f"a b {i % 9}", f"c {i}" + " d" * (i % 4)) for i in range(50)]
  encode = lambda text: [len(word) + 2 for word in text.split()]
  want = bitext.encode(pairs, encode, encode, 4, "skip", "train")
  assert json.loads(rerun.stdout) == [
      [s.tolist(), t.tolist()] for s, t in zip(want.src, want.tgt)]
  assert len(want) < 50  # some skipped
  assert os.listdir(folder.parent) == ["bitext"]  # the partial is gone


@pytest.mark.parametrize("name,split", [
    ("bitext_multi30k_de_en", "train"),
    ("bitext_newstest_dev_de_en", "newstest2013"),
    ("bitext_opennmt_wmt_de_en", "train")])
def test_a_split_streams_the_rows_it_reads_whole(name, split):
  from paraflax.data import corpora  # pylint: disable=g-import-not-at-top
  corpus = corpora.get(name)
  assert list(corpora.iter_rows(corpus, split)) == list(
      zip(*corpora.read(corpus, split).values()))


def test_an_empty_line_of_a_streamed_spec_stops_at_its_file_and_line(
    tmp_path):
  from paraflax import errors  # pylint: disable=g-import-not-at-top
  src, tgt = tmp_path / "x.de", tmp_path / "x.en"
  src.write_text("eins\nzwei\n\nvier\n", encoding="utf-8")
  tgt.write_text("one\ntwo\nthree\nfour\n", encoding="utf-8")
  with pytest.raises(errors.DataError,
                     match=rf"{src} line 3\. Remove those rows"):
    list(tasks.iter_examples(f"lines:{src},{tgt}", "train"))
  tgt.write_text("one\ntwo\nthree\n", encoding="utf-8")
  src.write_text("eins\nzwei\ndrei\nvier\n", encoding="utf-8")
  with pytest.raises(errors.DataError,
                     match=rf"{tgt} has 3 lines but {src} has 4 lines.*Line 4"):
    list(tasks.iter_examples(f"lines:{src},{tgt}", "train"))
