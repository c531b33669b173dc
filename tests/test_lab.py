"""The record in lab/: every result file matches the sha256 its writer
entered in lab/results/manifest.json, in every folder; a benchmark's
writer records how to rerun it; lab/run.py reruns a file by its name."""
import argparse
import ast
import concurrent.futures
import hashlib
import importlib.util
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time
import types

import pytest

from tests import command_lines

ROOT = pathlib.Path(__file__).resolve().parent.parent
LAB = ROOT / "lab"


def _module(path: pathlib.Path):
  sys.path.insert(0, str(path.parent))
  spec = importlib.util.spec_from_file_location(path.stem, path)
  module = importlib.util.module_from_spec(spec)
  sys.modules[path.stem] = module  # where its dataclasses look it up
  spec.loader.exec_module(module)
  return module


@pytest.fixture(name="manifest")
def _manifest():
  return _module(LAB / "tools" / "manifest.py")


@pytest.fixture(name="results")
def _results(tmp_path):
  copy = tmp_path / "results"
  shutil.copytree(LAB / "results", copy,
                  ignore=shutil.ignore_patterns("*.lock", "*.tmp"))
  return copy


def test_every_result_file_matches_its_manifest_entry(manifest):
  assert manifest.problems() == [], "python lab/tools/manifest.py"


@pytest.mark.parametrize("rel", [
    "mining_rerank.1e5.amd-epyc-2core.json",  # a benchmark's JSON
    "runs/pipeline_tiny/tiny.json",  # a collected run
    "gpu_session.de-en.nvidia-h100/nmt_de.eval.log",  # a log, two deep
])
def test_a_hand_edited_result_file_fails_the_check(manifest, results, rel):
  path = results / rel
  path.write_bytes(path.read_bytes().replace(b"1", b"2", 1))
  found = manifest.problems(str(results))
  assert len(found) == 1 and found[0].startswith(f"{rel}: changed"), found
  assert manifest.main(["--results", str(results)]) == 1


def test_an_unlisted_or_missing_file_fails_the_check(manifest, results):
  (results / "pasted.json").write_text("{}")
  (results / "compile_presets.json").unlink()
  found = manifest.problems(str(results))
  assert [f.split(":")[0] for f in found] == ["pasted.json",
                                              "compile_presets.json"]


def test_write_result_records_how_to_rerun_and_its_hash(manifest, results,
                                                        monkeypatch):
  children = _module(LAB / "benchmarks" / "children.py")
  monkeypatch.setattr(manifest, "RESULTS", str(results))
  monkeypatch.setitem(sys.modules, "manifest", manifest)
  monkeypatch.delenv("PARAFLAX_LAB_NEEDS", raising=False)
  out = results / "x.intel-2core.json"
  head = children.run_facts(str(LAB / "benchmarks" / "x.py"),
                            ["--rows", "5", "--output", str(out)])
  children.write_result(str(out), {**head, "rows": [1]},
                        peers={"faiss-cpu": "1.0"})
  data = json.loads(out.read_text())
  assert data["command"].startswith("lab/benchmarks/x.py --rows 5 --output ")
  assert len(data["commit"].split("+")[0]) == 40
  assert data["hardware"]["cores"] >= 1 and data["hardware"]["cpu"]
  assert "jax" in data["versions"] and len(data["load_average"]) == 3
  assert data["run"]["wall_s"] >= 0 and data["run"]["cpu_s"] > 0
  assert data["run"]["peers"] == {"faiss-cpu": "1.0"}
  assert "needs" not in data["run"]  # run by hand, not by lab/run.py
  entry = manifest.load(str(results))["x.intel-2core.json"]
  assert entry["command"] == data["command"]
  assert manifest.problems(str(results)) == []
  out.write_text(out.read_text().replace('"rows": [\n    1', '"rows": [\n    2'))
  assert manifest.problems(str(results))[0].startswith("x.intel-2core.json")
  need = {"need": "t/a", "command": "paraflax train", "wall_s": 8.4,
          "output": "runs/a/evals.json", "values": 5, "equal": 5}
  monkeypatch.setenv("PARAFLAX_LAB_NEEDS", json.dumps([need]))
  children.write_result(str(out), {**head, "rows": [1]})
  assert json.loads(out.read_text())["run"]["needs"] == [need]
  assert manifest.problems(str(results)) == []


def test_a_result_records_its_inputs_without_this_machine_s_folders(
    tmp_path, monkeypatch):
  children = _module(LAB / "benchmarks" / "children.py")
  monkeypatch.setenv("PARAFLAX_DATA_DIR", str(tmp_path / "corpora"))
  root = LAB.parent
  assert children.portable_path(str(root / "runs" / "bt.jsonl"),
                                "INPUT") == "runs/bt.jsonl"
  assert children.portable_path(str(tmp_path / "corpora" / "m30k" / "en.gz"),
                                "TEXT") == "$PARAFLAX_DATA_DIR/m30k/en.gz"
  assert children.portable_path(str(tmp_path / "elsewhere"), "DATA") == "DATA"


def test_a_config_and_its_name_are_recorded_from_the_repository_root():
  children = _module(LAB / "benchmarks" / "children.py")
  assert children.portable_path(str(LAB.parent / "configs" / "nmt.py") + ":de",
                                "CONFIG") == "configs/nmt.py:de"


# Recorded result files that name a folder of the machine that ran them,
# with what it takes to write each again; their scripts record none now,
# so a rerun drops the file from this list, and nothing joins it.
_MACHINE_FOLDERS_UNTIL_RERUN = {
    **{f"gpu_scale.mining-compile.nvidia-h200/compile_{p}.json": (
        "a GPU: `paraflax compile --json` keeps its own command, whose "
        "--json is the lent machine's scratch") for p in (
            "bilingual", "gran", "mine", "nmt", "search")},
}
# An absolute path not inside a URL, a placeholder or a relative path.
_ABSOLUTE_PATH = re.compile(r"(?<![\w.:/$~-])/[A-Za-z_][\w.-]*/[\w./-]+")


def test_recorded_result_files_name_no_folder_of_the_machine_that_ran_them(
    manifest):
  found = {rel for rel, entry in manifest.load().items()
           if entry["written_by"] and rel.endswith(".json")
           and _ABSOLUTE_PATH.search((LAB / "results" / rel).read_text())}
  assert found == set(_MACHINE_FOLDERS_UNTIL_RERUN), (
      sorted(found ^ set(_MACHINE_FOLDERS_UNTIL_RERUN)))


def test_stage_scale_refuses_scoring_stages_without_their_records(tmp_path):
  """The stages after backtranslate read --tmp's bt.jsonl: without
  backtranslate in --stages and without that file, the script stops
  before it writes anything."""
  stage_scale = _module(LAB / "benchmarks" / "stage_scale.py")
  output = tmp_path / "out.json"
  with pytest.raises(SystemExit, match="bt.jsonl not found.*add backtranslate"):
    stage_scale.main(["--nmt-workdir", str(tmp_path / "nmt"), "--stages",
                      "filter", "--tmp", str(tmp_path / "scratch"),
                      "--output", str(output)])
  assert not output.exists() and not (tmp_path / "scratch").exists()


def test_a_result_without_its_head_is_refused(tmp_path):
  children = _module(LAB / "benchmarks" / "children.py")
  with pytest.raises(ValueError, match="run_facts"):
    children.write_result(str(tmp_path / "r.json"), {"rows": []})
  assert not (tmp_path / "r.json").exists()


def test_run_gives_a_files_command_in_todays_layout():
  run = _module(LAB / "run.py")
  entries = {"m.json": {"command": ".venv/bin/python benchmarks/mining_"
                        "rerank.py --rows 9 --work WORK --output "
                        "benchmarks/results/old.json", "written_by": None},
             "noted.json": {"command": "bash x.sh (pytest, then y)",
                            "written_by": None},
             "told.json": {"command": "a; b (in x) c", "written_by": None},
             "kept.json": {"command": None, "written_by": None}}
  assert run.command_of("m.json", entries) == [
      ".venv/bin/python", "lab/benchmarks/mining_rerank.py", "--rows", "9",
      "--work", "WORK", "--output", "lab/results/m.json"]
  assert run.command_of("noted.json", entries) == ["bash", "x.sh"]
  assert run.note_of(entries["noted.json"]["command"])[1] == "pytest, then y"
  for name in ("told.json", "kept.json"):
    with pytest.raises(ValueError):
      run.command_of(name, entries)
  with pytest.raises(SystemExit, match="set WORK"):
    run._resolved(run.command_of("m.json", entries))  # pylint: disable=protected-access


def test_a_collected_run_s_command_keeps_its_own_output():
  """A collected run's command writes its own output, which is then
  collected: pointing its --output at the kept file would overwrite it."""
  run = _module(LAB / "run.py")
  entries = {"runs/t/x.json": {
      "command": "paraflax noise-bitext --output noisy.tsv && paraflax "
                 "eval-filtering --output runs/filt",
      "written_by": "lab/tools/collect_result.py"}}
  argv = run.command_of("runs/t/x.json", entries)
  assert argv[argv.index("--output") + 1] == "noisy.tsv"
  assert "lab/results/runs/t/x.json" not in argv


def test_a_collected_run_s_commands_print_as_a_shell_line():
  run = _module(LAB / "run.py")
  assert run.shell_line(["paraflax", "train", "--x=a b", "&&", "paraflax",
                         "eval"]) == "paraflax train '--x=a b' && paraflax eval"


def test_every_kept_result_s_command_reruns_by_name(manifest):
  """`python lab/run.py NAME` runs (or, for a collected run, prints) every
  recorded command: none is prose around the command."""
  run = _module(LAB / "run.py")
  entries = manifest.load()
  for name, entry in entries.items():
    if entry["command"]:
      assert run.command_of(name, entries), name


def test_every_kept_run_s_paraflax_commands_would_start(manifest):
  """Each `paraflax` step of every recorded command parses at this commit,
  its flags its command's and its overrides keys of its config."""
  run = _module(LAB / "run.py")
  steps = [(name, step) for name, entry in manifest.load().items()
           if entry["command"]
           for step in run.note_of(entry["command"])[0].split(" && ")
           if command_lines.is_paraflax(step)]
  steps += [(name, step) for table in (run.run_needs.NEEDS,
                                       run.run_needs.BENCHMARK_NEEDS)
            for name, needs in table.items() for need in needs
            for step in need.split(" && ")
            if command_lines.is_paraflax(step)]
  assert len(steps) > 500
  bad = [f"{name}: {step}\n  {why}" for name, step in steps
         if (why := command_lines.problem(step))]
  assert not bad, "\n".join(bad)


def test_every_kept_result_s_lab_scripts_would_start(manifest, tmp_path,
                                                    monkeypatch):
  """Each lab script that a recorded command runs (as lab/run.py lays it
  out today) is there and parses its arguments, so a rerun cannot stop
  at a renamed flag after an hour of the steps before it."""
  monkeypatch.chdir(tmp_path)  # where a script that ran on would write
  run = _module(LAB / "run.py")
  entries = manifest.load()
  lines = {}
  for name, entry in entries.items():
    if entry["command"] and "(" not in run.note_of(entry["command"])[0]:
      for line in command_lines.script_lines(run.command_of(name, entries)):
        lines.setdefault(tuple(line), name)
  assert len(lines) > 50
  bad = [f"{name}: {' '.join(line)}\n  {why}" for line, name in lines.items()
         if (why := command_lines.script_problem(list(line), str(ROOT)))]
  assert not bad, "\n".join(bad)


# One preset of each config file (two where presets differ in their keys);
# a sweep's keys are those of configs/sweeps/common.py.
CONFIG_SPECS = (
    "avg.py", "bilingual.py:de", "domain.py", "domain_pivot.py", "gran.py",
    "lstmavg.py", "mine.py", "mlp_similarity.py", "nmt.py:de",
    "paraphrase.py:avg", "paraphrase.py:gran", "paraphrase.py:lstmavg",
    "pipeline.py:tiny", "ppdb_words.py", "ref_classifier.py:avg",
    "ref_classifier.py:lstm", "papers/artetxe2019.py",
    "papers/domain_paraphrasing.py:select",
    "papers/domain_paraphrasing.py:pivot", "papers/kim2019.py:de",
    "papers/kim2019_mlp.py", "papers/kim2019_table5.py:60",
    "papers/wieting2017.py:gran", "sweeps/overlap.py:avg,bleu,paper")
_SHARED_PIECES = ("common.py", "papers/base.py", "sweeps/common.py")


def _config_keys() -> set[str]:
  """Every dotted key of CONFIG_SPECS' configs ("evals.dev_all.data")."""
  from paraflax import config as config_lib  # pylint: disable=g-import-not-at-top

  def keys(node, prefix: str = ""):
    for key, value in node.items():
      yield prefix + key
      if hasattr(value, "items"):
        yield from keys(value, f"{prefix}{key}.")

  return {k for spec in CONFIG_SPECS
          for k in keys(config_lib.load(str(ROOT / "configs" / spec)))}


def _config_reads(source: str) -> set[str]:
  """The config keys a lab script reads or sets: `config.a.b` chains (also
  `recipe.config.a`), up to a ConfigDict method, and `--config.a.b=` flags.
  A key set inside `with config.unlocked():` may be new, and is left out."""
  import ml_collections  # pylint: disable=g-import-not-at-top
  tree = ast.parse(source)
  methods = set(dir(ml_collections.ConfigDict))
  config_module = any(
      (alias.asname or alias.name) == "config" for node in ast.walk(tree)
      if isinstance(node, (ast.Import, ast.ImportFrom)) for alias in node.names)
  parents = {c: p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
  unlocked = {id(n) for w in ast.walk(tree) if isinstance(w, ast.With)
              and any("unlocked" in ast.unparse(i.context_expr)
                      for i in w.items)
              for stmt in w.body for n in ast.walk(stmt)}
  found = set(re.findall(r"--config\.([a-z_][\w.]*)=", source))
  for node in ast.walk(tree):
    if (not isinstance(node, ast.Attribute)
        or isinstance(parents.get(node), ast.Attribute)
        or (isinstance(node.ctx, ast.Store) and id(node) in unlocked)):
      continue
    chain, root = [], node
    while isinstance(root, ast.Attribute):
      chain.insert(0, root.attr)
      root = root.value
    if chain[0] == "config":  # recipe.config.seed
      chain = chain[1:]
    elif not (isinstance(root, ast.Name) and root.id == "config"
              and not config_module):
      continue
    cut = next((i for i, c in enumerate(chain) if c in methods), len(chain))
    if cut:
      found.add(".".join(chain[:cut]))
  return found


def test_the_config_specs_cover_every_config_file():
  files = {str(p.relative_to(ROOT / "configs"))
           for p in (ROOT / "configs").rglob("*.py")}
  named = {spec.partition(":")[0] for spec in CONFIG_SPECS}
  assert files - named - set(_SHARED_PIECES) <= {
      str(p.relative_to(ROOT / "configs"))
      for p in (ROOT / "configs" / "sweeps").glob("*.py")}


def test_a_config_key_no_config_has_is_found_in_a_lab_script():
  source = ("from paraflax.data import specs\n"
            "def f(config):\n"
            "  with config.unlocked():\n"
            "    config.evals.dev_all.sentences = 5\n"
            "  specs.pairs(config.evals.dev_all.task)\n"
            "  return config.decode.to_dict(), ['--config.model.width=3']\n")
  reads = _config_reads(source)
  assert reads == {"evals.dev_all.task", "decode", "model.width"}
  assert reads - _config_keys() == {"evals.dev_all.task", "model.width"}


def test_every_config_key_a_lab_script_reads_is_a_key_of_a_config():
  """A lab script that reads a key the configs no longer have stops at
  that line only when it runs, maybe an hour into a benchmark."""
  known = _config_keys()
  reads = {path.relative_to(ROOT): _config_reads(path.read_text())
           for path in sorted(LAB.rglob("*.py"))}
  assert sum(map(len, reads.values())) > 80
  bad = {str(p): sorted(keys - known) for p, keys in reads.items()
         if keys - known}
  assert not bad, bad


def test_a_timed_command_waits_for_the_load_before_it_to_settle(
    monkeypatch):
  settle = _module(LAB / "tools" / "settle.py")
  clock = {"now": 0.0}
  loads = iter([2.3, 1.4, 0.4, 0.1])
  monkeypatch.setattr(settle.os, "getloadavg", lambda: (next(loads), 0, 0))
  monkeypatch.setattr(settle.time, "monotonic", lambda: clock["now"])
  monkeypatch.setattr(settle.time, "sleep",
                      lambda s: clock.update(now=clock["now"] + s))
  assert settle.settle() == 0.4 and clock["now"] == 2 * settle._SETTLE_POLL_S  # pylint: disable=protected-access
  monkeypatch.setattr(settle.os, "getloadavg", lambda: (3.0, 0, 0))
  clock["now"] = 0.0
  assert settle.settle() == 3.0  # other jobs: it waits no longer than the cap
  assert clock["now"] >= settle._SETTLE_MAX_S  # pylint: disable=protected-access


def test_several_benchmarks_run_in_turn_each_need_once(monkeypatch):
  run = _module(LAB / "run.py")
  ran, settled = [], []
  monkeypatch.setattr(run, "settle", lambda: settled.append(len(ran)))
  monkeypatch.setattr(run.subprocess, "run", lambda argv, **_: (
      ran.append(argv), types.SimpleNamespace(returncode=0))[1])
  monkeypatch.setenv("ONMT_BIN", "/peer/bin")
  names = [f"nmt_vs_opennmt.encoder-128-{v}.intel-xeon-2core.json"
           for v in ("2core", "1core-idle")]
  assert run.main(names) == 0
  assert [argv[-1] for argv in ran if argv[0] == "bash"] == [
      run.needs_of(names[0], run.manifest.load())[0][1]]  # the NMT, once
  outputs = [argv[argv.index("--output") + 1] for argv in ran
             if argv[0] != "bash"]
  assert outputs == [f"lab/results/{n}" for n in names]
  assert settled == [1, 2]  # after the need, and after the first benchmark
  ran.clear()
  settled.clear()
  assert run.main(["compile_presets.json"]) == 0  # it needs nothing
  assert settled == [0] and len(ran) == 1  # the load of work before the call


def test_several_benchmarks_stop_before_any_work_without_a_placeholder(
    monkeypatch):
  run = _module(LAB / "run.py")
  monkeypatch.delenv("ONMT_BIN", raising=False)
  monkeypatch.setattr(run.subprocess, "run", lambda *a, **k: pytest.fail(
      "ran before every placeholder was set"))
  with pytest.raises(SystemExit, match="set ONMT_BIN"):
    run.main(["scoring_throughput.intel-xeon-2core.json",
              "nmt_vs_opennmt.encoder-128-2core.intel-xeon-2core.json"])


def test_a_placeholder_named_like_a_shell_variable_reads_name_arg(
    monkeypatch):
  """A positional path is recorded as PATH, which every shell sets: its
  value comes from PATH_ARG, never from the shell's PATH."""
  run = _module(LAB / "run.py")
  monkeypatch.delenv("PATH_ARG", raising=False)
  monkeypatch.setenv("WORK", "/scratch/w")
  with pytest.raises(SystemExit, match="set PATH_ARG "):
    run._resolved(["x.py", "PATH", "--work", "WORK"])  # pylint: disable=protected-access
  monkeypatch.setenv("PATH_ARG", "/scratch/out")
  assert run._resolved(["x.py", "PATH", "--work", "WORK"]) == [  # pylint: disable=protected-access
      "x.py", "/scratch/out", "--work", "/scratch/w"]


def test_every_collected_run_names_where_its_command_writes(manifest):
  """A rerun finds the output of every kept run's command, as the kind of
  command names it (a sweep's results.json, eval-ppdb's OUTPUT.json)."""
  run = _module(LAB / "run.py")
  kept_compare = _module(LAB / "tools" / "kept_compare.py")
  entries = manifest.load()
  for about_path in sorted((LAB / "results" / "runs").glob("*/*.about.json")):
    name = f"runs/{about_path.parent.name}/" + about_path.name.replace(
        ".about.json", ".json")
    about = json.loads(about_path.read_text())
    output = kept_compare.output_of(about, run.shell_line(run.command_of(
        name, entries)))
    kind = kept_compare.run_results.KINDS[about["kind"]]
    assert output.endswith(".json") and not os.path.isabs(output), name
    assert os.path.basename(output) == (kind.file or os.path.basename(
        output)), name


def test_comparing_a_need_with_its_kept_file_leaves_the_environment_alone():
  """lab/run.py compares a benchmark's needs through kept_compare, whose
  import loads neither children.py (which sets JAX_PLATFORMS and the log
  level for the whole process) nor jax."""
  check = ("import os, sys\nsys.path.insert(0, sys.argv[1])\n"
           "import kept_compare\nprint(sorted({'children', 'jax'} & "
           "set(sys.modules)), os.environ.get('JAX_PLATFORMS'))")
  env = {k: v for k, v in os.environ.items() if k != "JAX_PLATFORMS"}
  out = subprocess.run([sys.executable, "-c", check, str(LAB / "tools")],
                       env=env, capture_output=True, text=True, check=True)
  assert out.stdout.split() == ["[]", "None"], out


def test_a_rerun_compares_every_value_with_the_kept_file():
  kept_compare = _module(LAB / "tools" / "kept_compare.py")
  kept = {"sts": {"STSb.test": {"pearson": 0.5}, "n": [1, 2]}, "steps": 9}
  assert kept_compare.differences(kept, json.loads(json.dumps(kept))) == []
  now = {"sts": {"STSb.test": {"pearson": 0.51}, "n": [1]}, "extra": True,
         "steps": 9}
  assert kept_compare.differences(kept, now) == [
      ("extra", "(absent)", True), ("sts/STSb.test/pearson", 0.5, 0.51),
      ("sts/n/1", 2, "(absent)")]


def test_a_rerun_matches_rows_by_what_names_them_not_by_index():
  """A file written over two invocations holds its rows in another order
  than one invocation writes; they compare row by row."""
  kept_compare = _module(LAB / "tools" / "kept_compare.py")
  rows = [{"scorer": "cosine", "words": w, "bleu": b}
          for w, b in ((75, 1.0), (150, 2.0), (225, 3.0))]
  kept = {"rows": [rows[1], rows[0], rows[2]], "seed": 0}
  assert kept_compare.differences(kept, {"rows": rows, "seed": 0}) == []
  now = {"rows": [rows[0], {**rows[1], "bleu": 2.5}, rows[2]], "seed": 0}
  assert kept_compare.differences(kept, now) == [
      ("rows/scorer=cosine,words=150/bleu", 2.0, 2.5)]
  assert kept_compare.compare(kept, now)["equal"] == 9
  # A row one side lacks is absent there; rows that share no name, or no
  # field that names each row, compare by index.
  assert kept_compare.differences({"rows": rows[:2]}, {"rows": rows[1:]}) == [
      ("rows/scorer=cosine,words=225/bleu", "(absent)", 3.0),
      ("rows/scorer=cosine,words=225/scorer", "(absent)", "cosine"),
      ("rows/scorer=cosine,words=225/words", "(absent)", 225),
      ("rows/scorer=cosine,words=75/bleu", 1.0, "(absent)"),
      ("rows/scorer=cosine,words=75/scorer", "cosine", "(absent)"),
      ("rows/scorer=cosine,words=75/words", 75, "(absent)")]
  other = {"scorer": "csls", "words": 75, "bleu": 1.0}
  assert kept_compare.differences({"rows": rows[:1]}, {"rows": [other]}) == [
      ("rows/0/scorer", "cosine", "csls")]
  same = [{"scorer": "cosine", "bleu": 1.0}, {"scorer": "cosine", "bleu": 2.0}]
  assert kept_compare.differences({"r": same}, {"r": same[::-1]})[0][0] == (
      "r/0/bleu")


def _kept_sts_run(runs: pathlib.Path, pearson: float, name: str = "n",
                  command: str = "", **more) -> None:
  """A kept eval-sts run t/NAME (Pearson `pearson`) whose command, by
  default, writes a Pearson of 0.5 (and the fields `more`)."""
  data = {"datasets": {}, "groups": {}, "checkpoint_step": 2,
          "semeval_2012_2015": {"mean_pearson": pearson}}
  (runs / "t").mkdir(parents=True, exist_ok=True)
  (runs / "t" / f"{name}.json").write_text(json.dumps(data))
  written = json.dumps({**data, "semeval_2012_2015": {"mean_pearson": 0.5},
                        **more})
  (runs / "t" / f"{name}.about.json").write_text(json.dumps({
      "kind": "eval-sts", "config": "c", "hardware": "h", "time": "t",
      "command": command or (f"mkdir -p runs/{name} && echo '{written}' > "
                             f"runs/{name}/sts.json"),
      "output": f"runs/{name}/sts.json",
      "sha256": hashlib.sha256((runs / "t" / f"{name}.json").read_bytes())
                .hexdigest()}))


@pytest.fixture(name="rerun")
def _rerun(tmp_path, monkeypatch):
  """tools/rerun.py with its kept runs in tmp_path/runs, at a clean commit."""
  rerun = _module(LAB / "tools" / "rerun.py")
  monkeypatch.setattr(rerun.run_results, "RUNS", str(tmp_path / "runs"))
  monkeypatch.setattr(rerun.children, "commit", lambda: "c" * 40)
  monkeypatch.setattr(rerun, "settle", lambda: 0.0)  # the suite's own load
  return rerun


def test_a_rerun_runs_in_a_clone_and_keeps_what_it_measured(
    rerun, tmp_path, monkeypatch, capsys):
  runs = tmp_path / "runs"
  records = tmp_path / "reruns"
  _kept_sts_run(runs, 0.5)
  about = json.loads((runs / "t" / "n.about.json").read_text())
  assert rerun.rerun("runs/t/n.json", about["command"], records=records) == 0
  assert "4 of 4 kept values equal" in capsys.readouterr().out
  assert not (ROOT / "runs" / "n" / "sts.json").exists()  # in the clone
  compared, = (records / "t").glob("n.*.json")
  assert compared.name == rerun.record_name("n", kept=False)
  written = json.loads(compared.read_text())
  assert written["command"] == "lab/run.py runs/t/n.json"
  assert (written["equal"], written["values"], written["differences"]) == (
      4, 4, [])
  _kept_sts_run(runs, 0.4)
  assert rerun.rerun("runs/t/n.json", about["command"], keep=True,
                     records=records) == 1
  out = capsys.readouterr().out
  assert "3 of 4 kept values equal" in out and (
      "semeval_2012_2015/mean_pearson: kept 0.4, now 0.5") in out
  assert "largest numeric difference: 0.1 (semeval_2012_2015" in out
  record = records / "t" / rerun.record_name("n", kept=True)
  written = json.loads(record.read_text())
  assert written["command"] == "lab/run.py runs/t/n.json --keep"
  assert written["kept"]["hardware"] == "h" and written["kept_now"]
  assert written["cpu_id"] == rerun.children.cpu_id() != ""
  kept_record = record.read_bytes()
  assert rerun.rerun("runs/t/n.json", about["command"],
                     records=records) == 0  # a check of the kept file
  assert record.read_bytes() == kept_record  # how it was made stays
  assert json.loads(compared.read_text())["equal"] == 4
  tables = _module(LAB / "tools" / "rerun_tables.py")
  monkeypatch.setattr(tables.run_results, "RERUNS", str(records))
  checked, kept = tables.reruns()[-2:]
  assert kept.startswith("| `runs/t/n.json` | h | ") and (
      "| 3 of 4 | 0.1 (`semeval_2012_2015/mean_pearson`) | yes |") in kept
  assert checked.endswith("| 4 of 4 | none | no |")
  about = json.loads((runs / "t" / "n.about.json").read_text())
  assert json.loads((runs / "t" / "n.json").read_text())[
      "semeval_2012_2015"]["mean_pearson"] == 0.5
  assert about["commit"] == "c" * 40 and about["hardware"] == rerun.machine()
  assert about["cpu_id"] == written["cpu_id"]
  assert about["load"]["load_max"] >= 0 and "fresh clone" in about["time"]
  assert re.search(r" of CPU\), peak [\d,]+ MiB, fresh clone", about["time"])


def test_a_rerun_that_writes_a_local_path_is_compared_but_not_kept(
    rerun, tmp_path, capsys):
  runs = tmp_path / "runs"
  _kept_sts_run(runs, 0.5, folder="/home/me/x")
  kept = (runs / "t" / "n.json").read_bytes()
  about = json.loads((runs / "t" / "n.about.json").read_text())
  assert rerun.rerun("runs/t/n.json", about["command"], keep=True,
                     records=tmp_path / "reruns") == 1
  captured = capsys.readouterr()
  assert "folder: kept '(absent)', now '/home/me/x'" in captured.out
  assert "not kept" in captured.err and "names paths of this machine" in (
      captured.err)
  assert (runs / "t" / "n.json").read_bytes() == kept
  record, = (tmp_path / "reruns" / "t").glob("n.*.json")
  assert record.name == rerun.record_name("n", kept=False)
  written = json.loads(record.read_text())
  assert written["command"].endswith("--keep") and not written["kept_now"]


def test_a_rerun_of_an_uncommitted_checkout_is_refused(monkeypatch, capsys):
  rerun = _module(LAB / "tools" / "rerun.py")
  monkeypatch.setattr(rerun.children, "commit", lambda: "c" * 40 + "+changes")
  assert rerun.rerun("runs/pipeline_tiny/tiny.json", "false") == 2
  assert "commit the checkout first" in capsys.readouterr().err


def _run_that_needs_another(rerun, runs: pathlib.Path
                            ) -> tuple[str, list[tuple[str, str]]]:
  """Kept runs t/m and t/n, which copies t/m's output: t/n's command and
  what it needs."""
  _kept_sts_run(runs, 0.5, name="m")
  _kept_sts_run(runs, 0.5, command="mkdir -p runs/n && cp runs/m/sts.json "
                "runs/n/sts.json")
  command = json.loads((runs / "t" / "n.about.json").read_text())["command"]
  return command, rerun.run_needs.chain("t/n", lambda ref: json.loads(
      (runs / f"{ref}.about.json").read_text())["command"], {"t/n": ("t/m",)})


def test_a_rerun_makes_what_the_run_needs_first_and_compares_it_too(
    rerun, tmp_path, capsys):
  command, needs = _run_that_needs_another(rerun, tmp_path / "runs")
  assert [need for need, _ in needs] == ["t/m"]
  assert rerun.rerun("runs/t/n.json", command, records=tmp_path / "r") == 1
  assert "the command failed" in capsys.readouterr().err  # runs/m is absent
  assert rerun.rerun("runs/t/n.json", command, needs,
                     records=tmp_path / "r") == 0
  out = capsys.readouterr().out
  assert "t/m: 4 of 4 kept values equal" in out and (
      "runs/t/n.json: 4 of 4 kept values equal") in out
  record, = (tmp_path / "r" / "t").glob("n.*.json")
  need, = json.loads(record.read_text())["needs"]
  assert (need["need"], need["equal"], need["values"]) == ("t/m", 4, 4)
  assert need["span"]["exit"] == 0


def test_each_command_of_a_rerun_starts_once_the_load_before_it_settles(
    rerun, tmp_path, monkeypatch):
  """A need's command and the run's own each start on settled cores, not
  under the load the one before left."""
  command, needs = _run_that_needs_another(rerun, tmp_path / "runs")
  steps, timed = [], rerun.newcomer.timed
  monkeypatch.setattr(rerun, "settle", lambda: steps.append("settle"))
  monkeypatch.setattr(rerun.newcomer, "timed", lambda line, *a: (
      steps.append(line.split(" && ")[-1].split()[0]), timed(line, *a))[1])
  assert rerun.rerun("runs/t/n.json", command, needs,
                     records=tmp_path / "r") == 0
  assert steps == ["settle", "echo", "settle", "cp"]


def test_a_family_reruns_in_one_clone_each_run_once(rerun, tmp_path,
                                                     capsys):
  """t/n needs t/m: rerun together, t/m runs once, as a run (recorded)
  and as t/n's need."""
  runs = tmp_path / "runs"
  _kept_sts_run(runs, 0.5, name="m")
  about = json.loads((runs / "t" / "m.about.json").read_text())
  about["command"] = "echo x >> ran.txt && " + about["command"]
  (runs / "t" / "m.about.json").write_text(json.dumps(about))
  _kept_sts_run(runs, 0.4, command="test $(wc -l < ran.txt) = 1 && mkdir -p "
                "runs/n && cp runs/m/sts.json runs/n/sts.json")
  command = lambda ref: json.loads(  # noqa: E731
      (runs / f"{ref}.about.json").read_text())["command"]
  needs = {"t/n": ("t/m",)}
  family = [(f"runs/{ref}.json", command(ref),
             rerun.run_needs.chain(ref, command, needs))
            for ref in ("t/n", "t/m")]
  assert rerun.rerun_all(family, records=tmp_path / "r") == 1  # n: 0.4
  out = capsys.readouterr().out
  assert "runs/t/m.json: 4 of 4" in out and "runs/t/n.json: 3 of 4" in out
  record = json.loads(next((tmp_path / "r" / "t").glob("n.*.json"))
                      .read_text())
  assert [(n["need"], n["equal"]) for n in record["needs"]] == [("t/m", 4)]
  assert list((tmp_path / "r" / "t").glob("m.*.json"))


def test_a_family_whose_runs_make_the_same_folder_is_refused(rerun, capsys):
  """In one clone the second would resume or refuse the first's output."""
  same = [("runs/t/a.json", "paraflax domain-data --output runs/d && "
           "paraflax select-domain --output runs/d/s", []),
          ("runs/t/b.json", "mkdir -p runs/d/s", [])]
  assert rerun.rerun_all(same) == 2
  assert ("runs/t/a.json and runs/t/b.json both make runs/d/s; rerun them "
          "apart") in capsys.readouterr().err
  assert rerun._clash([  # pylint: disable=protected-access
      ("runs/t/a.json", "python x.py runs/cut a", []),
      ("runs/t/b.json", "python x.py runs/cut b && paraflax eval "
       "--workdir runs/cut/b", [])], {}) == ""


def test_a_family_may_repeat_the_paraflax_steps_a_run_before_it_took(
    rerun):
  """A filter table trains again the NMT config_runs/nmt-fr trained: a
  finished paraflax step changes nothing, so each run finds its folders as
  a clone of its own would leave them, or the family is refused."""
  clash = rerun._clash  # pylint: disable=protected-access
  train = "paraflax train --config configs/nmt.py:fr --workdir runs/nmt_fr"
  table = ("runs/t/table.json",
           f"{train} && lab/experiments/x.sh fr runs/nmt_fr", [])
  nmt = ("runs/t/nmt.json", f"{train} && paraflax eval --workdir runs/nmt_fr",
         [])
  nolimit = ("runs/t/nolimit.json", "paraflax eval --workdir runs/nmt_fr "
             "--output runs/nmt_fr/evals.nolimit.json",
             [("t/nmt", nmt[1])])
  embed = ("runs/t/embed.json", f"{train} && paraflax embed --workdir "
           "runs/nmt_fr --input a.txt --output runs/emb", [])
  assert clash([table, embed, nmt, nolimit], {}) == ""
  assert clash([nmt, embed], {}) == (
      "runs/t/nmt.json and runs/t/embed.json both make runs/nmt_fr")
  assert clash([nmt, table], {}) == (
      "runs/t/nmt.json and runs/t/table.json both make runs/nmt_fr")
  assert clash([nolimit, table], {}) == (  # nolimit's need trained it
      "runs/t/nmt.json and runs/t/table.json both make runs/nmt_fr")
  bt = "paraflax backtranslate --workdir runs/nmt_fr --output bt.jsonl"
  classifiers = [(f"runs/t/c{i}.json", f"{bt} && paraflax train --config "
                  f"c.py --workdir clf{i}", []) for i in range(3)]
  assert clash(classifiers, {}) == ""  # each resumes the finished bt.jsonl
  after = rerun._after(classifiers)  # pylint: disable=protected-access
  assert [after[c] for _, c, _ in classifiers] == [
      [], ["runs/t/c0.json"], ["runs/t/c0.json"]]
  copy = f"{train} && cp -r runs/nmt_fr runs/copy"
  assert clash([("runs/t/a.json", copy, []),
                ("runs/t/b.json", f"{copy} && paraflax eval --workdir "
                 "runs/copy", [])], {}) == (
                     "runs/t/a.json and runs/t/b.json both make runs/copy")


def test_a_run_that_finds_an_earlier_runs_steps_done_says_so(
    rerun, tmp_path, monkeypatch):
  """b repeats the step a took in runs/a: its time is what was left, its
  sidecar and record name a, and its record's command reruns both."""
  runs = tmp_path / "runs"
  _kept_sts_run(runs, 0.5, name="a")
  _kept_sts_run(runs, 0.5, name="b", command=(
      "mkdir -p runs/a && mkdir -p runs/b && echo '{}' > "
      "runs/b/sts.json").format(json.dumps({
          "datasets": {}, "groups": {}, "checkpoint_step": 2,
          "semeval_2012_2015": {"mean_pearson": 0.5}})))
  command = lambda name: json.loads(  # noqa: E731
      (runs / "t" / f"{name}.about.json").read_text())["command"]
  family = [(f"runs/t/{n}.json", command(n), []) for n in "ab"]
  assert rerun.rerun_all(family, keep=True, records=tmp_path / "r") == 0
  about = json.loads((runs / "t" / "b.about.json").read_text())
  assert about["time"].endswith(
      "in one clone after runs/t/a.json, whose steps it found done")
  record = json.loads((tmp_path / "r" / "t" / rerun.record_name(
      "b", kept=True)).read_text())
  assert record["after"] == ["runs/t/a.json"] and record["command"] == (
      "lab/run.py runs/t/a.json runs/t/b.json --keep")
  first = json.loads((tmp_path / "r" / "t" / rerun.record_name(
      "a", kept=True)).read_text())
  assert (first["earlier_s"], record["earlier_s"]) == (
      0.0, first["span"]["wall_s"])
  tables = _module(LAB / "tools" / "rerun_tables.py")
  monkeypatch.setattr(tables.run_results, "RERUNS", str(tmp_path / "r"))
  row = next(r for r in tables.reruns() if "`runs/t/b.json`" in r)
  assert ", in one clone after runs/t/a.json, whose steps it found done |" \
      in row
  assert ", one command that wrote" not in row


def test_a_rerun_s_time_says_what_ran_in_its_clone_before_it():
  """Cold caches for the first run of a clone (a few seconds of `mkdir`
  do not count); else the steps before it: the runs it found done, other
  runs' (from the whole run's seconds in a record without `earlier_s`),
  its needs."""
  tables = _module(LAB / "tools" / "rerun_tables.py")
  span = {"wall_s": 65.0, "cpu_s": 90.0, "peak_rss_mib": 1200}
  first = {"span": span, "command": "lab/run.py runs/t/a.json --keep",
           "earlier_s": 0.0,
           "needs": [{"need": "mkdir -p runs/x", "span": {"wall_s": 0.0}}]}
  assert tables.time_text(first) == (
      "1 min 5 s (1 min 30 s of CPU), peak 1,200 MiB, fresh clone, cold "
      "caches, after its needs (mkdir -p runs/x: 0.0 s)")
  later = {**first, "needs": [], "earlier_s": 120.0}
  assert tables.time_text(later).endswith(
      ", fresh clone, caches warm from the steps before it, in one clone "
      "after 2 min 0 s of other runs' steps")
  found = {**later, "after": ["runs/t/z.json"],
           "command": "lab/run.py runs/t/z.json runs/t/a.json runs/t/b.json"}
  assert tables.time_text(found).endswith(
      "caches warm from the steps before it, one command that wrote 2 kept "
      "files, in one clone after runs/t/z.json, whose steps it found done")
  unrecorded = {k: v for k, v in first.items() if k != "earlier_s"}
  assert tables.earlier_s({**unrecorded, "run": {"wall_s": 66.0}}) == 1.0
  assert "in one clone after 10 min 0 s of other runs' steps" in (
      tables.time_text({**unrecorded, "run": {"wall_s": 665.0}}))
  needed = {**first, "needs": [{"need": "t/nmt", "span": {"wall_s": 600}}]}
  assert tables.time_text(needed).endswith(
      "caches warm from the steps before it, after its needs (t/nmt: "
      "10 min 0 s)")


def test_a_kept_rerun_s_time_is_written_from_its_record(
    tmp_path, monkeypatch, capsys):
  """rerun_times.py writes the sidecar time its kept record states; --check
  fails until then; a run kept since on another machine keeps its own."""
  times = _module(LAB / "tools" / "rerun_times.py")
  runs, records = tmp_path / "runs", tmp_path / "reruns"
  monkeypatch.setattr(times.run_results, "RUNS", str(runs))
  monkeypatch.setattr(times.run_results, "RERUNS", str(records))
  for name in "ab":
    _kept_sts_run(runs, 0.5, name=name)
  (records / "t").mkdir(parents=True)
  for name, machine in (("a", "h"), ("b", "another machine")):
    (records / "t" / f"{name}.x.json").write_text(json.dumps({
        "rerun_of": f"runs/t/{name}.json", "kept_now": True, "commit": None,
        "machine": machine, "command": f"lab/run.py runs/t/{name}.json",
        "span": {"wall_s": 5.0, "cpu_s": 6.0}, "needs": [],
        "earlier_s": 30.0}))
  assert times.main(["--check"]) == 1
  assert "t/a: 't'\n  -> " in capsys.readouterr().out
  assert times.main([]) == 0 and times.main(["--check"]) == 0
  about = {n: json.loads((runs / "t" / f"{n}.about.json").read_text())
           for n in "ab"}
  assert about["a"]["time"] == (
      "5.0 s (6.0 s of CPU), fresh clone, caches warm from the steps before "
      "it, in one clone after 30 s of other runs' steps")
  assert about["b"]["time"] == "t"


def test_every_kept_rerun_s_time_is_its_record_s():
  times = _module(LAB / "tools" / "rerun_times.py")
  assert times.main(["--check"]) == 0, "python lab/tools/rerun_times.py"


def test_a_rerun_s_pearson_gap_is_its_largest_pearson_difference(
    tmp_path, monkeypatch):
  """docs quote how far a rerun on another CPU moved the STS figures: the
  largest Pearson difference of its record (or of a family's records),
  Spearman ones aside."""
  tables = _module(LAB / "tools" / "rerun_tables.py")
  monkeypatch.setattr(tables.run_results, "RERUNS", str(tmp_path))
  (tmp_path / "t").mkdir()
  differences = [
      {"path": "datasets/a/pearson", "kept": 0.5, "now": 0.5 + 2e-8},
      {"path": "groups/b/mean_pearson", "kept": 0.25, "now": 0.25 - 3e-6},
      {"path": "datasets/a/spearman", "kept": 0.5, "now": 0.6},
      {"path": "datasets/c/pearson", "kept": 0.5, "now": None}]
  (tmp_path / "t" / "r.h.compared.json").write_text(
      json.dumps({"differences": differences}))
  assert tables.pearson_gap("t/r.h.compared") == "3e-06"
  (tmp_path / "t" / "r.h.compared.json").write_text(
      json.dumps({"differences": differences[2:]}))
  assert tables.pearson_gap("t/r.h.compared") == "0"
  (tmp_path / "t" / "s.h.json").write_text(
      json.dumps({"differences": differences[:1]}))
  assert tables.pearson_gap("t/*.h*") == "2e-08"  # a family: the largest
  assert tables.VALUES[
      "rerun.sts_encoders/avg.intel-xeon-2core.compared.pearson_gap"]
  assert all(f"rerun.{family}.pearson_gap" in tables.VALUES
             for family in tables.FAMILIES)


def test_a_family_one_command_writes_reruns_it_once_and_keeps_each(
    rerun, tmp_path, monkeypatch, capsys):
  """Runs whose recorded command is the same (a filter table's sweeps)
  run it once; each is compared and kept from its own output, its time
  the one command's; two that would read one output are refused."""
  runs = tmp_path / "runs"
  data = {"datasets": {}, "groups": {}, "checkpoint_step": 2,
          "semeval_2012_2015": {"mean_pearson": 0.5}}
  command = ("echo x >> ran.txt && mkdir -p runs/a runs/b && echo '{0}' > "
             "runs/a/sts.json && echo '{0}' > runs/b/sts.json").format(
                 json.dumps(data))
  for name, pearson in (("a", 0.5), ("b", 0.4)):
    _kept_sts_run(runs, pearson, name=name, command=command)
  family = [(f"runs/t/{name}.json", command, []) for name in "ab"]
  assert rerun.rerun_all(family, keep=True, keep_scratch=True,
                         records=tmp_path / "r") == 1  # b: 0.4
  captured = capsys.readouterr()
  assert "runs/t/a.json: 4 of 4" in captured.out and (
      "runs/t/b.json: 3 of 4") in captured.out
  scratch = captured.err.split("the clone stays in ")[1].strip()
  assert (pathlib.Path(scratch) / "paraflax" / "ran.txt").read_text() == (
      "x\n")
  for name in "ab":
    record = json.loads((tmp_path / "r" / "t" / rerun.record_name(
        name, kept=True)).read_text())
    assert record["command"] == (
        "lab/run.py runs/t/a.json runs/t/b.json --keep")
    about = json.loads((runs / "t" / f"{name}.about.json").read_text())
    assert about["time"].endswith("one command that wrote 2 kept files")
  assert json.loads((runs / "t" / "b.json").read_text())[
      "semeval_2012_2015"]["mean_pearson"] == 0.5
  shutil.rmtree(scratch)
  tables = _module(LAB / "tools" / "rerun_tables.py")
  monkeypatch.setattr(tables.run_results, "RERUNS", str(tmp_path / "r"))
  assert all(", one command that wrote 2 kept files |" in row
             for row in tables.reruns()[2:])
  about = json.loads((runs / "t" / "b.about.json").read_text())
  about["output"] = "runs/a/sts.json"
  (runs / "t" / "b.about.json").write_text(json.dumps(about))
  assert rerun.rerun_all(family) == 2
  assert ("runs/t/a.json and runs/t/b.json both read runs/a/sts.json"
          ) in capsys.readouterr().err


def test_a_command_that_no_longer_runs_is_replaced_and_kept(rerun, tmp_path):
  """A run whose recorded command fails reruns with the command given in
  its place; --keep records that command and config, the record names
  the replacement."""
  runs = tmp_path / "runs"
  _kept_sts_run(runs, 0.5, command="false")
  assert rerun.rerun_all([("runs/t/n.json", "false", [])],
                         records=tmp_path / "r") == 1
  now = "mkdir -p runs/n && echo '{}' > runs/n/sts.json".format(json.dumps(
      {"datasets": {}, "groups": {}, "checkpoint_step": 2,
       "semeval_2012_2015": {"mean_pearson": 0.5}}))
  replacement = {"command": now, "config": "c, made anew"}
  assert rerun.rerun_all([("runs/t/n.json", now, [])], keep=True,
                         records=tmp_path / "r",
                         replaced={"t/n": replacement}) == 0
  about = json.loads((runs / "t" / "n.about.json").read_text())
  assert (about["command"], about["config"]) == (now, "c, made anew")
  record, = (tmp_path / "r" / "t").glob("n.*.json")
  assert json.loads(record.read_text())["replaced"] == replacement


def test_a_replacement_command_file_names_collected_runs(tmp_path):
  run = _module(LAB / "run.py")
  entries = {"runs/t/n.json": {}, "speed.json": {}}
  path = tmp_path / "c.json"
  for given, error in (({"speed.json": {"command": "x", "config": "y"}},
                        "speed.json is not a collected run"),
                       ({"runs/t/n.json": {"command": "x"}},
                        "runs/t/n.json gives ['command'], not")):
    path.write_text(json.dumps(given))
    with pytest.raises(ValueError, match=re.escape(error)):
      run._replaced(str(path), entries)  # pylint: disable=protected-access
  ok = {"runs/t/n.json": {"command": "x", "config": "y"}}
  path.write_text(json.dumps(ok))
  assert run._replaced(str(path), entries) == ok  # pylint: disable=protected-access


def test_needs_run_before_what_needs_them_each_once():
  run_needs = _module(LAB / "tools" / "run_needs.py")
  needs = {"t/c": ("t/b", "mkdir -p runs/z", "t/a"), "t/b": ("t/a",)}
  chain = run_needs.chain("t/c", lambda ref: f"make {ref}", needs)
  assert chain == [("t/a", "make t/a"), ("t/b", "make t/b"),
                   ("mkdir -p runs/z", "mkdir -p runs/z")]
  with pytest.raises(ValueError, match="t/a -> t/b -> t/a: a cycle"):
    run_needs.chain("t/a", str, {"t/a": ("t/b",), "t/b": ("t/a",)})


def test_the_runs_folders_a_command_reads_before_it_makes_them():
  unmade = _module(LAB / "tools" / "run_needs.py").unmade_reads
  assert unmade("paraflax eval-sts --workdir runs/gran") == ["runs/gran"]
  assert unmade("paraflax train --config c --workdir runs/a && paraflax "
                "eval --workdir runs/a --output runs/a/e.json") == []
  assert unmade("mkdir -p runs/c && cp runs/d/x.json runs/c/ && paraflax "
                "sweep --workdir runs/e --config.scored=runs/f/s.jsonl") == [
                    "runs/d", "runs/f"]
  assert unmade("cd runs/b && python ../../x.py runs/q && cd ../.. && "
                "paraflax eval --workdir runs/b") == ["runs/b"]
  assert unmade("python lab/experiments/x.py runs/cut && paraflax eval "
                "--workdir runs/cut/bi") == []


def test_every_collected_run_s_reads_are_made_by_it_or_its_needs(manifest):
  """What a kept run's commands read (runs/bi_captions, a trained NMT)
  its own steps or the commands of tools/run_needs.py make first, so
  that it reruns in a fresh clone; every run named there is kept."""
  run = _module(LAB / "run.py")
  entries = manifest.load()
  for about in sorted((LAB / "results" / "runs").glob("*/*.about.json")):
    name = f"runs/{about.parent.name}/" + about.name.replace(
        ".about.json", ".json")
    command = run.shell_line(run.command_of(name, entries))
    assert run.run_needs.uncovered(
        run.run_needs.ref(name), command, lambda ref: run.shell_line(
            run.command_of(f"runs/{ref}.json", entries))) == [], name
  for name, needs in run.run_needs.NEEDS.items():
    for need in (name, *filter(run.run_needs.is_run, needs)):
      assert f"runs/{need}.json" in entries, need


def test_every_benchmark_s_runs_reads_are_made_by_its_needs(manifest):
  """A benchmark that reads a trained workdir or a table from runs/ names
  the kept runs or commands that make it (tools/run_needs.py), so that
  `lab/run.py NAME` reruns it in a fresh clone; the lists name only files
  of the record."""
  run = _module(LAB / "run.py")
  needs = run.run_needs
  entries = manifest.load()

  def kept_command(ref: str) -> str:
    return run.shell_line(run.command_of(f"runs/{ref}.json", entries))

  unmade = {}
  for name, entry in entries.items():
    if entry["command"] and not name.startswith(("runs/", "reruns/")):
      if reads := needs.benchmark_uncovered(
          name, run.note_of(entry["command"])[0], kept_command):
        unmade[name] = reads
  assert unmade == {}, unmade
  for name, named in needs.BENCHMARK_NEEDS.items():
    assert name in entries, name
    for need in filter(needs.is_run, named):
      assert f"runs/{need}.json" in entries, need
  assert needs.benchmark_uncovered(
      "b.json", "lab/x.py --workdir runs/nmt_de --table runs/pivot/t.txt",
      kept_command, {"b.json": ("headline/nmt-de",)}) == ["runs/pivot"]


def test_the_nmt_variants_commands_train_the_models_their_file_records():
  """nmt_learning_vs_opennmt's workdirs are made by run_needs' commands:
  each command's config holds the model and loss each result file records
  for its workdir, and trains as long as the file's dev curve runs."""
  from paraflax import config as config_lib  # pylint: disable=g-import-not-at-top
  needs = _module(LAB / "tools" / "run_needs.py")
  reports = [json.loads(path.read_text(encoding="utf-8")) for path in
             sorted((LAB / "results").glob("nmt_learning_vs_opennmt.*.json"))]
  assert len(reports) >= 2
  for ours in (o for report in reports for o in report["ours"]):
    argv = needs.shlex.split(needs._nmt_variant(ours["workdir"][5:]))
    config = config_lib.load("configs/nmt.py:de", [
        a for a in argv if a.startswith("--config.")])
    for part in ("model", "loss"):
      assert {k: config[part][k] for k in ours[part]} == ours[part], (
          ours["workdir"], part)
    assert config.train_steps == max(map(int, ours["dev"]))
    assert sorted(map(int, ours["dev"])) == list(range(
        config.eval_every, config.train_steps + 1, config.eval_every))
    assert ("--only dev_all" in needs._nmt_variant(ours["workdir"][5:])
            ) == (ours["dev_all"] is not None), ours["workdir"]
  for report in reports:
    assert [o["workdir"] for o in report["ours"]] == [
        f"runs/{w}" for w in needs.NMT_VARIANTS]


def test_a_benchmark_runs_what_it_needs_first_from_the_repository_root(
    tmp_path, monkeypatch, capsys):
  """`lab/run.py NAME` makes what benchmark NAME reads before running it
  on the checkout's code, hands it the need's record (its output compared
  with the kept run's file), and does not run it when a need fails;
  --print shows the order."""
  run = _module(LAB / "run.py")
  (tmp_path / "lab").mkdir()
  (tmp_path / "lab" / "x.py").write_text(
      "import os, pathlib, sys\n"
      "made = pathlib.Path('runs/a/made').is_dir()\n"
      "code = os.environ['PYTHONPATH'].split(os.pathsep)[0] == os.getcwd()\n"
      "needs = os.environ['PARAFLAX_LAB_NEEDS']\n"
      "pathlib.Path(sys.argv[2]).write_text(f'{made} {code} {needs}')\n")
  kept = tmp_path / "lab" / "results" / "runs" / "t"
  kept.mkdir(parents=True)
  (kept / "a.json").write_text('{"checkpoint_step": 3, "bleu": 1.5}')
  (kept / "a.about.json").write_text(json.dumps({
      "kind": "eval", "output": "runs/a/made/evals.json",
      "sha256": hashlib.sha256((kept / "a.json").read_bytes()).hexdigest()}))
  (tmp_path / "made.json").write_text('{"checkpoint_step": 3, "bleu": 1.25}')
  make = "mkdir -p runs/a/made && cp made.json runs/a/made/evals.json"
  entries = {"b.json": {"command": "lab/x.py --output b.json",
                        "written_by": "lab/x.py"},
             "runs/t/a.json": {"command": make}}
  monkeypatch.setattr(run, "ROOT", str(tmp_path))
  monkeypatch.setattr(run.run_results, "RUNS", str(tmp_path / "lab" /
                                                    "results" / "runs"))
  monkeypatch.setattr(run.manifest, "load", lambda: entries)
  monkeypatch.setattr(run, "settle", lambda: 0.0)  # the suite's own load
  monkeypatch.setitem(run.run_needs.BENCHMARK_NEEDS, "b.json", ("t/a",))
  assert run.main(["b.json", "--print"]) == 0
  assert capsys.readouterr().out.splitlines() == [
      f"first (t/a): {make}",
      "lab/x.py --output lab/results/b.json"]
  assert run.main(["b.json"]) == 0
  made, code, needs = (tmp_path / "lab" / "results" / "b.json").read_text(
      ).split(" ", 2)
  assert (made, code) == ("True", "True")
  record, = json.loads(needs)
  assert record.pop("wall_s") >= 0
  assert record == {"need": "t/a", "command": make,
                    "output": "runs/a/made/evals.json", "values": 2,
                    "equal": 1}  # the BLEU differs from the kept one
  assert "t/a: 1 of 2 kept values equal" in capsys.readouterr().err
  (tmp_path / "lab" / "results" / "b.json").unlink()
  entries["runs/t/a.json"]["command"] = "false"
  assert run.main(["b.json"]) == 1
  assert "run: t/a failed, so b.json did not run" in capsys.readouterr().err
  assert not (tmp_path / "lab" / "results" / "b.json").exists()


def test_a_repeat_writes_a_new_file_beside_the_kept_one(capsys):
  """`lab/run.py NAME --as NEW` runs NAME's command and what it needs,
  writing NEW: never a file the manifest lists, never a collected run."""
  run = _module(LAB / "run.py")
  name = "nmt_vs_opennmt.encoder-128-2core.intel-xeon-2core.json"
  new = "nmt_vs_opennmt.encoder-128-2core-repeat2.intel-xeon-2core.json"
  assert run.main([name, "--as", new, "--print"]) == 0
  lines = capsys.readouterr().out.splitlines()
  assert lines[0].startswith("first (headline/nmt-de): paraflax train")
  assert lines[-1].endswith(f"--output lab/results/{new}")
  for wrong in (["--as", name], ["--as", "sub/x.json"], ["--as", "x.txt"]):
    assert run.main([name, *wrong]) == 2
    assert "give a new .json name" in capsys.readouterr().err
  assert run.main(["runs/sts_encoders/avg.json", "--as", "x.json"]) == 2
  assert "a collected run reruns in place" in capsys.readouterr().err
  assert run.main([name, name, "--as", new]) == 2


def test_a_repeat_names_the_output_a_recorded_command_left_to_its_default(
    capsys):
  """A command recorded without --output (newcomer.py wrote its default
  name) repeats with one when its script's --help offers it, so the
  repeat never writes over the kept file."""
  run = _module(LAB / "run.py")
  new = "newcomer.main-repeat.intel-xeon-2core.json"
  assert run.main(["newcomer.main.intel-xeon-2core.json", "--as", new,
                   "--print"]) == 0
  assert capsys.readouterr().out.strip() == (
      f"lab/benchmarks/newcomer.py main --output lab/results/{new}")
  assert not run.takes_output(["lab/tools/collect_result.py", "OUTPUT"])


def test_a_collected_run_prints_the_line_that_keeps_it_again():
  run = _module(LAB / "run.py")
  line = run.collect_line("runs/filter_tables/cs-news-gran-length.json")
  assert line.startswith("python lab/tools/collect_result.py runs/filter_"
                         "tables/sweeps/newstest_pool_cs_en/length_gran/"
                         "results.json --table filter_tables --name "
                         "cs-news-gran-length --command 'paraflax train ")
  assert line.endswith("--hardware HARDWARE --time TIME --overwrite")


def test_run_lists_every_file_of_the_manifest(manifest, capsys):
  run = _module(LAB / "run.py")
  assert run.main(["--list"]) == 0
  listed = [l.split("\t")[0] for l in capsys.readouterr().out.splitlines()]
  assert listed == sorted(manifest.load())


def test_every_table_names_its_result_files_in_lab_figures_md(manifest):
  """lab/figures.md lists each table's files with the command that
  reruns each, and what that command needs made first."""
  figures = _module(LAB / "tools" / "figures.py")
  assert figures.unsourced() == []
  assert figures.main(["--check"]) == 0, "python lab/tools/figures.py"
  entries = manifest.load()
  assert figures._command(  # pylint: disable=protected-access
      "monods_weights.general-256.intel-xeon-2core.json", entries).endswith(
          "`, after `domain/monods-general`")
  assert ", after" not in figures._command(  # pylint: disable=protected-access
      "runs/sts_encoders/avg.json", entries)


def test_the_encoders_and_wieting_s_code_take_turns():
  """encoders_vs_wieting: the sides alternate, each round's first side
  swapped, so load that comes and goes falls on both; a side's rate is the
  median of its rounds."""
  bench = _module(LAB / "benchmarks" / "encoders_vs_wieting.py")
  calls, rates = [], {"ours": iter([30.0, 10.0, 20.0]),
                      "wieting": iter([5.0, 1.0, 3.0])}

  def side(name):
    def run():
      calls.append(name)
      return {"pairs_per_s": next(rates[name])}
    return run
  row = bench._interleaved("avg", side("wieting"), side("ours"), 3)  # pylint: disable=protected-access
  assert calls == ["wieting", "ours", "ours", "wieting", "wieting", "ours"]
  assert row["ours"]["pairs_per_s"] == 20.0
  assert row["wieting"]["pairs_per_s"] == 3.0
  assert row["ours"]["pairs_per_s_by_round"] == [30.0, 10.0, 20.0]
  assert row["ours_over_wieting"] == pytest.approx(20.0 / 3.0)


def test_a_benchmark_keeps_jax_off_libtpu_on_a_cpu_only_host():
  """Benchmarks import jax themselves: children.py quiets it as the CLI
  does, so a CPU host with libtpu installed gets the CPU backend; the
  user's own environment, which newcomer.py hands its steps, stays as it
  was."""
  from paraflax import quiet  # pylint: disable=import-outside-toplevel
  env = {k: v for k, v in os.environ.items() if k != "JAX_PLATFORMS"}
  out = subprocess.run(
      [sys.executable, "-c", "import os, sys; sys.path.insert(0, sys.argv[1]);"
       " import children; print(os.environ.get('JAX_PLATFORMS'),"
       " children.USER_ENV.get('JAX_PLATFORMS'))",
       str(LAB / "benchmarks")], env=env, capture_output=True, text=True,
      check=True).stdout.split()[-2:]
  assert out == ["cpu" if quiet.cpu_only_host_with_libtpu() else "None",
                 "None"]


_JAX_FAMILY = {"jax", "jaxlib", "flax", "optax", "orbax"}


def test_every_lab_script_imports_children_before_jax():
  """jax reads its platform when it is imported, so children.py's choice
  (the CPU backend on a CPU host with libtpu) only holds if no import
  before `import children` loads jax; else libtpu prints its init errors
  and holds its lock through the measurement. Each benchmark's and
  experiment's imports up to `import children` run here, in turn in one
  interpreter, and none may load jax; a script without children imports
  nothing of jax's family, and none of paraflax's modules that load it."""
  prefixes = {}
  scripts = [*(LAB / "benchmarks").glob("*.py"),
             *(LAB / "experiments").glob("*/*.py")]
  for script in sorted(scripts):
    imports = [n for n in ast.parse(script.read_text()).body
               if isinstance(n, (ast.Import, ast.ImportFrom))
               and getattr(n, "module", "") != "__future__"]
    names = [[a.name for a in n.names] if isinstance(n, ast.Import)
             else [n.module or ""] for n in imports]
    first = next((i for i, n in enumerate(names)
                  if any(m.split(".")[-1] == "children" for m in n)
                  or "benchmarks" in n), None)
    if first is None:
      assert not any(m.split(".")[0] in _JAX_FAMILY for n in names for m in n
                     ), f"{script.name} imports jax without children.py"
      imports = [n for n, m in zip(imports, names)
                 if m[0].split(".")[0] == "paraflax"]
      first = len(imports)
    prefixes[script.name] = "\n".join(ast.unparse(n) for n in imports[:first])
  assert len(prefixes) > 30 and "clf_accuracy.py" in prefixes
  check = ("import json, sys\nsys.path[:0] = json.loads(sys.argv[1])\n"
           "prefixes = json.loads(sys.argv[2])\nfor name, code in "
           "prefixes.items():\n  exec(code, {})\n  if 'jax' in sys.modules:\n"
           "    print(name)\n    break\n")
  env = {k: v for k, v in os.environ.items() if k != "JAX_PLATFORMS"}
  paths = [str(LAB), str(LAB / "benchmarks")]
  out = subprocess.run([sys.executable, "-c", check, json.dumps(paths),
                        json.dumps(prefixes)], env=env, capture_output=True,
                       text=True, check=True, cwd=ROOT).stdout.strip()
  assert not out, f"{out} loads jax before it imports children.py"


def test_batch_padding_counts_an_epoch_as_training_pads_it():
  """Two batches of two pairs, one long source and one long target: sorted
  by the target side, each batch holds one of them and is padded to 16;
  sorted by the longer side, the two long pairs share one batch."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  from paraflax.data import bitext  # pylint: disable=g-import-not-at-top
  padding = _module(LAB / "benchmarks" / "batch_padding.py")
  src, tgt = ([np.ones(n, np.int32) for n in side]
              for side in ((16, 2, 2, 2), (2, 3, 2, 16)))
  data = bitext.EncodedBitext(src, tgt)
  counts = {key: padding.epoch_counts(bitext.BucketStream(
      data, 2, sort_by=key, width_multiple=8), 8) for key in ("target",
                                                              "longer")}
  subwords = 16 + 2 + 2 + 2 + 2 + 3 + 2 + 16
  for key, widths in (("target", (16, 16)), ("longer", (8, 16))):
    assert counts[key] == {
        "batches": 2, "width_units": sum(widths) // 8,
        "slots": sum(2 * 2 * w for w in widths), "subwords": subwords,
        "padded_slots": sum(2 * 2 * w for w in widths) - subwords}


def test_script_pieces_counts_what_train_requires_of_the_vocabulary(
    tmp_path):
  """Four distinct characters and the whitespace piece, with the 3 special
  pieces: 8 at full coverage, more than a vocab.size of 7 holds, which
  paraflax train refuses too; a missing test set stops before any work."""
  from paraflax import errors  # pylint: disable=g-import-not-at-top
  from paraflax.data import sentencepiece_vocab  # pylint: disable=g-import-not-at-top
  pieces = _module(LAB / "benchmarks" / "script_pieces.py")
  path = pathlib.Path(pieces.source_path(str(tmp_path), "zh-en"))
  path.parent.mkdir(parents=True)
  path.write_text("我们 我们\n试试看\n", encoding="utf-8")
  row = pieces.count(str(path), 7)
  assert (row["sentences"], row["distinct_characters"]) == (2, 5)
  assert row["pieces_required"]["1.0"] == 8 and not row["fits"]["1.0"]
  with pytest.raises(errors.ConfigError, match="needs 5 of them"):
    sentencepiece_vocab.check_size(["我们 我们", "试试看"], 7)
  with pytest.raises(SystemExit):
    pieces.main(["--wmt22", str(tmp_path), "--pairs", "ja-en", "--output",
                 str(tmp_path / "out.json")])
  assert not (tmp_path / "out.json").exists()


def test_a_newcomer_s_steps_are_timed_until_one_fails(tmp_path):
  """newcomer.py times each ` && ` step with its load as reruns do, and a
  failed step ends the command, as it would a newcomer's paste."""
  newcomer = _module(LAB / "benchmarks" / "newcomer.py")
  steps = newcomer.run_steps("true && exit 3 && touch never", str(tmp_path),
                             dict(os.environ))
  assert [(s["step"], s["exit"]) for s in steps] == [("true", 0),
                                                     ("exit 3", 3)]
  assert not (tmp_path / "never").exists()
  for s in steps:
    assert s["wall_s"] >= 0 and s["cpu_s"] >= 0
    assert 0 <= s["load_at_start"] <= s["load_max"] and (
        s["load_mean"] <= s["load_max"])


def test_a_timed_command_s_peak_is_its_largest_process_s_alone(tmp_path):
  """The peak memory a step reports is that of its own largest process,
  a grandchild included, not of a larger command timed before it nor of
  the process that times it."""
  newcomer = _module(LAB / "benchmarks" / "newcomer.py")
  hold = f"{sys.executable} -c 'b = bytearray({{}} * 2**20)'"
  ballast = bytearray(700 * 2**20)  # the timing process, larger than both
  big = newcomer.timed(hold.format(600), str(tmp_path), dict(os.environ))
  small = newcomer.timed("true && " + hold.format(300), str(tmp_path),
                         dict(os.environ))
  assert big["exit"] == small["exit"] == 0
  assert big["peak_rss_mib"] >= 600
  assert 300 <= small["peak_rss_mib"] < 500 < len(ballast) / 2**20


def test_the_monods_weight_sweep_ranks_as_monods_would(tmp_path):
  from paraflax.domain import table
  weights = _module(LAB / "benchmarks" / "monods_weights.py")
  entry = table.Entry("big", "large", 0.0, {"p": 0.5, "monods": 0.001})
  # w = 0: log p; w = 1: log of MonoDS floored at the config's floor.
  assert weights.reweighted(entry, 0.0, 0.01).score == pytest.approx(
      -0.6931, abs=1e-4)
  assert weights.reweighted(entry, 1.0, 0.01).score == pytest.approx(
      -4.6052, abs=1e-4)
  gold = tmp_path / "ppdb.tsv"
  gold.write_text("big\tlarge\n")
  path = tmp_path / "t.txt"
  path.write_text(  # p prefers huge (not PPDB's), MonoDS prefers large
      table.format_line("big", "huge", -1.0, [("p", 0.7), ("monods", 0.1)])
      + table.format_line("big", "large", -2.0, [("p", 0.3), ("monods", 0.9)]))
  from paraflax.evaluation import ppdb
  sweep = weights.sweep(str(path), (0.0, 1.0),
                        gold=ppdb.load_ppdb(str(gold)))
  assert [r["p@1"] for r in sweep["rows"]] == [0.0, 100.0]
  assert sweep["written_score"]["p@1"] == 0.0


def test_scoring_records_cycled_past_their_file_are_new_records(tmp_path):
  from paraflax.data import records
  scoring = _module(LAB / "benchmarks" / "scoring_throughput.py")
  source = tmp_path / "bt.jsonl"
  source.write_text("".join(
      json.dumps({"id": i, "rank": r, "reference": "a b", "translation": "a c",
                  "cost": 1.0}) + "\n" for i in (3, 7) for r in (0, 1)))
  path = tmp_path / "cycled.jsonl"
  assert scoring._cycle(str(source), 10, str(path)) == 2.5
  rows = [json.loads(line) for line in path.read_text().splitlines()]
  assert [(r["id"], r["rank"]) for r in rows] == [
      (3, 0), (3, 1), (7, 0), (7, 1), (11, 0), (11, 1), (15, 0), (15, 1),
      (19, 0), (19, 1)]
  checker = records.UniqueRecords(str(path))
  for number, row in enumerate(rows, start=1):
    checker.check(number, row)  # score-paraphrases' check: no repeat


def test_mining_throughput_compares_ours_with_the_peer_that_ran(tmp_path):
  """On a GPU, where faiss does not run, ours is timed and matched against
  sentence-transformers' rows of the same size; faiss comes first where
  both ran."""
  bench = _module(LAB / "benchmarks" / "mining_throughput.py")
  pairs = {}
  for method, found in (("ours", [[0, 1], [1, 0]]),
                        ("sentence_transformers", [[0, 1], [1, 2]])):
    pairs[(method, 1)] = str(tmp_path / f"{method}-1-3.npy")
    bench.np.save(pairs[(method, 1)], bench.np.array(found))
  rows = [{"method": "ours", "devices": 1, "n": 3, "status": "ok",
           "total_s": 1.0},
          {"method": "sentence_transformers", "devices": 1, "n": 3,
           "status": "ok", "total_s": 4.0}]
  bench._agreement(rows, pairs)  # pylint: disable=protected-access
  bench._ratios(rows)  # pylint: disable=protected-access
  assert rows[0]["same_pairs_peer"] == "sentence_transformers"
  assert rows[0]["same_pairs"] == 1 and rows[0]["same_pairs_fraction"] == 0.5
  assert rows[0]["ours_over_sentence_transformers"] == 0.25
  assert "ours_over_faiss" not in rows[0]
  rows.append({"method": "faiss", "devices": 1, "n": 3, "status": "ok",
               "total_s": 2.0})
  bench._ratios(rows)  # pylint: disable=protected-access
  assert bench._over_peer(rows[0]) == 0.5  # pylint: disable=protected-access


def test_a_filter_table_cell_is_the_point_sts_dev_picks():
  """docs/filtering.md's filter tables: the finished point with the best
  STSb dev gives `[lo, hi]: STSb test / STS12-15 mean`; a grid with
  points neither finished nor failed says how many ran; random is the
  seeds' mean."""
  tables = _module(LAB / "tools" / "run_tables.py")

  def point(lo, hi, dev, test, sts, status="finished"):
    return {"overrides": [f"data.filter={{'score': 'bleu', 'lo': {lo}, "
                          f"'hi': {hi}}}"], "status": status,
            "selected": dev, "columns": {
                "sts_all/STSb.test/pearson": test,
                "sts_all/semeval_2012_2015/mean_pearson": sts}}
  grid = [point(0, 1, 0.40, 0.41, 0.30), point(0.2, 0.6, 0.45, 0.43, 0.31),
          point(0.4, 1, 0.0, 0.0, 0.0, status="failed: kept 10 pairs")]
  assert tables.filter_cell(grid, False) == "[0.2, 0.6]: 43.00 / 31.00"
  grid[2]["status"] = "pending"
  assert tables.filter_cell(grid, False).endswith("(2 of 3 run)")
  assert tables.filter_cell(grid[:2], True) == "42.00 / 30.50"
  assert tables.filter_cell(grid[2:], False) == "none of 1 kept N"


def test_a_filter_row_of_human_pairs_says_why_it_has_no_cost_cell():
  """The wikiauto row has no cost sweep (no NMT made its pairs): its cost
  cell is the row's `absent` text; without it the row needs that sweep."""
  tables = _module(LAB / "tools" / "run_tables.py")
  table = json.loads((LAB / "tables" / "filter_tables.json").read_text())
  spec = next(r for r in table["rows"]
              if r.get("runs") == "filter_tables/wikiauto-avg")
  columns = table["columns"]
  row = tables._filter_row(spec, columns)  # pylint: disable=protected-access
  assert row[columns.index("cost")] == "n/a (no NMT cost)"
  assert all(cell.startswith("[") for cell in row[3:] if "n/a" not in cell)
  with pytest.raises(FileNotFoundError, match="wikiauto-avg-cost"):
    tables._filter_row({**spec, "absent": {}}, columns)  # pylint: disable=protected-access


def test_an_ablation_row_is_a_value_s_two_seeds_and_their_means(
    monkeypatch):
  """docs/paraphrase-embeddings.md's ablation table: one row a value, its
  seeds' best STSb dev and their mean (the best mean bold), the config's
  value marked; a value with a seed unfinished has no means. Prose quotes
  a value's mean by its label."""
  tables = _module(LAB / "tools" / "run_tables.py")

  def point(margin, seed, dev, status="finished"):
    return {"overrides": [f"loss.margin={margin}", f"seed={seed}"],
            "status": status, "selected": dev, "columns": {
                "sts_all/STSb.test/pearson": dev - 0.05,
                "sts_all/semeval_2012_2015/mean_pearson": dev - 0.1}}
  unfinished = {"overrides": ["loss.margin=1.0", "seed=1"],
                "status": "not finished"}
  points = [point(0.4, 0, 0.70), point(0.4, 1, 0.72), point(0.8, 0, 0.73),
            point(0.8, 1, 0.75), point(1.0, 0, 0.9),
            unfinished]
  monkeypatch.setattr(tables.run_results, "load", lambda ref: (
      types.SimpleNamespace(data={"points": points})))
  spec = {"run": "gran_ablations/margin", "setting": "margin",
          "values": ["0.4", "0.8", "1.0"], "chosen": "0.8"}
  rows = tables._ablation_rows(spec)  # pylint: disable=protected-access
  assert rows[0] == ["margin", "0.4", "70.00 / 72.00", "71.00", "66.00",
                     "61.00"]
  assert rows[1][1:4] == ["0.8 (configs/gran.py)", "73.00 / 75.00",
                          "**74.00**"]
  assert rows[2][2:] == ["90.00 / not finished", "", "", ""]
  figures = tables._ablation_figures(spec)  # pylint: disable=protected-access
  assert figures["dev_mean.0.8"]({"points": points}) == "74.00"
  assert figures["test_mean.0.8"]({"points": points}) == "69.00"
  with pytest.raises(ValueError):
    tables._ablation_rows({**spec, "values": ["0.4"]})  # pylint: disable=protected-access


def test_the_ablation_sweeps_are_grouped_by_the_config_runs_scores(
    monkeypatch):
  """docs/paraphrase-embeddings.md: sweeps whose runs of configs/gran.py
  score the same, every metric to the last digit, are named together."""
  tables = _module(LAB / "tools" / "run_tables.py")
  last_digit = {"gran_ablations/b": 1e-12}

  def sweep(ref):
    chosen = [{"overrides": [f"x={v}", f"seed={seed}"],
               "metrics": {"sts/pearson": 0.7 + seed / 100
                           + last_digit.get(ref, 0.0) * (v == 1)}}
              for v in (0, 1) for seed in (0, 1)]
    return types.SimpleNamespace(data={"points": chosen})

  monkeypatch.setattr(tables.run_results, "load", sweep)
  monkeypatch.setattr(tables, "_table", lambda name: {"rows": [
      {"run": f"gran_ablations/{n}", "values": ["0", "1"], "chosen": "1"}
      for n in "abcd"]})
  assert tables._same_config_runs() == "a, c and d; b"  # pylint: disable=protected-access
  last_digit.clear()
  assert tables._same_config_runs() == "a, b, c and d"  # pylint: disable=protected-access


def test_the_de_en_nmt_evaluated_the_same_on_intel_xeon_and_amd_epyc():
  """docs/nmt-backtranslation.md: the kept Intel Xeon evaluation of
  configs/nmt.py:de is, byte for byte, the file an earlier Intel Xeon run
  and an earlier AMD EPYC run wrote (their sha256 in the records of the
  reruns that replaced them)."""
  runs = LAB / "results" / "runs" / "headline"
  about = json.loads((runs / "nmt-de.about.json").read_text())
  assert about["hardware"].startswith("Intel Xeon") and about["cpu_id"]
  kept = hashlib.sha256((runs / "nmt-de.json").read_bytes()).hexdigest()
  assert about["sha256"] == kept
  reruns = LAB / "results" / "reruns" / "headline"
  for record, machine in (("nmt-de.intel-xeon-2core", "Intel Xeon"),
                          ("nmt-de-epyc.amd-epyc-2core", "AMD EPYC")):
    replaced = json.loads((reruns / f"{record}.json").read_text())["kept"]
    assert replaced["hardware"].startswith(machine)
    assert replaced["sha256"] == kept


def test_mining_scale_side_by_side_needs_the_peer_and_two_cores():
  """--side-by-side without --peer stops before any work, saying why."""
  out = subprocess.run(
      [sys.executable, str(LAB / "benchmarks" / "mining_scale.py"),
       "--side-by-side", "--work", "w", "--output", "o.json"],
      capture_output=True, text=True, check=False)
  assert out.returncode == 2
  assert "--side-by-side needs --peer and 2 cores or more" in out.stderr


def test_mining_throughput_runs_sentence_transformers_only_where_it_imports(
    capsys):
  """By default the peer is left out, with a note, where --peer-python
  cannot import it (each of its rows would fail); asked for by --methods,
  its absence stops the run before any work."""
  throughput = _module(LAB / "benchmarks" / "mining_throughput.py")
  parser = argparse.ArgumentParser()
  assert "sentence_transformers" in throughput._methods(  # pylint: disable=protected-access
      parser, None, "/bin/true")
  assert throughput._methods(  # pylint: disable=protected-access
      parser, None, "/bin/false") == [
          m for m in throughput.METHODS if m != "sentence_transformers"]
  assert "sentence_transformers left out" in capsys.readouterr().err
  assert throughput._methods(  # pylint: disable=protected-access
      parser, ["ours", "faiss"], "/bin/false") == ["ours", "faiss"]
  with pytest.raises(SystemExit) as stop:
    throughput._methods(  # pylint: disable=protected-access
        parser, ["sentence_transformers"], "/bin/false")
  assert stop.value.code == 2
  assert "give --peer-python a python with torch" in capsys.readouterr().err


def test_a_failed_side_by_side_child_stops_the_other_side_at_once():
  """When one side's child fails, the other side's running child is
  stopped and no further child starts, so the run ends with the failure,
  not an hour later."""
  scale = _module(LAB / "benchmarks" / "mining_scale.py")
  sleep = [sys.executable, "-c", "import time; time.sleep(60)"]
  with concurrent.futures.ThreadPoolExecutor(1) as pool:
    other = pool.submit(scale.run_pinned, sleep, dict(os.environ), None)
    while not scale._RUNNING:  # pylint: disable=protected-access
      time.sleep(0.01)
    started = time.monotonic()
    with pytest.raises(subprocess.CalledProcessError):
      scale.run_pinned([sys.executable, "-c", "raise SystemExit(3)"],
                      dict(os.environ), None)
    with pytest.raises(subprocess.CalledProcessError):
      other.result(timeout=30)
  assert time.monotonic() - started < 30
  with pytest.raises(RuntimeError, match="the other side's child failed"):
    scale.run_pinned(sleep, dict(os.environ), None)


def _side(seconds: float, f1: float, mib: float, **more) -> dict:
  return {"total_mining_s": seconds, "peak_rss_bytes": mib * 2**20,
          "peak_rss_measure": "VmHWM", "quality": {"f1_optimal": {"f1": f1}},
          **more}


def test_a_side_by_side_mining_run_is_rowed_a_core_each_both_ways(
    tmp_path, monkeypatch):
  """lab/performance.md's mining row of a side-by-side file: the cores of
  each side, faiss's time over ours re-ranking the same candidates (with
  stopes' margin, as it ran) and re-ranking none, F1 and peak memory."""
  tables = _module(LAB / "tools" / "mining_peer_tables.py")
  monkeypatch.setattr(tables, "BENCH", str(tmp_path))
  stopes = lambda s, f1: {"ran": True, "total_mining_s": s,
                          "peak_rss_mib": 100.0,
                          "quality": {"f1_optimal": {"f1": f1}}}
  run = {
      "rows_per_side": 1000, "date": "2026-11-30", "rerank": 16,
      "index": "IVF64,PQ16x4fs", "peak_rss_measure": "VmHWM",
      "generator_peak_rss_bytes": None,
      "hardware": {"name": "amd-epyc", "cores": 2},
      "side_by_side": {"ours_cores": [0], "peer_cores": [1]},
      "runs": {"16": _side(100.0, 95.0, 700.0), "0": _side(50.0, 66.0, 300)},
      "peers": {"refine_flat-16": _side(80.0, 95.0, 800.0,
                                        stopes=stopes(90.0, 94.0)),
                "index": _side(40.0, 66.0, 300.0, stopes=stopes(60.0, 65.0))}}
  (tmp_path / "mining_ann.scale-1e3.x.json").write_text(json.dumps(run))
  (row,) = tables.performance_rows()
  assert row[2].endswith("1 core each, side by side")
  assert row[3] == ("0.90x (ours slower), planted-pair F1 95.0 against 94.0, "
                    "peak memory 700 against 800 MiB; 1.20x both re-ranking "
                    "none")
  assert row[4] == "`mining_scale.py --peer --stopes-python --side-by-side`"


def test_the_peers_table_rows_each_cpu_generations_largest_mining_run(
    tmp_path, monkeypatch):
  """lab/performance.md takes, per CPU kind and generation (the recorded
  cpu_id), the largest run with faiss re-ranking as ours: a rerun on a
  second generation adds a row instead of replacing the first's."""
  tables = _module(LAB / "tools" / "mining_peer_tables.py")
  monkeypatch.setattr(tables, "BENCH", str(tmp_path))

  def write(name: str, rows: int, cpu_id: str, peer_s: float) -> None:
    (tmp_path / name).write_text(json.dumps({
        "rows_per_side": rows, "date": "2026-12-06", "rerank": 16,
        "index": "IVF64,PQ16x4fs", "peak_rss_measure": "VmHWM",
        "hardware": {"name": "intel-xeon-2core", "cores": 2,
                     "cpu_id": cpu_id},
        "runs": {"16": _side(100.0, 95.0, 700.0)},
        "peers": {"refine_flat-16": _side(peer_s, 95.0, 800.0)}}))

  write("mining_scale.peers-at-best-1e6.x.json", 10**6,
        "family 6, model 167, stepping 1", 50.0)
  write("mining_scale.peers-at-best-1e7.x.json", 10**7,
        "family 6, model 167, stepping 1", 90.0)
  write("mining_scale.peers-at-best-1e6-emerald-rapids.x.json", 10**6,
        "family 6, model 207, stepping 2", 120.0)
  rows = tables.performance_rows()
  assert [(r[0].split(" a side")[0], r[2], r[3].split(", ")[0])
          for r in rows] == [
      ("approximate mining, 10,000,000", "Intel Xeon (Rocket Lake), 2 cores",
       "0.90x (ours slower)"),
      ("approximate mining, 1,000,000", "Intel Xeon (Emerald Rapids), 2 cores",
       "1.20x")]


class _WordPieces:
  """A sentencepiece stand-in: a word's id is its index in `words` (+ 2)."""

  def __init__(self, words):
    self.words = ["<pad>", "</s>", *words]

  def encode(self, text):
    return [self.words.index(w) for w in text.split()]

  def id_to_piece(self, i):
    return self.words[i]

  def get_piece_size(self):
    return len(self.words)

  def is_control(self, i):
    return self.words[i] in ("<pad>", "<s>", "</s>")

  def is_unknown(self, i):
    return self.words[i] == "<unk>"


def test_equal_wall_refuses_a_keep_folder_an_earlier_run_left_files_in(
    tmp_path):
  """nmt_equal_wall.py --keep: both sides would resume from the checkpoints
  an earlier run left there, so it stops before any work."""
  (tmp_path / "ours").mkdir()
  out = subprocess.run(
      [sys.executable, str(LAB / "benchmarks" / "nmt_equal_wall.py"),
       "--workdir", str(tmp_path / "absent"), "--onmt-bin", str(tmp_path),
       "--keep", str(tmp_path)], capture_output=True, text=True, check=False)
  assert out.returncode == 2
  assert f"--keep {tmp_path} holds an earlier run's files" in out.stderr


def test_opennmt_reads_the_test_pairs_our_bleu_evaluator_reads(tmp_path):
  """nmt_learning_vs_opennmt.write_inputs (nmt_equal_wall's too) gives
  OpenNMT-py the dev_all evaluator's pairs: its `data`, or data.dev."""
  from paraflax import config as config_lib
  learning = _module(LAB / "benchmarks" / "nmt_learning_vs_opennmt.py")
  (tmp_path / "train.tsv").write_text("ein haus\ta house\nzwei\ttwo\n")
  (tmp_path / "dev.tsv").write_text("drei haus\tthree house\nein\tone\n")
  config = config_lib.load(str(ROOT / "configs" / "nmt.py") + ":de", [
      f"--config.data.train=tsv:{tmp_path}/train.tsv",
      f"--config.data.dev=tsv:{tmp_path}/dev.tsv"])
  sp = _WordPieces("ein zwei drei haus a house two three one".split())
  translator = types.SimpleNamespace(  # its encode ends with EOS
      src_sp=sp, tgt_sp=sp, encode=lambda text, *_: sp.encode(text) + [1])
  inputs = learning.write_inputs(str(tmp_path), config, translator)
  assert inputs.test == [("drei haus", "three house"), ("ein", "one")]
  assert (tmp_path / "all.src").read_text().splitlines() == ["drei haus",
                                                             "ein"]
  src, tgt = ((tmp_path / f"train.{side}").read_text().splitlines()
              for side in ("src", "tgt"))
  assert sorted(zip(src, tgt)) == [("ein haus", "a house"), ("zwei", "two")]


def _fake_onmt_bin(tmp: pathlib.Path) -> pathlib.Path:
  """OpenNMT-py's three commands as scripts that count their calls in
  calls.log: training writes two checkpoints, translating copies -src."""
  bin_dir = tmp / "bin"
  bin_dir.mkdir()
  for name, body in (
      ("onmt_build_vocab", 'd=$(dirname "$2"); printf "a\\t1\\n" | '
                           'tee "$d/vocab.src" > "$d/vocab.tgt"'),
      ("onmt_train", 'd=$(dirname "$2"); touch "$d/model_step_1.pt" '
                     '"$d/model_step_2.pt"'),
      ("onmt_translate", 'while [ $# -gt 0 ]; do case $1 in -src) s=$2;; '
                         '-output) o=$2;; esac; shift; done; cp "$s" "$o"')):
    script = bin_dir / name
    script.write_text(f'#!/bin/bash\necho {name} >> "{tmp}/calls.log"\n'
                      f"{body}\n")
    script.chmod(0o755)
  return bin_dir


def test_a_kept_opennmt_folder_resumes_without_training_twice(
    tmp_path, monkeypatch, capsys):
  """nmt_learning_vs_opennmt --keep: a second run on the same inputs reuses
  the finished training (its recorded wall) and its translations; changed
  inputs train again and drop the old model's translations."""
  learning = _module(LAB / "benchmarks" / "nmt_learning_vs_opennmt.py")
  bin_dir, kept = _fake_onmt_bin(tmp_path), tmp_path / "kept"
  kept.mkdir()
  for name in ("onmt.yaml", "train.src", "train.tgt", "dev.src", "all.src"):
    (kept / name).write_text(f"{name}\n")
  config = types.SimpleNamespace(decode=types.SimpleNamespace(
      max_output=10, alpha=0.6))
  cfg, src = str(kept / "onmt.yaml"), str(kept / "dev.src")

  def calls():
    return (tmp_path / "calls.log").read_text().split()

  first = learning.train(str(bin_dir), str(kept), cfg)
  out = learning._translated(str(bin_dir), str(kept), src, 2, 4, config,
                             "dev")
  assert not first["train_reused"] and (kept / "trained.json").exists()
  assert open(out).read() == "dev.src\n" and not list(kept.glob("*.partial"))
  again = learning.train(str(bin_dir), str(kept), cfg)
  assert again == {**first, "train_reused": True}
  assert learning._translated(str(bin_dir), str(kept), src, 2, 4, config,
                              "dev") == out
  assert calls() == ["onmt_build_vocab", "onmt_train", "onmt_translate"]
  (kept / "train.src").write_text("other pairs\n")
  trainer = bin_dir / "onmt_train"
  working = trainer.read_text()
  trainer.write_text("#!/bin/bash\nexit 1\n")  # killed before it ends
  with pytest.raises(SystemExit):
    learning.train(str(bin_dir), str(kept), cfg)
  assert not (kept / "trained.json").exists() and not os.path.exists(out)
  trainer.write_text(working)
  assert not learning.train(str(bin_dir), str(kept), cfg)["train_reused"]
  assert calls().count("onmt_train") == 2
  # The same inputs with every sentencepiece piece as its vocabularies:
  # a model trained on the smaller ones is not reused.
  pieces = _WordPieces(["<unk>", "<s>", "</s>", "▁a", "▁house"])
  every = learning.train(str(bin_dir), str(kept), cfg, (pieces, pieces))
  assert not every["train_reused"] and calls().count("onmt_train") == 3
  assert every["vocabulary"] == {"which": "all",
                                 "pieces": {"src": 2, "tgt": 2}}
  # nmt_vs_opennmt.py --onmt-model records the vocabularies of the kept
  # training beside the checkpoint, and finds none beside any other.
  assert learning.peer.kept_vocabularies(
      str(kept / "model_step_2.pt")) == every["vocabulary"]
  assert learning.peer.kept_vocabularies(str(tmp_path / "m.pt")) is None
  # ... and refuses a checkpoint without that record before any work.
  monkeypatch.setattr(sys, "argv", [
      "nmt_vs_opennmt.py", "--workdir", str(tmp_path / "none"),
      "--onmt-bin", str(bin_dir), "--onmt-model", str(tmp_path / "m.pt")])
  with pytest.raises(SystemExit) as stopped:
    learning.peer.main()
  assert stopped.value.code == 2
  assert "no trained.json beside it" in capsys.readouterr().err
