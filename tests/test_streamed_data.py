"""Training data streamed into the workdir's encoded cache: the megabatches
of the in-memory path, resumable, rebuilt when the data changes, and a kill
while the cache is written leaves nothing a rerun cannot finish."""
import concurrent.futures
import json
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from paraflax.data import encoded_cache
from paraflax.data import pairs as pairs_lib
from paraflax.data import tasks
from paraflax.data import words
from tests.conftest import ROOT

_MAX_LEN = 12


def _records(path, n, offset=0):
  with open(path, "w", encoding="utf-8") as f:
    for i in range(n):
      # Repeated texts (i % 7) so that the uids' masking has work to do.
      f.write(json.dumps({
          "id": i, "reference": f"The cat {(i + offset) % 7} sat here {i}.",
          "translation": f"A cat {i % 5} sits {(i + offset) % 7}.",
          "rank": 0, "cost": 1.0,
          "scores": {"overlap_1": (i % 10) / 10}}) + "\n")
  return str(path)


def _cached(folder, path, vocab, chunk=16, **task):
  name = tasks.register_backtranslated(path, **task)
  calls = []

  def chunks():
    calls.append(1)
    for part in tasks.iter_examples(name, "train", chunk=chunk):
      yield "0", [(e["sentence1"], e["sentence2"]) for e in part]

  settings = {"files": encoded_cache.stamp_of(tasks.source_files(name)),
              "vocab": encoded_cache.digest(vocab.words)}
  encoded, info = pairs_lib.cached_pairs(str(folder), settings, chunks,
                                         vocab, _MAX_LEN)
  return encoded, info, calls


def _in_memory(path, **task):
  name = tasks.register_backtranslated(path, **task)
  pairs = [(e["sentence1"], e["sentence2"])
           for e in tasks.examples(name, "train")]
  vocab = words.WordVocab.build(s for p in pairs for s in p)
  return pairs, vocab


def _assert_same_megabatches(a, b, ks):
  for k in ks:
    x, y = a.get(k), b.get(k)
    assert x.keys() == y.keys()
    for key in x:
      np.testing.assert_array_equal(x[key], y[key], err_msg=key)


@pytest.mark.parametrize("task", [
    {}, {"data_filter": {"score": "random"}, "max_pairs": 70, "seed": 3},
    {"data_filter": {"score": "overlap_1", "lo": 0.2, "hi": 0.6},
     "max_pairs": 30, "seed": 1}])
def test_streamed_megabatches_equal_the_in_memory_ones(tmp_path, task):
  path = _records(tmp_path / "bt.jsonl", 100)
  pairs, vocab = _in_memory(path, **task)  # seqio's Task, whole
  encoded, info, _ = _cached(tmp_path / "cache", path, vocab, **task)
  assert info["sizes"] == {"0": len(pairs)}
  memory = pairs_lib.encode_pairs(pairs, vocab, _MAX_LEN)
  for name in ("a", "a_len", "b", "b_len", "a_uid", "b_uid"):
    np.testing.assert_array_equal(getattr(encoded, name),
                                  getattr(memory, name))
  options = {"batch": 8, "megabatch": 3, "seed": 5, "scramble": 0.3,
             "shards": 3}
  streamed = pairs_lib.MegabatchStream(encoded, **options)
  _assert_same_megabatches(
      streamed, pairs_lib.MegabatchStream(memory, **options), range(8))
  # Resumed at megabatch 5: the batches of the uninterrupted stream.
  resumed = pairs_lib.MegabatchStream(encoded, **options).from_step(5 * 3)
  for k in range(5, 8):
    got, want = next(resumed), streamed.get(k)
    for key in want:
      np.testing.assert_array_equal(got[key], want[key])


def test_cache_is_reused_and_rebuilt_when_the_data_changes(tmp_path):
  path = _records(tmp_path / "bt.jsonl", 40)
  _, vocab = _in_memory(path)
  first, _, calls = _cached(tmp_path / "cache", path, vocab)
  assert len(calls) == 1
  again, _, calls = _cached(tmp_path / "cache", path, vocab)
  assert not calls  # same file, same vocabulary: read back
  np.testing.assert_array_equal(first.a, again.a)
  _records(path, 41, offset=1)  # another file by the same name
  os.utime(path, ns=(1, 1))
  changed, _, calls = _cached(tmp_path / "cache", path, vocab)
  assert len(calls) == 1 and len(changed) == 41
  other_vocab = words.WordVocab.build(["the cat"])
  _, _, calls = _cached(tmp_path / "cache", path, other_vocab)
  assert len(calls) == 1


_WRITE = """
import json, sys
import numpy as np
from paraflax.data import pairs, words
texts = [(f"a b {i % 9}", f"c {i}") for i in range(50)]
vocab = words.WordVocab.build(s for p in texts for s in p)
def chunks():
  for i in range(0, 50, 10):
    yield "0", texts[i:i + 10]
enc, info = pairs.cached_pairs(sys.argv[1], {"v": 1}, chunks, vocab, 6)
print(json.dumps([len(enc), np.asarray(enc.a).tolist(),
                  np.asarray(enc.b_uid).tolist()]))
"""


def _write(folder, crash_at=None):
  env = dict(os.environ, PARAFLAX_CRASH_AT=crash_at or "")
  return subprocess.run([sys.executable, "-c", _WRITE, str(folder)],
                        cwd=ROOT, env=env, capture_output=True, text=True,
                        check=False)


@pytest.mark.parametrize("moment", ["data_cache.chunk:3",
                                    "data_cache.written:1",
                                    "data_cache.renamed:1"])
def test_a_kill_while_the_cache_is_written_is_finished_by_a_rerun(
    tmp_path, moment):
  expected = _write(tmp_path / "whole" / "pairs")
  assert expected.returncode == 0, expected.stderr
  folder = tmp_path / "killed" / "pairs"
  assert _write(folder, moment).returncode == -9
  rerun = _write(folder)
  assert rerun.returncode == 0, rerun.stderr
  assert rerun.stdout == expected.stdout
  # Only the finished cache is left: the killed run's partial is gone (a
  # builder killed after the rename leaves its lock file, empty of data).
  assert set(os.listdir(folder.parent)) - {"pairs.lock"} == {"pairs"}


def test_processes_that_share_the_folder_build_the_cache_once(tmp_path):
  """The second waits for the first's build and reads it."""
  texts = [(f"a b {i % 9}", f"c {i}") for i in range(50)]
  vocab = words.WordVocab.build(s for p in texts for s in p)
  builds, started = [], threading.Event()

  def chunks():
    builds.append(1)
    started.set()
    time.sleep(0.5)  # the other process arrives while this one builds
    yield "0", texts

  def build():
    return pairs_lib.cached_pairs(str(tmp_path / "pairs"), {"v": 1}, chunks,
                                  vocab, 6)[0]

  with concurrent.futures.ThreadPoolExecutor(2) as pool:
    first = pool.submit(build)
    started.wait(10)
    second = pool.submit(build)
    a, b = first.result(), second.result()
  assert len(builds) == 1
  np.testing.assert_array_equal(np.asarray(a.a), np.asarray(b.a))
  assert os.listdir(tmp_path) == ["pairs"]  # the lock file removed


def test_subwords_train_on_all_pairs_or_a_seeded_sample():
  from paraflax.data import sentencepiece_vocab  # pylint: disable=g-import-not-at-top
  pairs = [(f"s{i}", f"t{i}") for i in range(500)]
  assert sentencepiece_vocab.sample(iter(pairs), 500) == pairs  # all
  drawn = sentencepiece_vocab.sample(iter(pairs), 100)
  assert drawn == sentencepiece_vocab.sample(pairs, 100)  # by the seed
  assert len(set(drawn)) == 100 and drawn == sorted(drawn, key=pairs.index)
  assert 150 < np.mean([pairs.index(p) for p in drawn]) < 350


def test_repeated_records_are_found_in_digests(tmp_path, monkeypatch):
  from paraflax import errors  # pylint: disable=g-import-not-at-top
  from paraflax.data import jsonl  # pylint: disable=g-import-not-at-top
  from paraflax.data import records  # pylint: disable=g-import-not-at-top
  monkeypatch.setattr(records.UniqueRecords, "_PENDING", 4)  # sorted too
  path = tmp_path / "bt.jsonl"
  rows = [{"id": i, "reference": "a", "translation": "b", "rank": 0}
          for i in (*range(20), 3)]
  path.write_text("".join(json.dumps(r) + "\n" for r in rows))
  with pytest.raises(errors.DataError, match=r"bt.jsonl:21: the record of id "
                     r"3, rank 0 is there already, at line 4"):
    list(jsonl.iter_jsonl(path, keys=("reference",)))
  path.write_text("".join(json.dumps(r) + "\n" for r in rows[:20]))
  assert len(list(jsonl.iter_jsonl(path, keys=("reference",)))) == 20


def test_processes_that_share_the_subword_cache_train_a_model_once(
    tmp_path, monkeypatch):
  from paraflax.data import sentencepiece_vocab  # pylint: disable=g-import-not-at-top
  trainer = sentencepiece_vocab.spm.SentencePieceTrainer
  trained, started = [], threading.Event()

  def slow_train(**kwargs):
    trained.append(1)
    started.set()
    time.sleep(0.5)  # the other process arrives while this one trains
    return original(**kwargs)

  original = trainer.train
  monkeypatch.setattr(trainer, "train", slow_train)
  texts = [f"der hund {i} sieht die katze {i % 7}" for i in range(300)]

  def train():
    return sentencepiece_vocab.train(texts, vocab_size=40,
                                     cache_dir=tmp_path / "spm")

  with concurrent.futures.ThreadPoolExecutor(2) as pool:
    first = pool.submit(train)
    started.wait(30)
    second = pool.submit(train)
    paths = {first.result(), second.result()}
  assert len(trained) == 1 and len(paths) == 1
  assert os.listdir(tmp_path / "spm") == [paths.pop().name]
