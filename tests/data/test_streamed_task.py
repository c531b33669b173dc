"""The back-translated Task read as a stream: the records of the file
read whole, in its order, through every filter, and memory that does not
grow with the file."""
import json
import tracemalloc

import pytest

from paraflax import errors
from paraflax.data import backtranslated
from paraflax.data import filters
from paraflax.data import tasks

_FILTERS = [{}, {"data_filter": {"score": "overlap_1", "lo": 0.2, "hi": 0.6}},
            {"data_filter": {"score": "random"}, "max_pairs": 40, "seed": 3},
            {"data_filter": {"score": "overlap_1", "lo": 0.1, "hi": 0.7},
             "max_pairs": 25, "seed": 1}]


def _records(path, n):
  with open(path, "w", encoding="utf-8") as f:
    for i in range(n):
      f.write(json.dumps({
          "id": i // 2, "reference": f"Die Katze {i % 11} saß {i}.",
          "translation": f"A cat {i % 5} sat.", "rank": i % 2, "cost": 1.0,
          "scores": {"overlap_1": (i % 10) / 10}}, ensure_ascii=False) + "\n")
  return str(path)


def _whole(path, data_filter=None, max_pairs=0, seed=0):
  """The Task's examples from the file read whole into memory."""
  with open(path, encoding="utf-8") as f:
    best = [r for r in map(json.loads, f) if r["rank"] == 0]
  spec = filters.parse(data_filter, max_pairs)
  if spec is not None and spec.bounded:
    best = [r for r in best
            if spec.lo <= r["scores"][spec.score] <= spec.hi]
  if max_pairs:
    keep = filters.draw(len(best), n=max_pairs, seed=seed, what=path)
    best = [r for r, k in zip(best, keep) if k]
  return [{"sentence1": r["reference"], "sentence2": r["translation"]}
          for r in best]


@pytest.mark.parametrize("task", _FILTERS)
def test_the_streamed_task_holds_the_records_of_the_file_read_whole(
    tmp_path, task):
  path = _records(tmp_path / "bt.jsonl", 300)
  name = tasks.register_backtranslated(path, **task)
  want = _whole(path, **task)
  assert tasks.examples(name, "train") == want  # seqio's dataset
  assert [ex for chunk in tasks.iter_examples(name, "train", chunk=7)
          for ex in chunk] == want  # what training reads


def test_a_bad_record_met_while_streaming_names_its_line(tmp_path):
  path = _records(tmp_path / "bt.jsonl", 5000)
  with open(path, "a", encoding="utf-8") as f:
    f.write('{"id": 9999, "reference": "x", "rank": 0}\n')
  name = tasks.register_backtranslated(path)
  with pytest.raises(errors.DataError, match=r"bt\.jsonl:5001: record lacks"):
    tasks.examples(name, "train")


def _peak_bytes(path, task) -> int:
  name = tasks.register_backtranslated(path, **task)
  tracemalloc.start()
  try:
    seqio_count = sum(len(c) for c in tasks.iter_task(name, "train", 50))
    stream_count = sum(len(c) for c in tasks.iter_examples(name, "train",
                                                           chunk=50))
    assert seqio_count == stream_count > 0
    return tracemalloc.get_traced_memory()[1]
  finally:
    tracemalloc.stop()


def test_memory_does_not_grow_with_the_file(tmp_path, monkeypatch):
  # Chunks of 50 rows, so that the 6,000 records fill more of them than
  # the 1,000 do, not a bigger one.
  monkeypatch.setattr(backtranslated, "_BATCH", 50)
  task = _FILTERS[3]  # the bounds, then the draw: two passes over the file
  _peak_bytes(_records(tmp_path / "warm.jsonl", 100), task)  # first calls
  small = _peak_bytes(_records(tmp_path / "small.jsonl", 400), task)
  large = _peak_bytes(_records(tmp_path / "large.jsonl", 2_400), task)
  # Read whole, the 2,000 more records took 700 bytes each or more;
  # streamed, what grows is the (id, rank) check's digests (8 bytes a
  # record, gathered in a set of at most 65,536 first: under 100).
  assert large - small < 2_000 * 150, (small, large)
