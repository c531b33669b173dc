"""The documentation: generated tables match their JSON, docs/commands.md
matches the command table, relative links resolve, and the text a user
reads states what holds now (no work-item numbers, run dates or
machine-local paths)."""
import ast
import importlib.util
import json
import os
import pathlib
import re
import shutil
import subprocess

import pytest

from tests import command_lines

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _tool(name: str):
  """lab/tools/NAME.py as a module (lab/tools/ is not a package)."""
  spec = importlib.util.spec_from_file_location(name,
                                                ROOT / "lab" / "tools" / f"{name}.py")
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def _renderer():
  return _tool("render_tables")


def _docs() -> list[pathlib.Path]:
  return [ROOT / "README.md", ROOT / "lab" / "benchmarks" / "README.md"] + sorted(
      (ROOT / "docs").glob("*.md")) + sorted((ROOT / "lab").glob("*.md"))


# --- the commands the docs show -----------------------------------------------

_CODE_BLOCK = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)


def _shown_commands(wanted=command_lines.is_paraflax
                    ) -> list[tuple[str, str]]:
  """(page, command line) of each `wanted` command (paraflax's) in a code
  block of the docs and the lab's experiment pages, a notebook cell or a
  config's header."""
  pages = {p: _CODE_BLOCK.findall(p.read_text(encoding="utf-8"))
           for p in _docs() + sorted((ROOT / "lab" / "experiments")
                                     .rglob("*.md"))}
  for path in sorted((ROOT / "configs").rglob("*.py")):
    pages[path] = [ast.get_docstring(ast.parse(path.read_text(
        encoding="utf-8"))) or ""]
  for path in sorted((ROOT / "colabs").glob("*.ipynb")):
    pages[path] = ["".join(c["source"]) for c in json.loads(
        path.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"]
  return [(str(page.relative_to(ROOT)), step) for page, blocks in pages.items()
          for block in blocks for step in command_lines.steps(block, wanted)]


def test_every_paraflax_command_the_docs_show_would_start():
  """Parsed, its flags its command's, its overrides keys of its config:
  a renamed flag or key cannot leave a shown command that stops at once."""
  shown = _shown_commands()
  assert len({page for page, _ in shown}) > 20
  bad = [f"{page}: {step}\n  {why}" for page, step in shown
         if (why := command_lines.problem(step))]
  assert not bad, "\n".join(bad)


def test_every_lab_script_the_docs_show_would_start(tmp_path, monkeypatch):
  """The script is there and its arguments parse (a shell script's text
  too): a renamed flag of a benchmark cannot leave a shown line that stops
  at once. Each script runs only until its arguments parse."""
  monkeypatch.chdir(tmp_path)  # where a script that ran on would write
  shown = [(page, argv) for page, step in _shown_commands(
      command_lines.is_lab_script)
           if (argv := command_lines.script_line(step))]
  assert len(shown) > 20
  bad = [f"{page}: {' '.join(argv)}\n  {why}" for page, argv in shown
         if (why := command_lines.script_problem(argv, str(ROOT)))]
  assert not bad, "\n".join(bad)


@pytest.mark.parametrize("argv, why", [
    (["lab/benchmarks/mining_throughput.py", "--bogus", "1"],
     "unrecognized arguments: --bogus 1"),
    (["lab/benchmarks/mining_scale.py", "--rows", "x"],
     "argument --rows: invalid int value: 'x'"),
    (["lab/experiments/paper_fidelity/bilingual_cut.py"],
     "the following arguments are required"),
    (["lab/benchmarks/gone.py"], "lab/benchmarks/gone.py is not in the"),
])
def test_a_lab_script_line_that_would_stop_at_once_is_named_with_why(
    argv, why, tmp_path, monkeypatch):
  monkeypatch.chdir(tmp_path)
  assert why in command_lines.script_problem(argv, str(ROOT))
  assert command_lines.script_problem(
      ["lab/benchmarks/mining_throughput.py", "--sizes", "100"],
      str(ROOT)) == ""
  assert not list(tmp_path.iterdir())  # parsed, nothing run


@pytest.mark.parametrize("step, why", [
    ("paraflax train --config configs/nmt.py:de --workdir w --bogus 1",
     "unrecognized arguments: --bogus 1"),
    ("paraflax train --config configs/nmt.py:de --workdir w "
     "--config.bogus=1", "unknown config key 'bogus'"),
    ("paraflax eval-filtering --workdir w --noisy n.tsv --output o "
     "--words 100 --nmt-override=--config.bogus=1",
     "unknown config key 'bogus'"),
    ("paraflax mining-eval --workdir w",
     "the following arguments are required: --dev"),
    ("paraflax train --workdir w 'open", "does not split into words"),
    ("paraflax train --config configs/nmt.py:de --workdir w --workdir v",
     "--workdir given more than once"),
    ("paraflax backtranslate --workdir w --src a.txt --split test --output o",
     "--split does nothing without --task"),
])
def test_a_command_that_would_stop_at_once_is_named_with_why(step, why):
  assert why in command_lines.problem(step)


def test_usage_notation_and_other_programs_are_not_checked():
  assert command_lines.problem("paraflax mine --src-emb X [--fp16] ...") == ""
  assert command_lines.problem("paraflax select-domain --order $n") == ""
  assert command_lines.steps("python -m x && cd runs && paraflax tasks\n"
                             "paraflax compile: 4 x TPU v5 lite\n"
                             "$ paraflax eval \\\n  --workdir w  # note") == [
                                 "paraflax tasks", "paraflax eval --workdir w"]


# --- generated tables -------------------------------------------------------

def test_tables_match_their_json():
  assert _renderer().stale() == [], (
      "run: python lab/tools/render_tables.py")


def _results_copy(tmp_path, monkeypatch):
  """The renderer, reading a copy of lab/results/ (runs included) and of
  lab/tables/ beside it."""
  render = _renderer()
  results = tmp_path / "results"
  shutil.copytree(ROOT / "lab" / "results", results)
  shutil.copytree(ROOT / "lab" / "tables", tmp_path / "tables")
  monkeypatch.setattr(render.run_tables, "RESULTS", str(results))
  monkeypatch.setattr(render.run_tables, "DEFINITIONS",
                      str(tmp_path / "tables"))
  monkeypatch.setattr(render.run_tables.run_results, "RUNS",
                      str(results / "runs"))
  return render, results


def _plant(path: pathlib.Path, change) -> None:
  data = json.loads(path.read_text(encoding="utf-8"))
  change(data)
  path.write_text(json.dumps(data), encoding="utf-8")


def test_a_changed_run_file_makes_its_table_stale(tmp_path, monkeypatch):
  render, results = _results_copy(tmp_path, monkeypatch)
  pipeline = str(ROOT / "lab" / "mining.md")  # the pipeline's mined pairs
  assert render.stale([pipeline]) == []
  run = results / "runs" / "pipeline_tiny" / "tiny.json"
  _plant(run, lambda d: d["mining"]["sample"][0].update(src="Planted."))
  # Changed by hand: refused, and --check fails.
  with pytest.raises(ValueError, match="changed since it was collected"):
    render.stale([pipeline])
  assert render.main(["--check"]) == 1
  # Collected again (its sha256 in the sidecar): the table is stale.
  _plant(run.with_name("tiny.about.json"), lambda d: d.update(
      sha256=render.run_tables.run_results.sha256(str(run))))
  assert render.stale([pipeline]) == ["lab/mining.md"]


def test_a_changed_table_json_makes_its_table_stale(tmp_path, monkeypatch):
  render, results = _results_copy(tmp_path, monkeypatch)
  readme = str(ROOT / "README.md")
  assert render.stale([readme]) == []
  _plant(results.parent / "tables" / "headline.json", lambda d: d["rows"][-1]["cells"].__setitem__(
      -1, "a figure that the README does not show"))
  assert render.stale([readme]) == ["README.md"]


@pytest.mark.parametrize("source, marker", [
    ("lab/fidelity.md", "<!-- value: kim_equal_steps.default.cosine -->"),
    ("configs/gran.py", "{sts_encoders/gran-seed0.stsb_test="),
    ("docs/install.md", "<!-- value: newcomer.tests.intel-xeon-2core.json:"
     "steps/2/wall_s:duration -->"),
    ("configs/mine.py",
     "{mining_throughput.d512.amd-epyc-2core.json:results/method=ours,"
     "n=100000,devices=1/total_s:.1f="),
])
def test_a_figure_typed_over_is_stale(tmp_path, source, marker):
  """A figure that prose (a value marker) or a config header ({NAME=VALUE})
  quotes from a result file is rendered from that file, like a table:
  typed over, the page or config is stale."""
  render = _renderer()
  copy = tmp_path / pathlib.Path(source).name
  text = (ROOT / source).read_text(encoding="utf-8")
  assert marker in text
  copy.write_text(text, encoding="utf-8")
  assert render.stale([str(copy)]) == []
  typed = text.replace(marker, marker + "1", 1)
  copy.write_text(typed, encoding="utf-8")
  assert render.stale([str(copy)]) == [os.path.relpath(copy, render.ROOT)]
  assert render.render_file(str(copy), typed) == text


def test_a_quoted_field_renders_from_its_file_and_a_bad_path_names_it(
    tmp_path, monkeypatch):
  """A value named FILE:PATH:FORMAT quotes one field of a result file."""
  render = _renderer()
  monkeypatch.setattr(render.quoted, "RESULTS", str(tmp_path))
  (tmp_path / "b.json").write_text(json.dumps(
      {"runs": [{"name": "a", "wall_s": 770.4, "share": 0.0691}],
       "hardware": {"name": "intel-xeon-2core"}}))
  assert render.VALUES["b.json:runs/name=a/wall_s:duration"]() == "12 min 50 s"
  assert render.VALUES["b.json:hardware/name:machine"]() == "Intel Xeon"
  assert render.VALUES["b.json:runs/0/share:pct"]() == "6.9"
  assert render.VALUES["b.json:runs/0/wall_s:,.0f"]() == "770"
  (tmp_path / "r.json").write_text(json.dumps({"rows": [
      {"scorer": "cosine", "words": n, "bleu": n / 1e4} for n in (75, 150)]}))
  assert render.VALUES["r.json:rows/scorer=cosine,words=150/bleu:.3f"]() == (
      "0.015")
  with pytest.raises(KeyError, match="no item with scorer = 'cosine', words "
                     "= '225'"):
    render.VALUES["r.json:rows/scorer=cosine,words=225/bleu:.3f"]()
  page = "took <!-- value: b.json:runs/0/wall_s:duration -->13 min<!-- /value -->"
  assert render.render(page) == page.replace("13 min", "12 min 50 s")
  with pytest.raises(KeyError, match="b.json: no item with name = 'z'"):
    render.VALUES["b.json:runs/name=z/wall_s:.1f"]()
  with pytest.raises(KeyError, match="no value named 'no_such_value'"):
    render.VALUES["no_such_value"]()


def test_a_quote_picks_a_list_item_by_the_fields_that_name_it(
    tmp_path, monkeypatch):
  """A position that fields name is refused with the selector to write; it
  stays where no field that every item has names the item (a measurement,
  whose name ends in its unit, names nothing)."""
  render = _renderer()
  monkeypatch.setattr(render.quoted, "RESULTS", str(tmp_path))
  (tmp_path / "m.json").write_text(json.dumps({"results": [
      {"method": m, "n": n, "devices": d, "total_s": n * d / 1e4}
      for m in ("ours", "faiss") for n in (10, 20) for d in (1, 8)]}))
  with pytest.raises(KeyError, match="item 5 is picked by position; write "
                     "'devices=8,method=faiss,n=10'"):
    render.VALUES["m.json:results/5/total_s:.4f"]()
  assert render.VALUES[
      "m.json:results/method=faiss,n=10,devices=8/total_s:.4f"]() == "0.0080"
  (tmp_path / "s.json").write_text(json.dumps({"steps": [
      {"step": "python3 -m venv .venv", "exit": 0, "wall_s": 2.5,
       "peak_rss_mib": 75},
      {"step": "paraflax pipeline --workdir runs/tiny", "exit": 0,
       "wall_s": 191.2, "peak_rss_mib": 1873, "equal": 130}]}))
  assert render.VALUES["s.json:steps/1/wall_s:duration"]() == "3 min 11 s"
  (tmp_path / "h.json").write_text(json.dumps({"hardware": {
      "name": "intel-xeon-2core", "cores": 2,
      "cpu_id": "family 6, model 207, stepping 2"}}))
  assert render.VALUES["h.json:hardware:cpu"]() == (
      "Intel Xeon (Emerald Rapids), 2 cores")


def test_a_typed_figure_is_found_and_a_rendered_or_quoted_one_is_not():
  typed = _tool("typed_figures")
  text = ("took 12 min 50 s at 6.9 % and 1.64x faiss's speed, on 2 x 4\n"
          "devices; `3 s` in code, <!-- value: b.json:c:.1f -->4.5"
          "<!-- /value --> s rendered, 217k events/s\n```\n9 s\n```\n"
          "and 30\ns over a line break; BLEU 6.21, STSb dev-tuning 27.95,\n"
          "Pearson 0.3280 and P@1 38.9 typed, the test 1-4-grams and F1 "
          "<!-- value: t.f1 -->53.61<!-- /value --> not; 0.4 µs a row\n"
          "in 214 bytes a row, 8, byte for byte, 1,024 MiB")
  assert typed.figures(text) == [(1, "12 min"), (1, "50 s"), (1, "6.9 %"),
                                 (1, "1.64x"), (2, "217k events/s"),
                                 (6, "30 s"), (7, "BLEU 6.21"),
                                 (7, "dev-tuning 27.95"),
                                 (8, "Pearson 0.3280"), (8, "P@1 38.9"),
                                 (8, "0.4 µs"), (9, "214 bytes"),
                                 (9, "1,024 MiB")]


def test_a_typed_table_s_decimals_and_a_series_of_scores_are_figures():
  """Cells and score pairs carry no unit: a decimal number in a row of a
  typed table or in a series ("54.06 / 59.35") is a figure; the same in
  a rendered table, an integer cell or a version is not."""
  typed = _tool("typed_figures")
  text = ("| m | order 2 |\n|---|---|\n| 2 | **0.493** / 0.532 (743.2) |\n"
          "scores 54.06 / 59.35; version 1.15.1, 12 steps\n"
          "<!-- table: t -->\n| 3 | 0.7 |\n<!-- /table -->\n| 4 | 5 |")
  assert typed.figures(text) == [(3, "0.493"), (3, "0.532"), (3, "743.2"),
                                 (4, "54.06 / 59.35")]


def test_a_span_of_decimals_and_a_decimal_after_what_it_measures_are_figures():
  """A span ("0.87-0.88", "1.00 to 1.23") and a decimal number a few words
  after a loss, ratio or recall (across a line break, past "at step N")
  are figures; a flag's value ("ratio=1.05"), a rendered span and a
  version range with no decimals are not."""
  typed = _tool("typed_figures")
  text = ("recall 0.87-0.88 and 1.00 to\n1.23; ratio 1.00 for the NMT; loss\n"
          "at step 30 6.5773625 and more; --thresholds ratio=1.05;\n"
          "<!-- value: v -->0.1-0.2<!-- /value -->, versions 3 to 4")
  assert typed.figures(text) == [(1, "recall 0.87-0.88"), (1, "1.00 to 1.23"),
                                 (2, "ratio 1.00"),
                                 (2, "loss at step 30 6.5773625")]


def test_a_table_definitions_typed_cell_is_a_figure_and_its_value_cell_not():
  """A hand-written cell of lab/tables/*.json reaches a rendered table: a
  time typed there is a figure, a {NAME} cell rendered from VALUES not."""
  typed = _tool("typed_figures")
  text = ('{"time": "under 1 s", "cells": ["{h100.train_time}", '
          '"BLEU {h100.nmt_de.bleu}"]}')
  assert typed.figures(text) == [(1, "1 s")]


def test_a_notebooks_markdown_cells_are_read_for_typed_figures_not_its_code(
    tmp_path):
  """A notebook's prose (its Markdown cells) types figures a user reads;
  its code cells' numbers are settings of the code."""
  typed = _tool("typed_figures")
  notebook = tmp_path / "n.ipynb"
  notebook.write_text(json.dumps({"cells": [
      {"cell_type": "markdown", "source": ["trains in about\n", "8 minutes"]},
      {"cell_type": "code", "source": ["time.sleep(5)  # 5 s\n"]}]}))
  assert typed.page_figures(str(notebook)) == [("cell 1, line 2", "8 minutes")]


def test_every_typed_figure_is_listed_with_why_it_is_typed():
  """README.md, docs/, the config headers, the notebooks, the lab's pages
  (but the generated lab/figures.md) and the table definitions of
  lab/tables/ render their measured figures; the few typed ones (settings,
  transcriptions) are listed in lab/tables/typed_figures.json, and
  lab/figures.md shows the list."""
  typed = _tool("typed_figures")
  checked = {str(pathlib.Path(p).relative_to(ROOT)) for p in typed._pages()}  # pylint: disable=protected-access
  assert {"README.md", "lab/performance.md", "lab/fidelity.md",
          "lab/mining.md", "lab/scaling.md", "lab/README.md",
          "lab/benchmarks/README.md", "lab/tables/headline.json",
          "colabs/mined_pairs.ipynb"} <= checked
  assert not checked & set(typed.UNCHECKED)
  problems = typed.problems()
  assert problems == [], "\n".join(problems)


def test_every_listed_table_row_is_computed_from_kept_output():
  """No table row is typed: each row of lab/tables/<table>.json names the
  kind of output it is computed from (run_tables.ROWS), or the kept run
  whose points it shows (gran_ablations.json)."""
  tables = _tool("run_tables")
  for path in (ROOT / "lab" / "tables").glob("*.json"):
    for row in json.loads(path.read_text(encoding="utf-8")).get("rows", []):
      assert row.get("from") in tables.ROWS or (
          "from" not in row and tables.run_results.load(row["run"])), (
              f"{path.name}: {row}")


def test_collect_result_keeps_only_a_commands_output(tmp_path, monkeypatch,
                                                     capsys):
  collect = _tool("collect_result")
  monkeypatch.setattr(collect.run_results, "RUNS", str(tmp_path / "runs"))
  monkeypatch.setattr(collect.run_results, "ROOT", str(tmp_path))
  args = ["--table", "t", "--name", "n", "--hardware", "2 cores",
          "--command", "paraflax train --config configs/gran.py --workdir "
          "runs/gran && paraflax eval-sts --workdir runs/gran"]
  pasted = tmp_path / "sts.json"
  pasted.write_text(json.dumps({"columns": [], "rows": []}))
  assert collect.main([str(pasted), *args]) == 1
  assert "not a command's output" in capsys.readouterr().err
  sts = tmp_path / "gran" / "sts.json"  # what eval-sts writes, in shape
  sts.parent.mkdir()
  sts.write_text(json.dumps({"datasets": {}, "groups": {}, "checkpoint_step":
                             1, "semeval_2012_2015": {}}))
  assert collect.main([str(sts), *args[:-1], "paraflax eval-sts --workdir "
                       "/home/me/gran"]) == 1
  assert "absolute path" in capsys.readouterr().err
  failed = tmp_path / "sweep" / "results.json"  # a point's message names
  failed.parent.mkdir()                          # the file as it was given
  failed.write_text(json.dumps({"base": "b", "columns": [], "points": [
      {"status": "failed: /home/me/runs/x.scored.jsonl: too few pairs"}]}))
  assert collect.main([str(failed), *args]) == 1
  assert "names paths of this machine" in capsys.readouterr().err
  assert collect.main([str(sts), *args[:-1], "paraflax eval-sts --workdir "
                       "runs/gran"]) == 1  # a workdir of another command
  assert ("reads runs/gran, which none of its steps makes"
          in capsys.readouterr().err)
  assert collect.main([str(sts), *args]) == 0
  kept = tmp_path / "runs" / "t"
  assert (kept / "n.json").read_bytes() == sts.read_bytes()
  about = json.loads((kept / "n.about.json").read_text())
  assert about["kind"] == "eval-sts" and about["output"] == "gran/sts.json"


def test_collect_result_records_the_commit_and_path_of_a_clone_s_output(
    tmp_path, monkeypatch):
  """A run made in a fresh clone keeps the clone's HEAD and the output's
  path inside it, where a rerun of the command writes it."""
  collect = _tool("collect_result")
  monkeypatch.setattr(collect.run_results, "RUNS", str(tmp_path / "runs"))
  clone = tmp_path / "clone"
  git = lambda *a: subprocess.run(  # noqa: E731
      ["git", "-C", str(clone), "-c", "user.name=t", "-c", "user.email=t@t",
       *a], check=True, capture_output=True, text=True).stdout.strip()
  clone.mkdir()
  git("init", "-q")
  git("commit", "-q", "--allow-empty", "-m", "m")
  sts = clone / "runs" / "g" / "sts.json"
  sts.parent.mkdir(parents=True)
  sts.write_text(json.dumps({"datasets": {}, "groups": {}, "checkpoint_step":
                             1, "semeval_2012_2015": {}}))
  assert collect.main([str(sts), "--table", "t", "--name", "n", "--hardware",
                       "2 cores", "--command", "paraflax train --config c "
                       "--workdir runs/g && paraflax eval-sts --workdir "
                       "runs/g"]) == 0
  about = json.loads((tmp_path / "runs" / "t" / "n.about.json").read_text())
  assert about["commit"] == git("rev-parse", "HEAD")
  assert about["output"] == "runs/g/sts.json"


def test_every_marked_table_has_a_renderer():
  names = set(_renderer().TABLES)
  for path in _docs():
    for name in re.findall(r"<!-- table: ([\w-]+) -->",
                           path.read_text(encoding="utf-8")):
      assert name in names, f"{path.name}: no renderer for table {name!r}"


# --- links ------------------------------------------------------------------

def _anchors(path: pathlib.Path) -> set[str]:
  """GitHub's anchors of a Markdown file's headings."""
  out = set()
  for line in path.read_text(encoding="utf-8").splitlines():
    m = re.match(r"#+ (.*)", line)
    if m:
      slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower())
      out.add(slug.replace(" ", "-"))
  return out


def _links(path: pathlib.Path):
  text = path.read_text(encoding="utf-8")
  text = re.sub(r"```.*?```", "", text, flags=re.S)
  for target in re.findall(r"\]\(([^)\s]+)\)", text):
    if not re.match(r"[a-z]+:", target):
      yield target


@pytest.mark.parametrize("path", _docs(),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(path):
  broken = []
  for target in _links(path):
    file, _, anchor = target.partition("#")
    resolved = (path.parent / file).resolve() if file else path
    if not resolved.exists():
      broken.append(target)
    elif anchor and resolved.suffix == ".md" and anchor not in _anchors(
        resolved):
      broken.append(target)
  assert not broken, f"{path.name}: links that resolve to nothing: {broken}"


# --- text that states what holds now ----------------------------------------

# Text that narrates how the project was built instead of what holds: a
# numbered work item or period of work, a run's date or clock time, the
# load of the machine a run shared, a folder or script on one machine, a
# file outside the repository (but the data folder), what the code or a
# run was before.
HISTORY = re.compile("|".join((
    r"\b[Ss]essions? \d+",
    r"\b[Ii]ssues? \d+",
    r"\b[Ii]ssue \d+'s",
    r"/work/",
    r"(?<![\w.~$])/(?:home|root|Users)/",
    r"\.\./shared/(?!data\b)",
    r"\bDESIGN(?:\.md)?\b",
    r"\bsince (?:that|this|the last) (?:run|change|commit|fix|version)\b",
    r"\b(?:has|have) run it since\b",
    r"\bas it was (?:read|written|built|before)\b",
    r"\bbefore it (?:streamed|was \w+)\b",
    r"\bbefore this (?:code|change|commit|fix|version)",
    r"\b(?:runs?|version) before this\b",
    r"\bwas: ",
    r"\bnot yet the case\b",
    r"\b(?:too|then still) now\b",
    r"\bno longer (?:is|are|reads|writes|takes|runs|uses|needs|does|holds)\b",
    r"\bused to (?:be|read|write|take|run|give)\b",
    r"\b(?:went|was) up\b",
    r"\bruns/i\d+",
    r"\bruns_(?:i|s|sts|bi)\d*",
    r"\bi1\d_(?:feed|onmt|base|bridge|norm|fr_feed)\b",
    r"not in git",
    r"\b20\d\d-\d\d-\d\d\b",
    r"\b\d\d:\d\d(?:-\d\d:\d\d)? UTC\b",
    r"\bload average",
    r"README,? rows? \d+",
    r"\brows? \d+-\d+ of the README",
    r"_s\d+(?:_[a-z0-9]+)*\.json",
    r"\.\./shared/DESIGN\.md",
    # README sections moved to docs/: name the docs page instead.
    r"(?<!lab/benchmarks/)README(?:\.md)?,? (?:sections? )?\"",
    r"README's \w+ section",
)))

def _user_text() -> list[pathlib.Path]:
  paths = _docs() + sorted((ROOT / "configs").rglob("*.py"))
  paths += sorted((ROOT / "paraflax").rglob("*.py"))
  paths += sorted((ROOT / "colabs").glob("*.ipynb"))
  paths += sorted((ROOT / "lab" / "experiments").rglob("*.md"))
  return paths


def _text(path: pathlib.Path) -> str:
  text = path.read_text(encoding="utf-8")
  if path.suffix == ".ipynb":  # the cells, not the outputs
    cells = json.loads(text)["cells"]
    return "\n".join("".join(c["source"]) for c in cells)
  return text


def history_hits(paths) -> list[str]:
  hits = []
  for path in paths:
    rel = str(path.relative_to(ROOT))
    for n, line in enumerate(_text(path).splitlines(), 1):
      for m in HISTORY.finditer(line):
        hits.append(f"{rel}:{n}: {m.group(0)!r} in {line.strip()[:100]!r}")
  return hits


def test_user_text_states_what_holds_now():
  hits = history_hits(_user_text())
  assert not hits, "history in user-facing text:\n" + "\n".join(hits)


# A path of one machine, or a file outside the repository but the data
# folder: in any file a user runs or reads.
MACHINE = re.compile(r"/work/|(?<![\w.~$])/(?:home|root|Users)/"
                     r"|\.\./shared/(?!data\b)|\bDESIGN\.md\b")


def test_no_machine_paths_or_files_outside_the_repository():
  paths = _user_text() + [ROOT / "setup.py", ROOT / "constraints.txt"]
  for folder, pattern in (("lab/benchmarks", "**/*.py"), ("lab/benchmarks", "**/*.sh"),
                          ("lab/tools", "*.py"), ("lab/experiments", "**/*.py"), ("launch", "*.sh")):
    paths += sorted((ROOT / folder).glob(pattern))
  hits = [f"{path.relative_to(ROOT)}:{n}: {line.strip()[:100]!r}"
          for path in paths
          for n, line in enumerate(_text(path).splitlines(), 1)
          if MACHINE.search(line)]
  assert not hits, "machine paths or outside files:\n" + "\n".join(hits)


def test_test_names_state_what_they_check():
  bad = []
  for path in sorted((ROOT / "tests").glob("test_*.py")):
    for name in re.findall(r"^\s*def (test_\w+)",
                           path.read_text(encoding="utf-8"), re.M):
      if re.search(r"(?:issue|session)_?\d*|_s\d+_|_i\d+_", name):
        bad.append(f"{path.name}: {name}")
  assert not bad, bad


def test_the_text_test_catches_narration_and_machine_paths():
  planted = ("The decoding follows the width too now, since that run; the "
             "Task as it was read before it streamed (was: whole, now "
             "streamed), which is not yet the case; the two runs before this "
             "code's pad; see ../shared/ENVIRONMENT.md, DESIGN.md and "
             "/home/me/runs or /root/x.")
  found = [m.group(0) for m in HISTORY.finditer(planted)]
  assert len(found) >= 10, found
  assert not list(HISTORY.finditer(
      "$PARAFLAX_DATA_DIR (default ../shared/data beside this checkout), "
      "~/paraflax on each worker, runs/gran/report.md; folders of points "
      "this sweep no longer has."))
  assert all(MACHINE.search(p) for p in ("/work/peers/bin", "/home/me",
                                         "../shared/ENVIRONMENT.md"))
  assert not MACHINE.search("../shared/data/multi30k, ~/paraflax, /tmp/w")


def test_the_text_test_catches_history():
  planted = ("Measured in session 17 (2026-11-27 04:30 UTC, load average 2), "
             "see runs/i11 and /work/runs_sts/chain.sh (not in git); issue 14.")
  found = [m.group(0) for m in HISTORY.finditer(planted)]
  assert len(found) >= 8, found
  assert not list(HISTORY.finditer(
      "Time: 6 min 49 s on 2 idle cores of an AMD EPYC (lab/benchmarks/gpu/"
      "session.sh; lab/benchmarks/README.md, \"Mining\")."))
