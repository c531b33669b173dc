"""PPDB word vectors for GRAN's init: the PPDB Task, the vector
file a workdir exports, and a vocabulary that keeps the file's words."""
import jax
import numpy as np

from paraflax import cli
from paraflax import config as config_lib
from paraflax.data import corpora
from paraflax.data import words
from paraflax.recipes import paraphrase
from paraflax.training import partitioning
from tests.conftest import ROOT
from tests.conftest import TINY


def test_extra_words_follow_the_corpus_words_once():
  vocab = words.WordVocab.build(["the cat", "the dog"],
                                extra=["zebra", "cat", "ant", "zebra"])
  assert vocab.words == ("<pad>", "<unk>", "the", "cat", "dog", "zebra",
                         "ant")
  assert vocab.counts[-2:] == (0, 0)


def test_saved_vectors_load_back(tmp_path):
  vocab = words.WordVocab.build(["b a a"])
  table = np.arange(8, dtype=np.float32).reshape(4, 2) / 7
  path = tmp_path / "v.txt"
  words.save_word_vectors(path, vocab, table)
  assert path.read_text().splitlines()[0] == "2 2"
  assert words.vector_words(path) == ["a", "b"]
  again, found = words.load_word_vectors(path, vocab, dim=2)
  np.testing.assert_allclose(again[2:], table[2:], rtol=1e-5)
  assert found.tolist() == [False, False, True, True]


def test_the_ppdb_task_reads_the_shared_pairs():
  pairs = corpora.read(corpora.get("paraphrase_en_ppdb_lexical"), "train")
  assert len(pairs["sentence1"]) == 210372
  assert all(" " not in w for w in pairs["sentence2"][:1000])


def test_exported_ppdb_vectors_start_gran_with_their_words(tmp_path):
  small = ["--config.model.word_dim=8", "--config.batch_size=50",
           "--config.megabatch=2", "--config.train_steps=4",
           "--config.eval_every=4", "--config.checkpoint.every=4",
           "--config.mesh.num_devices=1"]
  ppdb = str(tmp_path / "ppdb")
  assert cli.main(["train", "--config", str(ROOT / "configs" / "ppdb_words.py"),
                   "--workdir", ppdb] + small) == 0
  assert cli.main(["export-words", "--workdir", ppdb]) == 0
  vectors = f"{ppdb}/{paraphrase.WORD_VECTORS_FILE}"
  config = config_lib.load(str(ROOT / "configs" / "gran.py"), list(TINY) + [
      "--config.model.word_dim=8", f"--config.model.word_vectors={vectors}",
      "--config.data.vocab_from_vectors=True"])
  recipe = paraphrase.build(config, str(tmp_path / "gran"),
                            partitioning.make_mesh(1))
  file_words = words.vector_words(vectors)
  table, found = words.load_word_vectors(vectors, recipe.vocab, 8)
  assert found.sum() == len(file_words)  # every word of the file kept
  word = next(w for w in file_words if recipe.vocab.counts[
      recipe.vocab.id_of(w)] == 0)  # a PPDB word the pairs lack
  row = recipe.vocab.id_of(word)
  init = np.asarray(recipe.init_params(jax.random.key(0))["word_embed"]
                    ["embedding"])
  np.testing.assert_allclose(init[row], table[row])
