"""The compilation cache: same numbers cold and warm, whole entries only
(a cut or killed write is a silent miss), the size cap, `off`."""
import os
import pathlib
import signal
import subprocess
import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from paraflax import compile_cache
from paraflax.recipes import mlp_similarity as mlp

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
  """A fresh cache for this test, every program cached; the session's
  cache again afterwards."""
  monkeypatch.setenv(compile_cache.ENV, str(tmp_path / "xla"))
  monkeypatch.setattr(compile_cache, "MIN_COMPILE_SECONDS", 0.0)
  path = pathlib.Path(compile_cache.use())
  jax.clear_caches()  # what this process compiled before is read anew
  yield path
  monkeypatch.undo()
  compile_cache.use()


def _cache():
  from jax._src import compilation_cache  # pylint: disable=g-import-not-at-top
  return compilation_cache._cache  # pylint: disable=protected-access


def _entries(path):
  return sorted(p for p in path.iterdir()
                if p.name.endswith("-cache") and not p.name.startswith("."))


def test_a_warm_cache_trains_the_same_numbers(cache_dir, tmp_path):
  """The MLP similarity's train loop (train and eval steps, checkpoints),
  cold then warm: the same evaluations and parameters."""
  rng = np.random.default_rng(0)
  x = rng.normal(size=(64, 8)).astype(np.float32)
  pairs = (x, x + rng.normal(size=x.shape).astype(np.float32))
  config = mlp.default_config(hidden=8, batch_size=16, epochs=2,
                              negatives="shuffled", eval_every=4, log_every=4)
  runs = {}
  for name in ("cold", "warm"):
    evals = mlp.train(pairs, config, str(tmp_path / name))
    model, _ = mlp.load_for_inference(str(tmp_path / name))
    runs[name] = evals, model.params, _cache().hits
    jax.clear_caches()
  (cold_evals, cold_params, cold_hits), (warm_evals, warm_params,
                                         warm_hits) = runs.values()
  assert cold_hits == 0 and warm_hits >= len(_entries(cache_dir)) > 0
  assert cold_evals == warm_evals and "heldout/loss" in cold_evals[-1]
  jax.tree.map(np.testing.assert_array_equal, cold_params, warm_params)


def _f(x):
  return jnp.tanh(x @ x.T).sum()


def test_a_cut_entry_is_a_silent_miss_and_is_replaced(cache_dir):
  x = jnp.arange(12.0).reshape(3, 4)
  expected = float(jax.jit(_f)(x))
  for entry in _entries(cache_dir):
    entry.write_bytes(entry.read_bytes()[:-7])  # as a killed plain write
  assert not compile_cache.FileCache(str(cache_dir)).values()
  jax.clear_caches()
  with warnings.catch_warnings():
    warnings.simplefilter("error")  # jax warns on an entry it cannot read
    assert float(jax.jit(_f)(x)) == expected
  assert _cache().hits == 0
  jax.clear_caches()
  assert float(jax.jit(_f)(x)) == expected
  assert _cache().hits == 1  # _f's entry, rewritten whole
  assert len(compile_cache.FileCache(str(cache_dir)).values()) == 1


_PROGRAM = ("import jax, jax.numpy as jnp\n"
            "from paraflax import compile_cache\n"
            "compile_cache.MIN_COMPILE_SECONDS = 0\n"
            "compile_cache.use()\n"
            "print(float(jax.jit(lambda x: jnp.tanh(x).sum())(jnp.ones(5))))")


def test_a_kill_mid_write_leaves_no_entry(tmp_path):
  env = dict(os.environ, **{compile_cache.ENV: str(tmp_path),
                            "PARAFLAX_CRASH_AT": "compile_cache.written:1"})
  killed = subprocess.run([sys.executable, "-c", _PROGRAM], env=env,
                          cwd=ROOT, capture_output=True, text=True)
  assert killed.returncode == -signal.SIGKILL, killed.stderr
  host = tmp_path / compile_cache.host_key()
  assert not _entries(host) and os.listdir(host)  # the temporary
  del env["PARAFLAX_CRASH_AT"]
  for _ in range(2):  # writes the entries, then reads them
    out = subprocess.run([sys.executable, "-W", "error", "-c", _PROGRAM],
                         env=env, cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0 and not out.stderr.strip(), out.stderr
  assert _entries(host)


def test_the_least_recently_used_go_beyond_the_cap(tmp_path):
  cache = compile_cache.FileCache(str(tmp_path), max_bytes=250)
  for i, key in enumerate(("a", "b", "c")):
    cache.put(key, bytes(100))
    os.utime(tmp_path / f"{key}-cache", (i, i))  # a, b, c by age
  assert [p.name for p in _entries(tmp_path)] == ["b-cache", "c-cache"]
  assert cache.get("b") == bytes(100)  # b is now the newest
  cache.put("d", bytes(100))
  assert [p.name for p in _entries(tmp_path)] == ["b-cache", "d-cache"]
  cache.put("e", bytes(300))  # larger than the cap: not kept
  assert cache.get("e") is None and cache.get("a") is None


def test_an_entry_another_run_is_writing_is_left_out(tmp_path):
  cache = compile_cache.FileCache(str(tmp_path))
  cache.put("a", b"whole")
  # Another run's temporary, written whole but not yet renamed into place.
  (tmp_path / ".tmp-b-cache").write_bytes((tmp_path / "a-cache").read_bytes())
  assert cache.values() == [b"whole"]


def test_off_and_the_default_folder(monkeypatch):
  monkeypatch.setenv(compile_cache.ENV, "OFF")
  assert compile_cache.directory() is None
  monkeypatch.delenv(compile_cache.ENV)
  monkeypatch.setenv("XDG_CACHE_HOME", "/x")
  host = compile_cache.host_key()
  assert compile_cache.directory() == f"/x/paraflax/xla/{host}"
  monkeypatch.setenv(compile_cache.ENV, "~/c")
  assert compile_cache.directory() == os.path.expanduser(f"~/c/{host}")


def test_unlike_cpus_get_their_own_folders(monkeypatch):
  """The folder is named by the CPU's model and features, which jax's
  cache key lacks."""
  here = compile_cache.host_key()
  compile_cache.host_key.cache_clear()
  monkeypatch.setattr(compile_cache.platform, "processor",
                      lambda: "another CPU")
  try:
    assert compile_cache.host_key() != here
  finally:
    compile_cache.host_key.cache_clear()


def test_an_unwritable_folder_runs_without_the_cache(tmp_path, monkeypatch):
  (tmp_path / "file").write_text("")
  monkeypatch.setenv(compile_cache.ENV, str(tmp_path / "file" / "xla"))
  try:
    assert compile_cache.use() is None and _cache() is None
    assert float(jax.jit(_f)(jnp.ones((2, 2)))) > 0
  finally:
    monkeypatch.undo()
    compile_cache.use()
