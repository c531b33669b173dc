"""The bilingual recipe's two directions and monolingual autoencoding data,
on real multi30k de-en and ABC rural English."""
import gzip
import pathlib

import numpy as np
import pytest

from paraflax import config as config_lib
from paraflax import errors
from paraflax.data import paths
from paraflax.recipes import bilingual
from paraflax.recipes import config_check
from paraflax.training import partitioning

ROOT = pathlib.Path(__file__).resolve().parents[1]
CONFIG = str(ROOT / "configs" / "bilingual.py") + ":de"
SMALL = ("--config.data.train=('bitext_multi30k_de_en',)",
         "--config.vocab.size=600", "--config.model.word_dim=8",
         "--config.model.hidden=8", "--config.data.max_len=16",
         "--config.batch_size=16", "--config.eval.sentences=16",
         "--config.evals.dev.sentences=16",
         "--config.mesh.num_devices=1")


def _recipe(tmp_path, *overrides) -> bilingual.BilingualRecipe:
  config = config_lib.load(CONFIG, [*SMALL, *overrides])
  return bilingual.build(config, str(tmp_path / "w"),
                         partitioning.make_mesh(1))


def _texts(sp, ids_BxT: np.ndarray, lengths_B: np.ndarray) -> list[str]:
  # Targets end in EOS, which the length counts.
  return [sp.decode([int(i) for i in row[:n - 1]])
          for row, n in zip(ids_BxT, lengths_B)]


def _multi30k(lang: str) -> set[str]:
  with gzip.open(paths.data_path("multi30k_task1", f"train.{lang}.gz"), "rt",
                 encoding="utf-8") as f:
    return {" ".join(l.split()) for l in f}


def test_en_xx_encodes_english_and_decodes_german(tmp_path):
  recipe = _recipe(tmp_path, "--config.direction=en_xx")
  assert bilingual.languages(recipe.config) == ("en", "de")
  assert recipe.embedder.encoders["en"][0] == "src"
  assert recipe.embedder.encoders["de"][0] == "tgt"
  german, english = _multi30k("de"), _multi30k("en")
  batch = recipe.stream.get(0)
  tgt_sp = recipe.embedder.encoders["de"][1]
  src_sp = recipe.embedder.encoders["en"][1]
  decoded = _texts(tgt_sp, batch["tgt_out"], batch["tgt_len"])
  assert sum(t in german for t in decoded) >= len(decoded) - 1
  assert not any(t in english for t in decoded)
  # Each batch autoencodes its own German targets.
  assert _texts(tgt_sp, batch["ae_out"], batch["ae_len"]) == decoded
  sources = _texts(src_sp, batch["src"], batch["src_len"] + 1)
  assert sum(t in english for t in sources) >= len(sources) - 1


def test_monolingual_text_joins_the_autoencoder_only(tmp_path):
  plain = _recipe(tmp_path / "a")
  mixed = _recipe(tmp_path / "b",
                  "--config.data.mono_tasks=('mono_en_abc_rural',)")
  pairs = len(plain.stream.pairs.data)
  assert len(mixed.stream.pairs.data) == pairs  # translation: bitext only
  extra = len(mixed.stream.sentences.data) - pairs
  assert extra > 100  # the ABC rural lines of at most 16 subwords
  english = _multi30k("en")
  sp = mixed.embedder.encoders["en"][1]
  autoencoded = []
  for step in range(40):
    batch = mixed.stream.get(step)
    autoencoded += _texts(sp, batch["ae_out"], batch["ae_len"])
  outside = sum(t not in english for t in autoencoded)
  # In expectation extra / (pairs + extra) of them; far from none or all.
  share = extra / (pairs + extra)
  assert 0.5 * share < outside / len(autoencoded) < min(1.0, 2 * share)


def test_monolingual_tasks_must_be_in_the_decoded_language(tmp_path):
  config = config_lib.load(CONFIG, [
      *SMALL, "--config.direction=en_xx",
      "--config.data.mono_tasks=('mono_en_abc_rural',)"])
  with pytest.raises(errors.ConfigError, match="mono_de_"):
    config_check.check(config, str(tmp_path / "w"))
  assert not (tmp_path / "w").exists()


def test_kim2019_preset_lowercases_and_keeps_pairs_of_at_most_max_words(
    tmp_path):
  """configs/papers/kim2019.py: German autoencoded, subword models that
  case-fold what they encode (training, dev and `embed` alike), and only
  pairs whose sides have at most data.max_words tokens."""
  config = config_lib.load(
      str(ROOT / "configs" / "papers" / "kim2019.py") + ":de",
      [*SMALL, "--config.data.max_words=8", "--config.data.max_len=32",
       "--config.train_steps=10", "--config.eval_every=5",
       "--config.checkpoint.every=5"])
  assert config.vocab.model_type == "bpe" and config.vocab.lowercase
  recipe = bilingual.build(config, str(tmp_path / "w"),
                           partitioning.make_mesh(1))
  assert bilingual.languages(recipe.config) == ("en", "de")
  tgt_sp = recipe.embedder.encoders["de"][1]
  src_sp = recipe.embedder.encoders["en"][1]
  assert src_sp.encode("The House") == src_sp.encode("the house")
  for step in range(3):
    batch = recipe.stream.get(step)
    decoded = _texts(tgt_sp, batch["tgt_out"], batch["tgt_len"])
    sources = _texts(src_sp, batch["src"], batch["src_len"] + 1)
    for text in decoded + sources:
      assert text == text.lower() and len(text.split()) <= 8, text
