"""The public Python API: light to import, the README's script runs as
written, and notebooks and scripts use nothing else."""
import ast
import json
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import paraflax
from tests.conftest import ROOT, parse_python

HEAVY = ("jax", "jaxlib", "flax", "tensorflow", "seqio", "orbax", "optax")


def test_import_loads_nothing_heavy(run_python):
  loaded = json.loads(run_python(
      "import json, sys, paraflax; print(json.dumps(sorted(sys.modules)))"))
  assert not [m for m in loaded if m.split(".")[0] in HEAVY]
  assert [m for m in loaded if m.startswith("paraflax")] == ["paraflax"]


def test_every_public_name_resolves(run_python):
  loaded = json.loads(run_python(
      "import json, sys, paraflax\n"
      "[getattr(paraflax, n) for n in paraflax.__all__]\n"
      "print(json.dumps(sorted(sys.modules)))"))
  # Naming a function loads its module, not what the function needs.
  assert not [m for m in loaded if m.split(".")[0] in HEAVY]
  with pytest.raises(AttributeError):
    paraflax.no_such_name  # pylint: disable=pointless-statement


def _readme_script() -> str:
  readme = (ROOT / "README.md").read_text(encoding="utf-8")
  section = readme.split("\n## Python\n", 1)[1].split("\n## ", 1)[0]
  (block,) = re.findall(r"```python\n(.*?)```", section, re.S)
  return block


def test_readme_script_is_short():
  assert len(_readme_script().splitlines()) <= 15


def test_readme_script_runs_as_written(bilingual_workdir, tmp_path):
  script = _readme_script()
  workdir = re.search(r'paraflax\.load\("([^"]+)"\)', script).group(1)
  shutil.copytree(bilingual_workdir, tmp_path / workdir)
  out = subprocess.run([sys.executable, "-c", script], cwd=tmp_path,
                       env={**__import__("os").environ,
                            "PYTHONPATH": str(ROOT)},
                       capture_output=True, text=True, timeout=300)
  assert out.returncode == 0, out.stderr
  lines = out.stdout.splitlines()
  assert 1 <= len(lines) - 1 <= 3 and "|" in lines[0]  # pairs, then scores


def test_model_of_a_bilingual_workdir(bilingual_workdir):
  model = paraflax.load(bilingual_workdir)
  assert model.recipe == "bilingual" and model.step > 0
  assert sorted(model.languages) == ["de", "en"]
  de = ["Ein Hund läuft.", "Zwei Männer spielen Fußball."]
  en = ["A dog runs.", "Two men play football."]
  x, y = model.embed(de, lang="de"), model.embed(en, "en")
  assert x.shape == y.shape and x.shape[0] == 2 and x.dtype == np.float32
  cos = np.sum(x * y, 1) / np.linalg.norm(x, axis=1) / np.linalg.norm(y, axis=1)
  np.testing.assert_allclose(model.score_pairs(de, en), cos, rtol=1e-5)
  # Either order of the sides scores the same pairs the same.
  np.testing.assert_allclose(
      model.score_pairs(en, de, src_lang="en", tgt_lang="de"), cos, rtol=1e-5)
  with pytest.raises(paraflax.ConfigError, match="'nmt'"):
    model.translate(de)
  with pytest.raises(paraflax.ConfigError, match="de or en"):
    model.embed(de)  # a bilingual model needs its encoder named
  with pytest.raises(paraflax.ConfigError, match="similarity"):
    model.score_pairs(de, en, similarity="dot")


def test_no_checkpoint(tmp_path):
  with pytest.raises(paraflax.NoCheckpointError):
    paraflax.load(tmp_path)


def test_mine_finds_the_planted_pairs():
  rng = np.random.default_rng(0)
  y = rng.normal(size=(20, 8)).astype(np.float32)
  x = y[::-1] + rng.normal(scale=0.01, size=y.shape).astype(np.float32)
  pairs = paraflax.mine(x, y, k=3)
  assert sorted(zip(pairs.src.tolist(), pairs.tgt.tolist())) == [
      (i, 19 - i) for i in range(20)]
  assert np.all(np.diff(pairs.score) <= 0)
  gold = {(i, 19 - i) for i in range(20)}
  assert paraflax.best_threshold(pairs, gold)[1:] == (1.0, 1.0, 1.0)
  every = paraflax.candidates(x, y, k=3)
  assert len(every.src) >= len(pairs.src)
  assert len(paraflax.mine(x, y, k=3, threshold=1e9).src) == 0
  with pytest.raises(paraflax.ConfigError, match="retrieval"):
    paraflax.mine(x, y, retrieval="both")


def test_mining_benchmark_of_the_news_sets_or_of_any_bitext():
  captions = paraflax.mining_benchmark(
      data="bitext_multi30k_de_en:validation", gold=20, distractors=30)
  assert len(captions.src) == len(captions.tgt) == 50
  assert len(captions.gold) == 20
  assert "--data bitext_multi30k_de_en:validation" in captions.recipe
  news = paraflax.mining_benchmark("de", "dev", gold=20, distractors=30)
  assert len(news.src) == 50 and "newstest2012" in news.recipe
  for wrong in ({"data": "bitext_multi30k_de_en:validation", "lang": "de"},
                {}):
    with pytest.raises(paraflax.ConfigError, match="not both"):
      paraflax.mining_benchmark(**wrong)


def test_tasks_are_listed_and_registered():
  listed = paraflax.tasks()
  assert "bitext_multi30k_de_en" in listed
  task = paraflax.task("bitext_multi30k_de_en")
  assert task.name == "bitext_multi30k_de_en"
  assert "validation" in task.splits
  val = paraflax.examples("bitext_multi30k_de_en", "validation")
  assert len(val) == 1014 and set(val[0]) == {"source", "target"}
  with pytest.raises(paraflax.ConfigError, match="paraflax.tasks()"):
    paraflax.task("no_such_task")


def test_sweep_results_reads_the_table_or_says_how_to_write_it(tmp_path):
  table = {"base": "configs/avg.py", "columns": ["test/STSb.test/pearson"],
           "points": [{"name": "filter-random", "status": "finished",
                       "overrides": ["data.filter={'score': 'random'}"],
                       "selected": 0.5}]}
  (tmp_path / "results.json").write_text(json.dumps(table))
  assert paraflax.sweep_results(tmp_path) == table
  assert paraflax.sweep_results(str(tmp_path)) == table
  with pytest.raises(paraflax.DataError, match="run `paraflax sweep"):
    paraflax.sweep_results(tmp_path / "none")
  (tmp_path / "results.json").write_text("{}")
  with pytest.raises(paraflax.DataError, match="not a sweep table"):
    paraflax.sweep_results(tmp_path)
  (tmp_path / "results.json").write_text("{")
  with pytest.raises(paraflax.DataError, match="not a sweep table"):
    paraflax.sweep_results(tmp_path)


def test_domain_and_ppdb_results_read_the_reports(tmp_path):
  curve = {"select_dir": "SEL", "test": "t.en", "test_sentences": 3,
           "rows": [{"method": "random", "size": 2, "perplexity": 9.0}]}
  (tmp_path / "results.json").write_text(json.dumps(curve))
  assert paraflax.domain_results(tmp_path) == curve
  with pytest.raises(paraflax.DataError, match="run `paraflax eval-domain"):
    paraflax.domain_results(tmp_path / "none")
  report = {"table": "t.txt", "words": 1,
            "precision": {"score": {"p@1": 1.0, "p@5": 0.5}}}
  (tmp_path / "t.ppdb.json").write_text(json.dumps(report))
  assert paraflax.ppdb_results(tmp_path / "t.ppdb") == report
  assert paraflax.ppdb_results(str(tmp_path / "t.ppdb.json")) == report
  (tmp_path / "t.ppdb.json").write_text("{}")
  with pytest.raises(paraflax.DataError, match="not an eval-ppdb report"):
    paraflax.ppdb_results(tmp_path / "t.ppdb")


def test_paraphrases_bisect_a_sorted_table(tmp_path):
  import gzip  # pylint: disable=g-import-not-at-top
  rows = [(f"w{i:03d}", f"x{j}", 1 / (j + 1), 0.1 * j)
          for i in range(300) for j in range(3)]
  rows += [("zürich", "zurich", 0.9, 0.2), ("zürich city", "zurich", 0.5, 0.)]
  text = "".join(f"{a} ||| {b} ||| {p:.6g} ||| p={p:.6g} monods={m:.6g}\n"
                 for a, b, p, m in rows)
  plain, packed = tmp_path / "t.txt", tmp_path / "t.txt.gz"
  plain.write_text(text, "utf-8")
  packed.write_bytes(gzip.compress(text.encode()))
  for table in (plain, packed):
    assert paraflax.paraphrases(table, "W000", 2) == [("x0", 1.0),
                                                      ("x1", 0.5)]
    assert paraflax.paraphrases(table, "w299", by="monods")[0] == ("x2", 0.2)
    assert paraflax.paraphrases(table, "Zürich") == [("zurich", 0.9)]
    assert paraflax.paraphrases(table, "zürich city") == [("zurich", 0.5)]
    assert paraflax.paraphrases(table, "w0005") == []
    assert paraflax.paraphrases(table, "aaa") == []
    with pytest.raises(paraflax.ConfigError, match="monods, p"):
      paraflax.paraphrases(table, "w001", by="ppdb")


# --- Notebooks and scripts use the public API only -------------------------


def _sources() -> dict[str, str]:
  out = {}
  for path in sorted((ROOT / "colabs").glob("*.ipynb")):
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    code = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    # IPython magics are not Python.
    out[str(path)] = "\n".join(
        "\n".join(line for line in c.splitlines()
                  if not line.lstrip().startswith(("%", "!")))
        for c in code)
  for folder in ("lab", "launch", "colabs"):
    for path in sorted((ROOT / folder).rglob("*.py")):
      out[str(path)] = path.read_text(encoding="utf-8")
  out["README.md"] = _readme_script()
  return out


def _private_uses(code: str) -> list[str]:
  """Imports of paraflax.cli, and private names of paraflax modules."""
  found, aliases = [], set()
  tree = parse_python(code)
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      for a in node.names:
        if a.name.split(".")[0] == "paraflax":
          aliases.add(a.asname or a.name.split(".")[0])
          found += [a.name] if (a.name.startswith("paraflax.cli") or
                                "._" in a.name) else []
    elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
        "paraflax"):
      for a in node.names:
        name = f"{node.module}.{a.name}"
        if name.startswith("paraflax.cli") or re.search(r"\._", name):
          found.append(name)
        aliases.add(a.asname or a.name)
  for node in ast.walk(tree):
    if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
        and node.value.id in aliases and node.attr.startswith("_")
        and not (node.attr.startswith("__") and node.attr.endswith("__"))):
      found.append(f"{node.value.id}.{node.attr}")
  return found


def test_private_uses_are_found():
  assert _private_uses("from paraflax import cli\nimport paraflax.cli\n"
                       "from paraflax.data import _x\nimport paraflax as p\n"
                       "p._API\np.__file__") == [
                           "paraflax.cli", "paraflax.cli",
                           "paraflax.data._x", "p._API"]


def test_notebooks_and_scripts_use_no_cli_or_private_name():
  bad = {path: uses for path, code in _sources().items()
         if (uses := _private_uses(code))}
  assert not bad


def test_notebooks_use_the_top_level_api_only():
  for path, code in _sources().items():
    if path.endswith(".ipynb"):
      imports = [n for n in ast.walk(parse_python(code))
                 if isinstance(n, (ast.Import, ast.ImportFrom))]
      names = [a.name for n in imports if isinstance(n, ast.Import)
               for a in n.names] + [n.module for n in imports
                                    if isinstance(n, ast.ImportFrom)]
      assert not [n for n in names if n.startswith("paraflax.")], path
      assert not [n for n in imports if isinstance(n, ast.ImportFrom)
                  and n.module == "paraflax"], path
