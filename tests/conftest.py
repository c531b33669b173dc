"""Every test sees 8 simulated CPU devices; TensorFlow stays quiet."""
import ast
import functools
import gc
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

# Must happen before jax is imported anywhere in the test session.
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                           + " --xla_force_host_platform_device_count=8")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
# The test extra brings libtpu (`paraflax compile` targets TPU topologies);
# with it, jax would probe for a TPU and print libtpu's init warnings on
# every import. Tests that compile for a TPU topology still can: the
# compile-only client needs no TPU backend.
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import pytest  # noqa: E402  (after the environment is set)

# A GRAN small enough for CI, trained on real pairs (generaltest2022 cs-en,
# 1448 pairs of two human English references).
TINY = ("--config.data.task=paraphrase_en_generaltest2022_cs",
        "--config.model.word_dim=32", "--config.model.hidden=32",
        "--config.batch_size=50", "--config.megabatch=4",
        "--config.data.max_len=24", "--config.train_steps=48",
        "--config.log_every=4", "--config.eval_every=24",
        "--config.checkpoint.every=8", "--config.mesh.num_devices=1",
        "--config.model.word_vectors=",  # random words: no PPDB stage
        "--config.data.mixture=()")  # data.task alone: no PPDB pairs


ROOT = pathlib.Path(__file__).resolve().parents[1]


def parse_python(source: str) -> ast.Module:
  """ast.parse with the cycle collector held off. CPython 3.11's AST
  constructor keeps its recursion count per interpreter, and 3.11's traceback
  module calls ast.parse to place its carets: a finalizer that formats a
  traceback while a parse runs (orbax's unretrieved asyncio futures log theirs
  from __del__, left by an earlier test on the worker) makes the outer parse
  raise "SystemError: AST constructor recursion depth mismatch". (No
  gc.collect() first: in a worker holding jax's heap one takes about a
  second, and the garbage is finalised later, outside any parse.)"""
  gc.disable()
  try:
    return ast.parse(source)
  finally:
    gc.enable()


# A de-en attention NMT small enough for CI, on real multi30k pairs; one
# padded width (max_len 16, pairs past it skipped, sources cut to it), so
# each program compiles once, not once per width (test_nmt.py: 296 -> 167 s
# of CPU).
TINY_NMT = ("--config.data.train=('bitext_multi30k_de_en',)",
            "--config.vocab.size=600", "--config.model.emb_dim=24",
            "--config.model.hidden=24", "--config.model.attention_dim=24",
            "--config.train_steps=30", "--config.eval_every=30",
            "--config.checkpoint.every=30", "--config.log_every=10",
            "--config.evals.dev.sentences=20", "--config.batch_size=32",
            "--config.data.max_len=16", "--config.mesh.num_devices=1")

# A de-en bilingual autoencoder small enough for CI, trained on real
# multi30k pairs; one session fixture serves every test that needs it.
BILINGUAL_CONFIG = str(ROOT / "configs" / "bilingual.py") + ":de"
BILINGUAL_STEPS = 24
BILINGUAL_TINY = (
    "--config.data.train=('bitext_multi30k_de_en',)",
    "--config.vocab.size=600", "--config.model.word_dim=24",
    "--config.model.hidden=24", "--config.data.max_len=16",
    "--config.batch_size=16", "--config.optimizer.learning_rate=3e-3",
    f"--config.train_steps={BILINGUAL_STEPS}",
    f"--config.eval_every={BILINGUAL_STEPS}",
    f"--config.checkpoint.every={BILINGUAL_STEPS // 2}",
    "--config.log_every=4", "--config.eval.sentences=16",
    "--config.evals.dev.sentences=16",
    "--config.eval.batch_size=16", "--config.mesh.num_devices=1")


def random_bilingual(src_vocab: int, tgt_vocab: int, word_dim: int,
                     hidden: int):
  """A small bilingual autoencoder and random parameters (no compiled
  init): (model, params)."""
  import jax  # pylint: disable=g-import-not-at-top
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top
  from paraflax.models import bilingual  # pylint: disable=g-import-not-at-top
  model = bilingual.BilingualAutoencoder(src_vocab=src_vocab,
                                         tgt_vocab=tgt_vocab,
                                         word_dim=word_dim, hidden=hidden)
  ids, lengths = jnp.ones((2, 8), jnp.int32), jnp.array([5, 2], jnp.int32)
  shapes = jax.eval_shape(model.init, jax.random.key(0), ids, lengths, ids,
                          ids, lengths, ids)["params"]
  rng = np.random.default_rng(0)
  params = jax.tree.map(
      lambda s: rng.normal(0, 0.5, s.shape).astype(np.float32), shapes)
  return model, params


def multi30k_val(folder: pathlib.Path, lines: int
                 ) -> tuple[pathlib.Path, pathlib.Path]:
  """The first `lines` multi30k val pairs, as plain de and en files."""
  import gzip  # pylint: disable=g-import-not-at-top
  from paraflax.data import paths  # pylint: disable=g-import-not-at-top
  for lang in ("de", "en"):
    with gzip.open(paths.data_path("multi30k_task1", f"val.{lang}.gz"),
                   "rt", encoding="utf-8") as f:
      kept = f.read().splitlines()[:lines]
    (folder / f"val.{lang}").write_text("\n".join(kept) + "\n", "utf-8")
  return folder / "val.de", folder / "val.en"


def train_bilingual(workdir) -> int:
  """Trains (or resumes) the tiny bilingual model in `workdir`."""
  from paraflax import cli  # pylint: disable=g-import-not-at-top
  return cli.main(["train", "--config", BILINGUAL_CONFIG, "--workdir",
                   str(workdir), *BILINGUAL_TINY])


def pytest_configure(config):
  """One compilation cache, one sentencepiece cache and one cache of the
  mining kernel for the whole run, empty at its start and never the user's:
  pytest-xdist's workers and the subprocesses tests start inherit the
  folders, so a program compiled (a subword model trained) once serves
  every later test in every process. An explicit PARAFLAX_COMPILATION_CACHE,
  PARAFLAX_SENTENCEPIECE_CACHE or PARAFLAX_NATIVE_CACHE (`off`, a folder)
  stands."""
  from paraflax import compile_cache  # pylint: disable=g-import-not-at-top
  from paraflax.data import sentencepiece_vocab  # pylint: disable=g-import-not-at-top
  from paraflax.mining import native  # pylint: disable=g-import-not-at-top
  if hasattr(config, "workerinput"):
    return  # a worker: the controller has set them
  for env in (compile_cache.ENV, sentencepiece_vocab.ENV, native.ENV):
    if env not in os.environ:
      folder = tempfile.mkdtemp(prefix=f"{env.lower()}-")
      os.environ[env] = folder
      config.add_cleanup(functools.partial(shutil.rmtree, folder,
                                           ignore_errors=True))


# The files that take longest (CI's --durations, 2 cores), started first:
# pytest-xdist hands out whole files in collection order (pytest.ini), and
# a long file started last would run on alone after the other worker ends.
_LONGEST_FIRST = ("test_multihost.py", "test_kill_anywhere.py",
                  "test_beam_search.py", "test_nmt.py", "test_training.py",
                  "test_colab.py", "test_pipeline.py", "test_bilingual_cli.py",
                  "test_bilingual.py", "test_compile.py")


def pytest_addoption(parser):
  parser.addoption("--slow", action="store_true",
                   help="also run the tests marked slow (minutes each)")


def pytest_collection_modifyitems(config, items):
  rank = {name: i for i, name in enumerate(_LONGEST_FIRST)}
  items.sort(key=lambda item: rank.get(item.path.name, len(rank)))
  if not config.getoption("--slow"):
    skip = pytest.mark.skip(reason="slow: run with --slow")
    for item in items:
      if "slow" in item.keywords:
        item.add_marker(skip)


@pytest.fixture(scope="session", autouse=True)
def compilation_cache():
  from paraflax import compile_cache  # pylint: disable=g-import-not-at-top
  compile_cache.use()


@pytest.fixture
def forbid(monkeypatch):
  """forbid(why, (obj, name), ...): calling any obj.name raises
  AssertionError(why) for the test's length (what a test pins is not
  built: an optimizer, a training recipe)."""
  def apply(why: str, *targets) -> None:
    def refuse(*args, **kwargs):
      raise AssertionError(why)
    for obj, name in targets:
      monkeypatch.setattr(obj, name, refuse)
  return apply


@pytest.fixture
def tiny_overrides():
  return list(TINY)


@pytest.fixture(scope="session")
def bilingual_workdir(tmp_path_factory) -> pathlib.Path:
  """A workdir with the tiny bilingual model trained; read it, never write
  to it (copy it first)."""
  path = tmp_path_factory.mktemp("bilingual") / "w"
  assert train_bilingual(path) == 0
  return path


@pytest.fixture
def run_python():
  """Runs `code` in a fresh interpreter at the repository root (the modules
  a command imports are only visible there); returns its stdout."""
  def run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code],
                         cwd=pathlib.Path(__file__).resolve().parents[1],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout
  return run


@pytest.fixture(autouse=True)
def output_locks():
  """A test that calls a library function (not `cli.main`) leaves no output
  of its locked for the tests after it, which may run the same command in
  another process."""
  yield
  from paraflax import files  # pylint: disable=g-import-not-at-top
  files.release_output_locks()
