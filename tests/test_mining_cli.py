"""`paraflax mine`: LASER files in, margin-mined TSV out; resume; bad input.

A real workdir needs a trained model, so the --workdir path is tested with
the encoder swapped for a fake one (the language checks come before it).
"""
import json
import pathlib
import re
import sys
import types

import numpy as np
import pytest

import paraflax.recipes
from paraflax import cli
from paraflax.mining import embeddings_io
from paraflax.mining import faiss_knn
from paraflax.mining import index_spec
from paraflax.mining import knn
from paraflax.mining import margin
from paraflax.mining import pipeline
from paraflax.mining import searches
from paraflax.mining import sides

N, DIM, BLOCK = 40, 8, 16  # 3 source blocks (jax: both ways at once)


def _vectors(n: int = N, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
  """y holds noisy copies of x's first half, then unrelated rows."""
  rng = np.random.default_rng(seed)
  x = rng.normal(size=(n, DIM)).astype(np.float32)
  half = n // 2
  y = np.concatenate([x[:half] + 0.1 * rng.normal(size=(half, DIM)),
                      rng.normal(size=(n - half, DIM))]).astype(np.float32)
  return x, y


@pytest.fixture
def corpus(tmp_path):
  x, y = _vectors()
  paths = {name: str(tmp_path / name) for name in
           ("x.f32", "y.f32", "x.txt", "y.txt")}
  embeddings_io.write(paths["x.f32"], x)
  embeddings_io.write(paths["y.f32"], y)
  for side in "xy":
    pathlib.Path(paths[f"{side}.txt"]).write_text(
        "".join(f"{side} sentence {i}\n" for i in range(N)), encoding="utf-8")
  return types.SimpleNamespace(x=x, y=y, out=str(tmp_path / "out.tsv"),
                               **{k.replace(".", "_"): v
                                  for k, v in paths.items()})


def _args(c, *extra: str, texts: bool = False, out: str | None = None):
  args = ["mine", "--src-emb", c.x_f32, "--tgt-emb", c.y_f32, "--dim",
          str(DIM), "--block", str(BLOCK), "--output", out or c.out, *extra]
  return args + (["--src-text", c.x_txt, "--tgt-text", c.y_txt]
                 if texts else [])


def _rows(path: str) -> list[tuple[float, str, str]]:
  lines = pathlib.Path(path).read_text(encoding="utf-8").splitlines()
  return [(float(s), a, b) for s, a, b in (l.split("\t") for l in lines)]


def _expected(x, y, k: int = 4, **kwargs) -> list[tuple[int, int]]:
  pairs = margin.mine(x, y, k, block=BLOCK, **kwargs)
  return list(zip(pairs.src.tolist(), pairs.tgt.tolist()))


def test_without_texts_writes_0_based_line_numbers(corpus):
  assert cli.main(_args(corpus)) == 0
  rows = _rows(corpus.out)
  scores = [s for s, _, _ in rows]
  assert scores == sorted(scores, reverse=True)
  pairs = [(int(a), int(b)) for _, a, b in rows]
  assert pairs == _expected(corpus.x, corpus.y)
  assert {(i, i) for i in range(N // 2)} <= set(pairs)  # the planted pairs
  assert not pathlib.Path(corpus.out + ".parts").exists()


@pytest.mark.parametrize("retrieval", ["fwd", "intersect"])
def test_with_texts_writes_the_sentences(corpus, retrieval):
  extra = ["--retrieval", retrieval, "--margin", "distance"]
  assert cli.main(_args(corpus, *extra, texts=True)) == 0
  expected = _expected(corpus.x, corpus.y, margin="distance",
                       strategy=retrieval)
  assert [(a, b) for _, a, b in _rows(corpus.out)] == [
      (f"x sentence {s}", f"y sentence {t}") for s, t in expected]


def test_the_command_keeps_freed_memory_and_the_library_does_not(
    corpus, monkeypatch):
  """`paraflax mine` sets its own process's allocator; `mine_files` (the
  Python API's) leaves the caller's as it is."""
  from paraflax import host  # pylint: disable=g-import-not-at-top
  from paraflax.inference import embedders  # pylint: disable=g-import-not-at-top
  calls = []
  monkeypatch.setattr(host, "keep_freed_memory", lambda: calls.append(1))
  assert cli.main(_args(corpus, out=corpus.out + ".cli")) == 0
  assert calls == [1]
  embedders.mine_files(corpus.out + ".api", {"block": BLOCK},
                       src_emb=corpus.x_f32, tgt_emb=corpus.y_f32, dim=DIM)
  assert calls == [1]
  assert (pathlib.Path(corpus.out + ".api").read_text(encoding="utf-8")
          == pathlib.Path(corpus.out + ".cli").read_text(encoding="utf-8"))


def test_fp16_files(corpus):
  x16, y16 = corpus.x.astype(np.float16), corpus.y.astype(np.float16)
  embeddings_io.write(corpus.x_f32, x16, fp16=True, overwrite=True)
  embeddings_io.write(corpus.y_f32, y16, fp16=True, overwrite=True)
  assert cli.main(_args(corpus, "--fp16")) == 0
  assert [(int(a), int(b)) for _, a, b in _rows(corpus.out)] == _expected(
      x16, y16)


def test_faiss_flat_finds_the_jax_neighbours_and_the_same_pairs(corpus):
  for x, y in ((corpus.x, corpus.y), (corpus.y, corpus.x)):
    sims, idx = knn.knn(x, y, 4, block=BLOCK)
    got = list(faiss_knn.knn_blocks(x, y, 4, block=BLOCK))
    assert [b for b, _, _ in got] == [0, 1, 2]
    np.testing.assert_array_equal(np.concatenate([i for _, _, i in got]), idx)
    np.testing.assert_allclose(np.concatenate([s for _, s, _ in got]), sims,
                               atol=1e-6)
  jax_out = corpus.out + ".jax"
  assert cli.main(_args(corpus, texts=True, out=jax_out)) == 0
  assert cli.main(_args(corpus, "--backend", "faiss", texts=True)) == 0
  jax_rows, faiss_rows = _rows(jax_out), _rows(corpus.out)
  assert [r[1:] for r in faiss_rows] == [r[1:] for r in jax_rows]
  np.testing.assert_allclose([r[0] for r in faiss_rows],
                             [r[0] for r in jax_rows], atol=2e-6)


def test_ivf(corpus):
  # Probing every cluster is exact.
  assert cli.main(_args(corpus, "--backend", "faiss", "--faiss-index", "ivf",
                        "--nlist", "4", "--nprobe", "4")) == 0
  assert [(int(a), int(b)) for _, a, b in _rows(corpus.out)] == _expected(
      corpus.x, corpus.y)
  approximate = corpus.out + ".ivf"
  assert cli.main(_args(corpus, "--backend", "faiss", "--faiss-index", "ivf",
                        "--nlist", "3", "--nprobe", "2",
                        out=approximate)) == 0
  scores = [s for s, _, _ in _rows(approximate)]
  assert scores and scores == sorted(scores, reverse=True)


_KNN_BLOCKS = knn.both_ways_blocks  # before any test wraps it


class Killed(Exception):
  """Stands for a killed job."""


def _count_blocks(monkeypatch, fail_after: int | None = None) -> list[int]:
  """Records every k-NN block the jax backend computes; optionally dies
  once `fail_after` blocks are done."""
  computed = []

  def counting(*args, **kwargs):
    for item in _KNN_BLOCKS(*args, **kwargs):
      if len(computed) == fail_after:
        raise Killed
      computed.append(item[0])
      yield item

  monkeypatch.setattr(knn, "both_ways_blocks", counting)
  return computed


def test_resume_keeps_finished_blocks(corpus, monkeypatch):
  assert cli.main(_args(corpus, texts=True, out=corpus.out + ".whole")) == 0
  first = _count_blocks(monkeypatch, fail_after=2)
  with pytest.raises(Killed):
    cli.main(_args(corpus, texts=True))
  assert first == [0, 1]
  parts = pathlib.Path(corpus.out + ".parts")
  # The blocks' rows, and the y rows' top-k through the last one alone.
  assert sorted(p.name for p in parts.iterdir()) == [
      "both-000000.npz", "both-000001.npz", "columns-000001.npz"]
  assert not pathlib.Path(corpus.out).exists()
  assert json.loads(pathlib.Path(corpus.out + ".meta.json").read_text())[
      "k"] == 4
  second = _count_blocks(monkeypatch)
  assert cli.main(_args(corpus, texts=True)) == 0
  assert second == [2]  # only the unfinished block
  assert (pathlib.Path(corpus.out).read_bytes()
          == pathlib.Path(corpus.out + ".whole").read_bytes())
  assert not parts.exists()


def test_another_run_is_refused_and_keeps_finished_blocks(corpus,
                                                          monkeypatch, capsys):
  _count_blocks(monkeypatch, fail_after=1)
  with pytest.raises(Killed):
    cli.main(_args(corpus))
  parts = pathlib.Path(corpus.out + ".parts")
  finished = sorted(parts.iterdir())
  computed = _count_blocks(monkeypatch)
  assert cli.main(_args(corpus, "--k", "3")) == cli.EXIT_BAD_INPUT
  err = capsys.readouterr().err
  assert f"{corpus.out} holds the output of another run (differs in k 4 -> 3)"\
      in err and "--overwrite" in err
  assert sorted(parts.iterdir()) == finished and computed == []
  src, tgt = sides.load_sides((corpus.x_f32, corpus.y_f32), DIM, False,
                              (None, None))
  options = pipeline.Options(k=3, block=BLOCK)
  assert pipeline.mine(src, tgt, options, corpus.out, overwrite=True) > 0
  assert computed == [0, 1, 2]  # nothing of the k=4 run reused
  assert [(int(a), int(b)) for _, a, b in _rows(corpus.out)] == _expected(
      corpus.x, corpus.y, k=3)


def test_a_finished_output_is_kept_or_refused(corpus, monkeypatch, capsys):
  assert cli.main(_args(corpus)) == 0
  mined = pathlib.Path(corpus.out).read_bytes()
  computed = _count_blocks(monkeypatch)
  assert cli.main(_args(corpus)) == 0  # the same settings: nothing to do
  assert computed == [] and "already mined" in capsys.readouterr().err
  assert cli.main(_args(corpus, "--margin", "distance")) == \
      cli.EXIT_BAD_INPUT
  assert 'margin "ratio" -> "distance"' in capsys.readouterr().err
  assert pathlib.Path(corpus.out).read_bytes() == mined


@pytest.mark.parametrize("threshold", ["nan", "inf", "-inf"])
def test_threshold_must_be_finite(corpus, capsys, threshold):
  assert cli.main(_args(corpus, f"--threshold={threshold}")) == \
      cli.EXIT_BAD_INPUT
  assert f"--threshold {float(threshold)}: use a finite score" in \
      capsys.readouterr().err
  assert not list(pathlib.Path(corpus.out).parent.glob("out.tsv*"))


def _truncate(c):
  with open(c.x_f32, "ab") as f:
    f.write(b"\0\0")


def _nan_row(c):
  x = c.x.copy()
  x[7, 2] = np.nan
  embeddings_io.write(c.x_f32, x, overwrite=True)


def _short_text(c):
  lines = pathlib.Path(c.y_txt).read_text(encoding="utf-8").splitlines()
  pathlib.Path(c.y_txt).write_text("\n".join(lines[:-1]) + "\n",
                                   encoding="utf-8")


def _missing(c):
  pathlib.Path(c.y_f32).unlink()


# (how to break the corpus, extra arguments, with texts, message pattern)
BAD_INPUT = [
    (_truncate, [], False,
     r"x\.f32: 1282 bytes, but .*x\.f32\.info\.json says 40 rows of dim 8"),
    (_nan_row, [], False, r"x\.f32 row\(s\) 7 \(0-based\) contain NaN"),
    (_short_text, [], True, r"y\.txt has 39 lines but .*y\.f32 holds 40 "
     r"embeddings"),
    (_missing, [], False, r"y\.f32: embedding file not found"),
    (None, ["--k", "41"], False, r"--k 41: .*x\.f32 has 40 embeddings; use "
     r"1 <= --k <= 40"),
    (None, ["--dedup"], False, r"--dedup needs --src-text and --tgt-text"),
    (None, ["--faiss-index", "ivf", "--backend", "faiss", "--nlist", "99"],
     False, r"--nlist 99: use 1 <= nlist <= 40"),
]


@pytest.mark.parametrize("break_it,extra,texts,message", BAD_INPUT)
def test_bad_input_is_a_clear_error_and_writes_nothing(
    corpus, capsys, break_it, extra, texts, message):
  if break_it:
    break_it(corpus)
  assert cli.main(_args(corpus, *extra, texts=texts)) == cli.EXIT_BAD_INPUT
  err = capsys.readouterr().err
  assert err.startswith("paraflax mine: error: ")
  assert re.search(message, err), err
  assert not pathlib.Path(corpus.out).exists()
  assert not pathlib.Path(corpus.out + ".parts").exists()


@pytest.mark.parametrize("flag", ["--margin", "--retrieval", "--backend",
                                  "--faiss-index"])
def test_unknown_names_are_refused_by_argparse(corpus, capsys, flag):
  with pytest.raises(SystemExit) as e:
    cli.main(_args(corpus, flag, "nope"))
  assert e.value.code == cli.EXIT_BAD_INPUT
  assert "invalid choice: 'nope'" in capsys.readouterr().err


def test_cli_choices_are_the_registries():
  mine = cli._parser()._subparsers._group_actions[0].choices["mine"]
  choices = {a.dest.removeprefix("config."): sorted(a.choices)
             for a in mine._actions if a.choices}
  assert choices == {"margin": sorted(margin.MARGINS),
                     "retrieval": sorted(margin.STRATEGIES),
                     "backend": sorted(searches.BACKENDS),
                     "faiss_index": sorted(faiss_knn.INDEXES),
                     "metric": sorted(index_spec.METRICS)}


def test_duplicates_are_mined_once_and_given_to_every_line(corpus):
  # Line 25 repeats line 3 of the source, text and embedding.
  x = corpus.x.copy()
  x[25] = x[3]
  embeddings_io.write(corpus.x_f32, x, overwrite=True)
  lines = [f"x sentence {i}" for i in range(N)]
  lines[25] = lines[3]
  pathlib.Path(corpus.x_txt).write_text("\n".join(lines) + "\n",
                                        encoding="utf-8")
  assert cli.main(_args(corpus, texts=True)) == 0
  with_dedup = [r[1:] for r in _rows(corpus.out)]
  assert with_dedup.count(("x sentence 3", "y sentence 3")) == 2
  lines = corpus.out + ".lines"
  assert cli.main(_args(corpus, "--no-dedup", texts=True, out=lines)) == 0
  # Under `max` the two lines compete: only one gets the partner.
  without = [r[1:] for r in _rows(lines)]
  assert without.count(("x sentence 3", "y sentence 3")) == 1


def test_help_is_fast_and_mining_never_imports_tensorflow(corpus, run_python):
  out = run_python(
      "import sys\nfrom paraflax import cli\n"
      "try: cli.main(['mine', '--help'])\nexcept SystemExit: pass\n"
      "assert not {'jax', 'tensorflow'} & set(sys.modules)\n"
      f"assert cli.main({_args(corpus)!r}) == 0\n"
      "heavy = {'tensorflow', 'seqio', 'faiss'} & set(sys.modules)\n"
      "assert not heavy, heavy\n")
  assert "resumes" in out and "--no-dedup" in out
  assert _rows(corpus.out)


def _workdir(tmp_path, recipe: str) -> str:
  path = tmp_path / "w"
  path.mkdir()
  (path / "config.json").write_text(json.dumps(
      {"recipe": recipe, "lang": "de", "direction": "xx_en"}))
  return str(path)


def _workdir_args(c, workdir: str, src_lang: str, tgt_lang: str):
  return ["mine", "--workdir", workdir, "--src-text", c.x_txt, "--tgt-text",
          c.y_txt, "--src-lang", src_lang, "--tgt-lang", tgt_lang,
          "--block", str(BLOCK), "--output", c.out]


@pytest.mark.parametrize("recipe,langs,message", [
    ("paraphrase", ("de", "en"), r"holds an English paraphrase encoder "
     r"\(recipe 'paraphrase'\), which cannot embed 'de' text: use a "
     r"bilingual workdir"),
    ("nmt", ("en", "en"), r"holds a 'nmt' model, which does not embed "
     r"sentences; use a 'paraphrase' or 'bilingual' workdir"),
    ("bilingual", ("fr", "en"), r"holds a bilingual model of de and en: set "
     r"--src-lang / --tgt-lang to de or en to pick its encoder \(got 'fr'\)"),
])
def test_workdir_that_cannot_embed_the_languages(corpus, tmp_path, capsys,
                                                 recipe, langs, message):
  workdir = _workdir(tmp_path, recipe)
  assert cli.main(_workdir_args(corpus, workdir, *langs)) == 2
  assert re.search(message, capsys.readouterr().err)
  assert not pathlib.Path(corpus.out).exists()


def test_workdir_embeds_both_sides_then_mines(corpus, tmp_path, monkeypatch):
  table = {f"{side} sentence {i}": v for side, vectors in
           (("x", corpus.x), ("y", corpus.y)) for i, v in enumerate(vectors)}
  fake = types.SimpleNamespace(load_for_inference=lambda workdir: (
      lambda params, texts: np.stack([table[t] for t in texts]), None, 0))
  monkeypatch.setitem(sys.modules, "paraflax.recipes.paraphrase", fake)
  monkeypatch.setattr(paraflax.recipes, "paraphrase", fake, raising=False)
  workdir = _workdir(tmp_path, "paraphrase")
  assert cli.main(_workdir_args(corpus, workdir, "en", "en")) == 0
  assert [(a, b) for _, a, b in _rows(corpus.out)] == [
      (f"x sentence {s}", f"y sentence {t}")
      for s, t in _expected(corpus.x, corpus.y)]
