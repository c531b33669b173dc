"""Length-sorted padded batches: every sequence once, shapes few and fixed."""
import numpy as np
import pytest

from paraflax.data import batching


def _seqs(lengths):
  return [np.arange(1, n + 1, dtype=np.int32) + 10 * i
          for i, n in enumerate(lengths)]


def test_pad_batch_widths_are_multiples_of_eight():
  ids, lengths = batching.pad_batch([[5, 6, 7], [8]], 4)
  assert ids.shape == (4, 8) and ids.dtype == np.int32
  np.testing.assert_array_equal(lengths, [3, 1, 0, 0])
  np.testing.assert_array_equal(ids[0], [5, 6, 7, 0, 0, 0, 0, 0])
  assert (ids[2:] == batching.PAD).all()
  assert batching.pad_batch([[1] * 9], 1)[0].shape == (1, 16)
  assert batching.pad_batch([[1]], 1, longest=17)[0].shape == (1, 24)
  assert batching.pad_batch([[]], 2)[0].shape == (2, 8)  # never 0 wide


def test_sorted_chunks_by_length_ties_in_input_order():
  chunks = batching.sorted_chunks([3, 1, 2, 1, 3], 2)
  assert [c.tolist() for c in chunks] == [[1, 3], [2, 0], [4]]
  assert batching.sorted_chunks([], 4) == []


@pytest.mark.parametrize("multiple", [1, 3, 8])
def test_sorted_batches_cover_every_sequence_once(multiple):
  lengths = np.random.default_rng(0).integers(0, 30, 50)
  seqs = _seqs(lengths)
  seen, widths = [], []
  for rows, ids, lens in batching.sorted_batches(seqs, 16, multiple):
    # Full-size rows even in the short last batch: one shape per width.
    assert ids.shape[0] == batching.round_up(16, multiple) == len(lens)
    assert ids.shape[1] % batching.QUANTUM == 0
    for j, i in enumerate(rows):
      assert lens[j] == len(seqs[i])
      np.testing.assert_array_equal(ids[j, :lens[j]], seqs[i])
    assert (lens[len(rows):] == 0).all()
    seen += rows.tolist()
    widths.append(ids.shape[1])
  assert sorted(seen) == list(range(50))
  assert [len(seqs[i]) for i in seen] == sorted(lengths.tolist())
  assert widths == sorted(widths)


def test_longer_inputs_are_counted_and_said(caplog):
  with caplog.at_level("WARNING"):
    assert batching.report_longer([3, 9, 10, 11], 10, "words") == 1
  assert ("1 of 4 inputs are longer than data.max_len=10 words and were "
          "truncated") in caplog.text
  caplog.clear()
  assert batching.report_longer([3], 10, "words") == 0
  assert not caplog.text


def test_skipped_pairs_are_said_by_the_same_warning(caplog):
  with caplog.at_level("WARNING"):
    batching.warn_longer(2, 9, 16, "subwords", "pairs", "were skipped",
                         "bitext_wmt_de_en")
  assert ("bitext_wmt_de_en: 2 of 9 pairs are longer than data.max_len=16 "
          "subwords and were skipped") in caplog.text


def test_a_process_reads_its_block_of_the_padded_batch():
  assert batching.process_block(10, 4, (1, 2)) == (6, 6)
  with pytest.raises(ValueError, match="split evenly"):
    batching.process_block(10, 3, (0, 2))
  with pytest.raises(ValueError, match="process 2 of 2"):
    batching.process_block(10, 4, (2, 2))
