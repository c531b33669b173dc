"""Bilingual autoencoder (Kim et al. 2019): max-pooling, the recipe on a tiny
model of real multi30k de-en, resume, sharding and `embed --lang`."""
import functools
import gzip
import json
import shutil

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from paraflax import cli
from paraflax.data import bitext
from paraflax.data import paths
from paraflax.data import sentencepiece_vocab
from paraflax.models import bilingual as model_lib
from paraflax.recipes import bilingual
from paraflax.recipes import workdir as workdir_lib
from paraflax.training import checkpointing
from paraflax.training import loop
from paraflax.training import partitioning
from tests.conftest import random_bilingual

from tests.conftest import BILINGUAL_STEPS as STEPS
from tests.conftest import train_bilingual as _train


@pytest.fixture(scope="module")
def workdir(bilingual_workdir):
  return bilingual_workdir


def _metrics(workdir) -> list[dict]:
  return [json.loads(l) for l in
          (workdir / "metrics.jsonl").read_text().splitlines()]


def _lines(lang: str, n: int) -> list[str]:
  with gzip.open(paths.data_path("multi30k_task1", f"val.{lang}.gz"), "rt",
                 encoding="utf-8") as f:
    return f.read().splitlines()[:n]


@pytest.fixture(scope="module")
def tiny():
  """A small model with random parameters (no compiled init)."""
  return random_bilingual(30, 40, 8, 6)


def test_max_pool_ignores_padding(tiny):
  model, params = tiny
  embed = jax.jit(functools.partial(
      model.apply, method=model_lib.BilingualAutoencoder.embed),
                  static_argnums=3)
  rng = np.random.default_rng(0)
  ids = rng.integers(2, 30, (3, 8)).astype(np.int32)
  lengths = np.array([3, 8, 0], np.int32)
  other = ids.copy()
  other[0, 3:] = rng.integers(2, 30, 5)  # only padding positions change
  other[2] = rng.integers(2, 30, 8)
  wider = np.concatenate([ids, rng.integers(2, 30, (3, 8))], 1)
  emb = np.asarray(embed({"params": params}, ids, lengths, "src"))
  assert emb.shape == (3, 12)
  np.testing.assert_array_equal(
      emb, embed({"params": params}, other, lengths, "src"))
  np.testing.assert_allclose(
      emb, embed({"params": params}, wider.astype(np.int32), lengths, "src"),
      atol=1e-6)
  np.testing.assert_array_equal(emb[2], 0.0)  # an empty row embeds to zero
  # The target encoder has its own parameters.
  assert not np.allclose(emb[1], embed({"params": params}, ids, lengths,
                                       "tgt")[1])


def test_call_gives_logits_of_both_objectives(tiny):
  model, params = tiny
  src, src_len = jnp.ones((2, 16), jnp.int32), jnp.array([9, 2], jnp.int32)
  tgt, tgt_len = jnp.ones((2, 8), jnp.int32), jnp.array([5, 2], jnp.int32)
  nmt_logits, ae_logits = jax.eval_shape(
      model.apply, {"params": params}, src, src_len, tgt, tgt, tgt_len, tgt)
  assert nmt_logits.shape == ae_logits.shape == (2, 8, 40)


def test_the_decoder_may_start_from_the_embedding_itself():
  """decoder_start="embedding" (Kim et al. 2019, Eq. 3): no bridge, a
  decoder of the embedding's width whose first state is the embedding."""
  model = model_lib.BilingualAutoencoder(30, 40, word_dim=8, hidden=6,
                                         decoder_start="embedding")
  src, src_len = jnp.ones((2, 5), jnp.int32), jnp.array([5, 2], jnp.int32)
  tgt, tgt_len = jnp.ones((2, 4), jnp.int32), jnp.array([4, 2], jnp.int32)
  params = model.init(jax.random.key(0), src, src_len, tgt, tgt, tgt_len,
                      tgt)["params"]
  assert "bridge" not in params
  assert params["decoder"]["cell"]["hi"]["kernel"].shape == (12, 12)
  emb = model.apply({"params": params}, src, src_len, "src",
                    method=model_lib.BilingualAutoencoder.embed)
  # The first logits are the decoder cell's output from (c=0, h=emb).
  cell = nn.OptimizedLSTMCell(12)
  x = model.apply({"params": params}, tgt[:, :1], method=lambda m, t:
                  m.embeds["tgt"](t))[:, 0]
  (_, h1), _ = cell.apply({"params": params["decoder"]["cell"]},
                          (jnp.zeros_like(emb), emb), x)
  want = h1 @ params["logits"]["kernel"] + params["logits"]["bias"]
  got = model.apply({"params": params}, emb, tgt,
                    method=model_lib.BilingualAutoencoder.decode)[:, 0]
  np.testing.assert_allclose(got, want, atol=1e-5)
  with pytest.raises(ValueError, match="decoder_start"):
    model_lib.BilingualAutoencoder(30, 40, decoder_start="zero").init(
        jax.random.key(0), src, src_len, tgt, tgt, tgt_len, tgt)


def test_training_logs_both_objectives_and_learns(workdir):
  rows = _metrics(workdir)
  train = [r for r in rows if "loss" in r]
  for r in train:
    assert r["loss"] == pytest.approx((r["loss/nmt"] + r["loss/ae"]) / 2,
                                      rel=1e-5)
  assert train[-1]["loss/nmt"] < train[0]["loss/nmt"]
  assert train[-1]["loss/ae"] < train[0]["loss/ae"]
  final = rows[-1]
  assert final["step"] == STEPS and 0 <= final["dev/align_accuracy"] <= 100
  assert {"dev/loss", "dev/loss/nmt", "dev/loss/ae"} <= set(final)


def test_batches_mix_pairs_and_their_targets():
  rng = np.random.default_rng(0)
  data = bitext.EncodedBitext(
      tuple(rng.integers(2, 50, rng.integers(2, 30)) for _ in range(100)),
      tuple(rng.integers(2, 50, rng.integers(2, 12)) for _ in range(100)))
  batch = bilingual.mixed_stream(data, data.tgt, 10, 4, 0).get(3)
  for k in ("out", "len"):
    np.testing.assert_array_equal(batch[f"ae_{k}"], batch[f"tgt_{k}"])
  read = np.arange(batch["ae_in"].shape[1]) < batch["ae_len"][:, None]
  np.testing.assert_array_equal(batch["ae_in"] * read, batch["tgt_in"] * read)
  extra = tuple(rng.integers(2, 50, 40) for _ in range(50))
  batch = bilingual.mixed_stream(data, data.tgt + extra, 10, 4, 0).get(3)
  widths = {v.shape[1] for v in batch.values() if v.ndim == 2}
  assert len(widths) == 1 and batch["ae_len"].shape == (12,)


def _final_params(workdir):
  ckpt = checkpointing.Checkpoints(str(workdir), 3, None)
  recipe = bilingual.BilingualRecipe(
      workdir_lib.load_config(str(workdir), "bilingual"),
      *sentencepiece_vocab.load_pair(str(workdir)))
  state = ckpt.restore_latest(jax.eval_shape(recipe.init_state,
                                             jax.random.key(0)))
  ckpt.close()
  return int(state["step"]), state["params"]


def test_resume_from_half_way_equals_straight(workdir, tmp_path):
  resumed = tmp_path / "resumed"
  shutil.copytree(workdir, resumed)
  shutil.rmtree(resumed / "checkpoints" / str(STEPS))  # killed after N/2
  shutil.rmtree(resumed / "best")
  assert _train(resumed) == 0
  (step_a, params_a), (step_b, params_b) = (_final_params(workdir),
                                            _final_params(resumed))
  assert step_a == step_b == STEPS
  jax.tree.map(np.testing.assert_array_equal, params_a, params_b)
  assert _metrics(resumed) == _metrics(workdir)


def _one_step(recipe, config, initial, devices):
  mesh = partitioning.make_mesh(devices)
  _, shardings = loop.state_shardings(recipe, config, mesh)
  batch = partitioning.put_batch(next(recipe.batches(0)), mesh,
                                 recipe.batch_axis)
  state, metrics = loop.jit_train_step(recipe, mesh, shardings)(
      jax.device_put(initial, shardings), batch, jax.random.key(1))
  return jax.device_get(metrics), jax.device_get(state["params"])


def test_same_step_on_one_and_eight_devices(workdir):
  assert jax.device_count() == 8
  config = workdir_lib.load_config(str(workdir), "bilingual")
  src_sp, tgt_sp = sentencepiece_vocab.load_pair(str(workdir))
  data = bitext.encode(list(zip(_lines("de", 40), _lines("en", 40))),
                       src_sp.encode, tgt_sp.encode, 16, "truncate", "val")
  # 20 rows do not divide over 8 devices: padded to 24, padding masked.
  recipe = bilingual.BilingualRecipe(
      config, src_sp, tgt_sp, bilingual.mixed_stream(data, data.tgt, 20, 8, 0))
  # One initial state for both meshes (its compilation is the slow part).
  initial = jax.device_get(jax.jit(recipe.init_state)(jax.random.key(0)))
  metrics_1, params_1 = _one_step(recipe, config, initial, 1)
  metrics_8, params_8 = _one_step(recipe, config, initial, 8)
  for k in ("loss", "loss/nmt", "loss/ae"):
    assert metrics_8[k] == pytest.approx(metrics_1[k], rel=1e-5)
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, atol=2e-5),
               params_1, params_8)


def _embed(workdir, tmp_path, lines, *extra):
  # A folder of its own each call: an output claimed by one input refuses
  # another (docs/outputs.md).
  run = tmp_path / f"run{len(list(tmp_path.glob('run*')))}"
  run.mkdir()
  source, target = run / "in.txt", run / "out.f32"
  source.write_text("".join(l + "\n" for l in lines), "utf-8")
  code = cli.main(["embed", "--workdir", str(workdir), "--input", str(source),
                   "--output", str(target), *extra])
  return code, target


def test_embed_picks_the_encoder_by_language(workdir, tmp_path):
  lines = _lines("de", 5)
  code, target = _embed(workdir, tmp_path, lines, "--lang", "de")
  assert code == 0
  de = np.fromfile(target, "<f4").reshape(5, -1)
  assert de.shape == (5, 48)
  _, target = _embed(workdir, tmp_path, lines[::-1], "--lang", "de")
  np.testing.assert_array_equal(np.fromfile(target, "<f4").reshape(5, -1),
                                de[::-1])
  code, target = _embed(workdir, tmp_path, lines, "--lang", "en")
  assert code == 0
  en = np.fromfile(target, "<f4").reshape(5, -1)
  assert en.shape == (5, 48) and not np.allclose(en, de)  # other encoder


def test_word_vectors_start_whole_word_pieces(workdir, tmp_path):
  config = workdir_lib.load_config(str(workdir), "bilingual")
  _, tgt_sp = sentencepiece_vocab.load_pair(str(workdir))
  word = next(p[1:] for p in map(tgt_sp.id_to_piece,
                                 range(tgt_sp.get_piece_size()))
              if p[1:].isalpha() and p[1:].islower() and p[0] == "\u2581")
  vector = np.arange(24, dtype=np.float32)
  path = tmp_path / "vectors.txt"
  path.write_text(f"2 24\n{word} {' '.join(map(str, vector))}\n"
                  f"qqqzzz {' '.join(['1'] * 24)}\n")
  table = bilingual._word_vectors(str(path), tgt_sp, config)  # pylint: disable=protected-access
  assert table.shape == (tgt_sp.get_piece_size(), 24)
  np.testing.assert_array_equal(table[tgt_sp.piece_to_id("\u2581" + word)],
                                vector)
  assert np.isfinite(table).all() and table.std() > 0  # the rest is random


@pytest.mark.parametrize("extra, message", [
    (("--lang", "fr"), "set --lang to de or en"),
    ((), "(got none)"),
])
def test_embed_needs_one_of_the_two_languages(workdir, tmp_path, capsys,
                                              extra, message):
  code, target = _embed(workdir, tmp_path, ["Hallo"], *extra)
  assert code == cli.EXIT_BAD_INPUT
  assert message in capsys.readouterr().err
  assert not target.exists()


@pytest.mark.parametrize("recipe, extra, message", [
    ("paraphrase", ("--lang", "de"), "English paraphrase encoder"),
    ("nmt", (), "does not embed"),
])
def test_embed_other_workdirs(tmp_path, capsys, recipe, extra, message):
  other = tmp_path / recipe
  other.mkdir()
  (other / workdir_lib.CONFIG_FILE).write_text(json.dumps({"recipe": recipe}))
  code, target = _embed(other, tmp_path, ["Hallo"], *extra)
  assert code == cli.EXIT_BAD_INPUT
  assert message in capsys.readouterr().err
  assert not target.exists()
