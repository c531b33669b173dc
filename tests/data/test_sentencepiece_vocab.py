"""SentencePiece training on real English, with the content-keyed cache."""
from __future__ import annotations

import pytest
import sentencepiece as spm

from paraflax.data import paths
from paraflax.data import readers
from paraflax.data import sentencepiece_vocab

VOCAB = 400


@pytest.fixture(scope="module")
def lines() -> list[str]:
  all_lines, _ = readers.read_lines(
      paths.data_path("multi30k_task1", "train.en.gz"))
  return all_lines[:2050]


@pytest.fixture(scope="module")
def model(lines, tmp_path_factory):
  return sentencepiece_vocab.train(
      lines[:2000], vocab_size=VOCAB,
      cache_dir=tmp_path_factory.mktemp("spm"))


def test_round_trip(model, lines):
  vocab = sentencepiece_vocab.load(model)
  assert vocab.vocab_size == VOCAB
  assert (vocab.pad_id, vocab.eos_id, vocab.unk_id) == (0, 1, 2)
  for text in lines[2000:]:  # unseen sentences
    ids = vocab.encode(text)
    assert ids and max(ids) < VOCAB
    assert vocab.decode(ids) == text


@pytest.fixture
def no_training(monkeypatch):
  def fail(**_):
    raise AssertionError("retrained instead of using the cache")
  monkeypatch.setattr(spm.SentencePieceTrainer, "train", fail)


@pytest.mark.usefixtures("no_training")
def test_cache_hit_does_not_retrain(model, lines):
  again = sentencepiece_vocab.train(lines[:2000], vocab_size=VOCAB,
                                    cache_dir=model.parent)
  assert again == model
  assert sorted(p.name for p in model.parent.iterdir()) == [model.name]


@pytest.mark.usefixtures("no_training")
def test_file_input_shares_the_cache_key(model, lines, tmp_path):
  path = tmp_path / "train.en"
  path.write_text("".join(l + "\n" for l in lines[:2000]), encoding="utf-8")
  assert sentencepiece_vocab.train(
      [path], vocab_size=VOCAB, cache_dir=model.parent) == model


def test_deterministic_and_keyed_by_options(model, lines, tmp_path):
  fresh = sentencepiece_vocab.train(lines[:2000], vocab_size=VOCAB,
                                    cache_dir=tmp_path)
  assert fresh.name == model.name
  assert fresh.read_bytes() == model.read_bytes()
  bpe = sentencepiece_vocab.train(lines[:2000], vocab_size=VOCAB,
                                  model_type="bpe", cache_dir=tmp_path)
  assert bpe != fresh and bpe.exists()


def _pair(workdir, lines):
  pairs = list(zip(lines[:1000], lines[1000:2000]))
  return sentencepiece_vocab.pair(str(workdir), pairs, size=VOCAB,
                                  model_type="unigram", joint=False)


def test_workdirs_share_the_trained_pair(lines, tmp_path, monkeypatch):
  monkeypatch.setenv(sentencepiece_vocab.ENV, str(tmp_path / "cache"))
  first = _pair(tmp_path / "a", lines)
  assert len(list((tmp_path / "cache").glob("*.model"))) == 2
  monkeypatch.setattr(spm.SentencePieceTrainer, "train", None)  # no call
  second = _pair(tmp_path / "b", lines)
  for name in (sentencepiece_vocab.SRC_MODEL, sentencepiece_vocab.TGT_MODEL):
    assert (tmp_path / "b" / name).read_bytes() == \
        (tmp_path / "a" / name).read_bytes()
  assert [m.id_to_piece(5) for m in second] == \
      [m.id_to_piece(5) for m in first]
  assert not (tmp_path / "b" / "spm_cache").exists()


def test_off_keeps_the_models_in_the_workdir(lines, tmp_path, monkeypatch):
  monkeypatch.setenv(sentencepiece_vocab.ENV, "off")
  _pair(tmp_path / "w", lines)
  assert len(list((tmp_path / "w" / "spm_cache").glob("*.model"))) == 2
