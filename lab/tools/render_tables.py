"""Renders the results tables of README.md, docs/*.md and lab/*.md from JSON.

A table in a Markdown file sits between two marker comments:

    <!-- table: NAME -->
    | ... the rendered table ... |
    <!-- /table -->

and a figure that prose quotes from the same files between two others,
on one line: `<!-- value: NAME -->99.6<!-- /value -->` (NAME in VALUES
below, or FILE:PATH:FORMAT, one field of a result file: quoted.py); a
config header (configs/) writes it `{NAME=99.6}`.

NAME is a function of TABLES below; it reads the JSON that a benchmark
wrote (`lab/results/`; `bench_tables.py`) or the output files of
the runs behind a table (`lab/results/runs/`, kept by
`collect_result.py`, and listed by the table's definition in
`lab/tables/`; `run_tables.py`) and returns the table's lines. Rewrite every table:

    python lab/tools/render_tables.py            # rewrite README.md, docs/ and lab/
    python lab/tools/render_tables.py --check    # exit 1 if one is stale

It also writes docs/commands.md from the command table
(`paraflax.commands.COMMANDS`). `tests/test_docs.py` runs the check.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import re
import sys
from typing import Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# pylint: disable=wrong-import-position
import bench_tables  # the benchmarks' tables of lab/benchmarks/README.md
import compile_tables  # the TPU compiles' tables (docs/pod.md, lab/scaling.md)
import fidelity_tables  # lab/fidelity.md's runs of caption encoders
import markdown_table  # the lines of a Markdown table
import mining_peer_tables  # mining_scale.py --peer, both sides re-ranking
import quoted  # a figure quoted from one field of a result file
import rerun_tables  # lab/README.md's collected runs rerun by lab/run.py
import run_tables  # tables computed from the runs' own output files

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "lab", "results")
RESULTS = os.path.join(ROOT, "lab", "results")
MARKER = re.compile(
    r"(<!-- table: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- /table -->)",
    re.S)


VALUE = re.compile(r"(<!-- value: (?P<name>[\w./:=, -]+?) -->)(?P<body>[^<\n]*)"
                   r"(<!-- /value -->)")
# A config header's figure, in plain text: {NAME=99.6}. A quote's name may
# pick a list item by KEY=VALUE (quoted.py): an "=" followed by a ":" and
# another "=" is the name's, the last one before the body is not.
CONFIG_VALUE = re.compile(
    r"(\{(?P<name>[\w/-]+\.(?:[\w./:,-]|=(?=[^{}\n]*:[^{}\n]*=))+)=)"
    r"(?P<body>[^{}\n]*)(\})")


def _load(path: str) -> dict:
  with open(path, encoding="utf-8") as f:
    return json.load(f)


_row = markdown_table.row
_header = markdown_table.header
_f = markdown_table.num


# A kind's file, or its rerun on a later generation beside it.
_CPU_FILES = re.compile(r"mining_throughput\.d\d+(-emerald-rapids)?"
                        r"\.(amd-epyc|intel-xeon)-2core\.json")


def mining_throughput() -> list[str]:
  """Ours against faiss + numpy and the bare product on 2 CPU cores, each
  CPU kind measured; ours with and without its first call's compile."""
  lines = _header(
      ["hardware (1-min load at start)", "d", "N", "ours, 1 device (s)",
       "its compile (s)",
       "ours, 8 devices (s)", "faiss IndexFlatIP both ways + numpy (s)",
       "one product, jax (s)", "faiss / ours", "faiss / (ours + compile)",
       "ours / product"],
      ["---"] + ["---:"] * 10)
  paths = [p for p in os.listdir(BENCH) if _CPU_FILES.fullmatch(p)]
  for path in sorted(paths, key=lambda p: (
      _CPU_FILES.fullmatch(p)[2], bool(_CPU_FILES.fullmatch(p)[1]), p)):
    d = _load(os.path.join(BENCH, path))
    ok = [r for r in d["results"] if r.get("status") == "ok"]
    by = {(r["method"], r["n"], r["devices"]): r["total_s"] for r in ok}
    compile_s = {r["n"]: r.get("compile_s") for r in ok
                 if r["method"] == "ours" and r["devices"] == 1}
    cpu = markdown_table.hardware_cell(d)
    for n in sorted({k[1] for k in by}):
      ours, ours8 = by.get(("ours", n, 1)), by.get(("ours", n, 8))
      faiss, roof = by.get(("faiss", n, 1)), by.get(("roofline_jax", n, 1))
      comp = compile_s.get(n)
      lines.append(_row([
          cpu, d["dim"], f"{n:,}", _f(ours), _f(comp), _f(ours8), _f(faiss),
          _f(roof), _f(faiss / ours) + "x" if faiss and ours else "",
          _f(faiss / (ours + comp)) + "x" if faiss and ours and comp is not None
          else "",
          _f(ours / roof) + "x" if roof and ours else ""]))
  return lines


def mining_h100_de_en() -> list[str]:
  """P/R/F1 of the de-en bilingual model trained 4 minutes on an H100."""
  d = _load(os.path.join(BENCH, "gpu_session.de-en.nvidia-h100",
                         "bi_de.mining_eval.json"))
  lines = _header(["margin", "retrieval", "dev threshold", "test P", "test R",
                   "test F1"], ["---", "---", "---:", "---:", "---:", "---:"])
  for r in d["rows"]:
    lines.append(_row([
        r["margin"], r["retrieval"], _f(r["threshold"], 3),
        _f(100 * r["test_precision"], 1), _f(100 * r["test_recall"], 1),
        _f(100 * r["test_f1"], 1)]))
  return lines


def nmt_vs_opennmt() -> list[str]:
  """NMT training target tokens/s against OpenNMT-py, a row per CPU kind
  and encoder measured: both sides' whole loop, data loading in, from the
  warm-up step to the last."""
  lines = _header(["CPU", "our encoder", "threads a side",
                   "steps timed (both: the whole loop, data loading in)",
                   "OpenNMT-py's vocabularies", "OpenNMT-py's torch",
                   "load (1 min)", "ours (tokens/s)",
                   "OpenNMT-py 3.0.4 (tokens/s)", "ours / OpenNMT-py",
                   "whole loop from step 0: ours / OpenNMT-py"],
                  ["---"] * 6 + ["---:"] * 5)
  for variant, d in bench_tables.nmt_train_results():
    t, load = d["train"], list(d["load_average_1min"].values())
    ours, peer = t["ours"], t["opennmt"]
    with_compiles = ours["loop"]["target_tokens"] / (
        ours["loop"]["seconds"] + ours["compile_s"])
    ratio = t["target_tokens_per_s_ratio_ours_over_opennmt"]
    # The CPU's family, model and stepping: hosts all called "AMD EPYC"
    # train at different rates.
    lines.append(_row([
        markdown_table.recorded_cpu_cell(d["hardware"],
                                         bench_tables.cores_used(d))
        + f" ({d['hardware']['cpu_id']})",
        bench_tables.NMT_VARIANTS[variant], d["torch_threads"],
        f"steps {t['warmup_steps']}-{ours['steps']}",
        bench_tables.onmt_vocabulary(d), d["run"]["peers"]["torch"],
        f"{min(load):.1f}-{max(load):.1f}",
        _f(ours["target_tokens_per_s"], 0),
        _f(peer["target_tokens_per_s"], 0),
        markdown_table.slower(_f(ratio) + "x", [ratio]),
        f"{t['loop_target_tokens_per_s_ratio_ours_over_opennmt']:.2f}x "
        f"({with_compiles / peer['loop']['target_tokens_per_s']:.2f}x with "
        "our compiles)"]))
  return lines


def encoders_vs_wieting() -> list[str]:
  lines = _header(["CPU", "the two sides", "load (1 min)", "model",
                   "ours (pairs/s)", "Wieting's PyTorch code (pairs/s)",
                   "ours / theirs"],
                  ["---", "---", "---:", "---", "---:", "---:", "---:"])
  for hardware, how, d in bench_tables.encoder_speed_results():
    for r in d["results"]:
      ours, theirs = r["ours"]["pairs_per_s"], r["wieting"]["pairs_per_s"]
      loads = (r["ours"].get("load_average_1min_by_round", [])
               + r["wieting"].get("load_average_1min_by_round", [])
               or [d["loadavg_start"][0], d["loadavg_end"][0]])
      lines.append(_row([hardware, how, f"{min(loads):.1f}-{max(loads):.1f}",
                         r["model"], _f(ours, 1), _f(theirs, 1),
                         _f(ours / theirs, 1) + "x"]))
  return lines


def train_throughput() -> list[str]:
  """Each train_throughput file's rows, with each length-group count's
  pairs/s over the same model's padded (1 group) in the same run."""
  lines = _header(["hardware (1-min load at start)", "model",
                   "length groups", "devices", "pairs/s", "x padded"],
                  ["---", "---", "---:", "---:", "---:", "---:"])
  for d in bench_tables.result_files("train_throughput.*.json"):
    padded = {(r["model"], r["devices"]): r["pairs_per_s"]
              for r in d["results"] if r["length_groups"] == 1}
    for r in d["results"]:
      lines.append(_row([
          markdown_table.hardware_cell(d), r["model"],
          r["length_groups"], r["devices"], _f(r["pairs_per_s"], 1),
          _f(r["pairs_per_s"] / padded[r["model"], r["devices"]], 2)]))
  return lines


_STAGES = ("backtranslate", "score", "filter", "filter_stream", "beam_score")


def _hardware_name(d: dict) -> str:
  """The file name part of a result's hardware: a string in files written
  before children.run_facts, its "name" since."""
  hardware = d["hardware"]
  return hardware["name"] if isinstance(hardware, dict) else hardware


def _stage_rows(paths: list[str]) -> list[str]:
  lines = _header(["stage", "hardware", "records", "records/s",
                   "peak RSS (MiB)"], ["---", "---", "---:", "---:", "---:"])
  for path in sorted(paths):
    d = _load(path)
    for stage in sorted(d["stages"], key=_STAGES.index):
      for n, r in sorted(d["stages"][stage].items(), key=lambda kv: int(kv[0])):
        lines.append(_row([stage, _hardware_name(d), f"{int(n):,}",
                           _f(r["records_per_s"], 0),
                           _f(r["peak_rss_mib"], 0)]))
  return lines


def stage_scale() -> list[str]:
  """lab/benchmarks/stage_scale.py: each stage's rate and peak RSS by size
  (stage_scale.<hardware>.json)."""
  return _stage_rows([
      p for p in glob.glob(os.path.join(BENCH, "stage_scale.*.json"))
      if os.path.basename(p).count(".") == 2])


def stage_scale_streamed() -> list[str]:
  """lab/benchmarks/stage_scale.py: the back-translated Task streamed, to
  10^7 records."""
  return _stage_rows(glob.glob(os.path.join(
      BENCH, "stage_scale.filtered-1e7.*.json")))


def stage_scale_backtranslate() -> list[str]:
  """lab/benchmarks/stage_scale.py: back-translation at batch 256 to 10^6
  records."""
  return _stage_rows(glob.glob(os.path.join(
      BENCH, "stage_scale.backtranslate-b256.*.json")))


def training_memory() -> list[str]:
  """lab/benchmarks/train_memory.py: peak RSS of `paraflax train` by the size
  of its training file, streamed and in memory, per recipe."""
  lines = _header(["recipe", "CPU", "path", "pairs", "peak RSS (MiB)",
                   "encoded cache (MiB)", "first logged loss"],
                  ["---", "---", "---", "---:", "---:", "---:", "---:"])
  for path in sorted(glob.glob(os.path.join(
      BENCH, "stage_scale_training.*.json"))):
    d = _load(path)
    recipe = d.get("recipe", "paraphrase")
    cpu = markdown_table.named_cpu_cell(path, d)
    for r in sorted(d["runs"], key=lambda r: (r["path"], r["pairs"])):
      lines.append(_row([recipe, cpu, r["path"], f"{r['pairs']:,}",
                         _f(r["peak_rss_mib"], 0),
                         _f(r["encoded_cache_mib"], 0)
                         if r["path"] == "streamed" else "",
                         _f(r["losses"][0][1], 4)]))
  return lines


def mining_ann_recall() -> list[str]:
  """Index settings against exact search on synthetic clustered vectors,
  with faiss driven directly as the peer, on each machine measured."""
  lines = _header(
      ["hardware (1-min load at start)", "index", "nprobe",
       "recall@4 src->tgt",
       "recall@4 tgt->src", "pairs as exact", "bytes / row", "build (s)",
       "search (s)", "faiss directly: pairs as exact",
       "faiss directly / ours (time)"],
      ["---", "---", "---:"] + ["---:"] * 8)
  for d in mining_peer_tables.ann("recall"):
    where = markdown_table.hardware_cell(d)
    for r in d.get("recall", []):
      if r["nprobe"] is None:
        lines.append(_row([where, r["setting"], "", "1.000", "1.000",
                           "1.000", "", "", _f(r["search_s"]), "", ""]))
        continue
      lines.append(_row([
          where, f"`{r['setting']}`", r["nprobe"], _f(r["recall_fwd"], 3),
          _f(r["recall_bwd"], 3), _f(r["same_pairs"], 3),
          _f(r["bytes_per_row"], 1), _f(r["build_s"]), _f(r["search_s"]),
          _f(r["peer_same_pairs"], 3), _f(r["peer_over_ours"]) + "x"]))
  return lines


def mining_ann_quality() -> list[str]:
  """Mining P/R/F1 on the de-en news benchmarks, exact and per index."""
  lines = _header(["hardware (1-min load at start)", "search", "nprobe",
                   "dev threshold", "dev F1",
                   "test P", "test R", "test F1"],
                  ["---", "---", "---:", "---:", "---:", "---:", "---:",
                   "---:"])
  for d in mining_peer_tables.ann("quality"):
    for r in d["quality"]:
      lines.append(_row([
          markdown_table.hardware_cell(d),
          r["setting"] if r["nprobe"] is None else f"`{r['setting']}`",
          r["nprobe"] or "", _f(r["dev_threshold"], 3), _f(r["dev_f1"], 1),
          _f(r["test_precision"], 1), _f(r["test_recall"], 1),
          _f(r["test_f1"], 1)]))
  return lines


def mining_rerank() -> list[str]:
  """lab/benchmarks/mining_rerank.py: our re-ranking from the float16 shards
  beside faiss's IndexRefineFlat from float32 rows in memory."""
  lines = _header(
      ["hardware", "commit", "rows a side", "candidates", "recall@4",
       "ours (s)", "of which index search (s)",
       "the rest: re-rank, order (s)", "faiss (s)", "faiss / ours (time)"],
      ["---", "---"] + ["---:"] * 8)
  for path in sorted(glob.glob(os.path.join(BENCH, "mining_rerank.*.json")),
                     key=bench_tables.rerun_last):
    d = _load(path)
    for r in d["rows"]:
      ours, peer = r["ours"], r["faiss"]
      lines.append(_row([
          markdown_table.hardware_cell(d), f"`{d['commit'][:7]}`",
          f"{d['rows_per_side']:,}", r["candidates"] if r["rerank"]
          else f"{r['candidates']} (none re-ranked)",
          _f(ours["recall_at_k"], 3), _f(ours["seconds"]),
          _f(ours["index_search_s"]), _f(ours["rest_s"]),
          _f(peer["seconds"]), _f(r["faiss_over_ours_time"]) + "x"]))
  return lines


def mining_vs_sentence_transformers() -> list[str]:
  """lab/benchmarks/mining_vs_sentence_transformers.py: the same embeddings
  mined by paraflax and by sentence-transformers' recipe, on each CPU kind
  with the load it ran under."""
  lines = _header(["CPU (1-min load)", "mined by", "dev (s)", "test (s)",
                   "first call (s)", "dev threshold", "dev F1", "test P",
                   "test R", "test F1"], ["---", "---"] + ["---:"] * 8)
  for d in bench_tables.per_cpu("mining_vs_sentence_transformers"):
    cpu = markdown_table.recorded_cpu_cell(d["hardware"])
    for tool, r in d["rows"].items():
      first = r["dev_run"].get("first_s")
      if tool != "paraflax":
        tool += f" (torch {d['run']['peers']['torch']})"
      lines.append(_row([
          f"{cpu} ({d['load_average'][0]:.1f})", tool,
          _f(r["dev_median_s"]), _f(r["test_median_s"]),
          _f(first) if first is not None else "", _f(r["dev_threshold"], 3),
          _f(r["dev_f1"], 1), _f(r["test_precision"], 1),
          _f(r["test_recall"], 1), _f(r["test_f1"], 1)]))
  return lines


TABLES: dict[str, Callable[[], list[str]]] = {
    f.__name__: f for f in (
        mining_throughput, mining_h100_de_en, nmt_vs_opennmt,
        encoders_vs_wieting, train_throughput, stage_scale,
        stage_scale_streamed, stage_scale_backtranslate, training_memory,
        mining_ann_recall, mining_ann_quality,
        mining_vs_sentence_transformers, mining_rerank,
        *run_tables.TABLES, *bench_tables.TABLES, *fidelity_tables.TABLES,
        *compile_tables.TABLES, *mining_peer_tables.TABLES,
        *rerun_tables.TABLES)}


class _Values(dict):
  """The named figures, and a quote of one field (quoted.py) for any
  name that reads FILE:PATH:FORMAT."""

  def __missing__(self, name: str) -> Callable[[], str]:
    if quoted.is_quote(name):
      return lambda: quoted.render(name)
    raise KeyError(f"no value named {name!r} (lab/tools/render_tables.py)")


VALUES: dict[str, Callable[[], str]] = _Values({**run_tables.VALUES,
                                                **fidelity_tables.VALUES,
                                                **bench_tables.VALUES,
                                                **mining_peer_tables.VALUES,
                                                **rerun_tables.VALUES,
                                                **compile_tables.VALUES})


COMMANDS_MD = os.path.join(ROOT, "docs", "commands.md")


def _flag_cell(names, kwargs) -> tuple[str, str]:
  metavar = kwargs.get("metavar")
  if kwargs.get("action") in ("store_true", "store_false"):
    usage = ", ".join(names)
  else:
    if metavar is None and "choices" in kwargs:
      metavar = "{" + ",".join(str(c) for c in kwargs["choices"]) + "}"
    metavar = metavar or names[0].lstrip("-").replace("-", "_").upper()
    if isinstance(metavar, tuple):
      metavar = " ".join(metavar)
    nargs = kwargs.get("nargs")
    arg = f"{metavar} ..." if nargs in ("+", "*") else metavar
    usage = ", ".join(f"{n} {arg}" if n.startswith("-") else arg
                      for n in names)
  notes = []
  if kwargs.get("required"):
    notes.append("required")
  if "choices" in kwargs and kwargs.get("metavar"):
    notes.append("one of " + ", ".join(f"`{c}`" for c in kwargs["choices"]))
  default = kwargs.get("default")
  if default not in (None, False, "") and isinstance(
      default, (str, int, float)) and "SUPPRESS" not in str(default):
    notes.append(f"default `{default}`")
  help_text = " ".join(str(kwargs.get("help", "")).split())
  cell = help_text + (" (" + "; ".join(notes) + ")" if notes else "")
  return "`" + usage + "`", cell.replace("|", "\\|")


def commands_markdown() -> str:
  """docs/commands.md: every command of `paraflax.commands.COMMANDS`, by
  stage as `paraflax --help` lists them."""
  if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
  from paraflax import commands  # pylint: disable=import-outside-toplevel
  out = ["# Commands", "",
         "Generated from the command table `paraflax/commands/` (one module "
         "per stage) by `python lab/tools/render_tables.py`; `paraflax --help` "
         "lists the same commands by stage, `paraflax <command> --help` "
         "prints a command's flags. Every command takes `--verbose` "
         "(start-up logs and tracebacks) before its name.", "",
         "| stage | command | what |", "|---|---|---|"]
  for stage in commands.STAGES:
    for i, (name, command) in enumerate(stage.COMMANDS.items()):
      out.append(f"| {'' if i else stage.TITLE} | [`{name}`](#{name}) | "
                 f"{command.help} |")
  for stage in commands.STAGES:
    out += ["", f"## {stage.TITLE}: {', '.join(stage.COMMANDS)}"]
    for name, command in stage.COMMANDS.items():
      out += ["", f"### {name}", "", " ".join(command.description.split()),
              ""]
      rows = []
      if command.config:
        default = (f" (default `{command.config}`)"
                   if isinstance(command.config, str) else " (required)")
        rows.append(("`--config FILE[:ARG]`", "configs/<name>.py, or "
                     "configs/<name>.py:<arg> for get_config(<arg>)"
                     + default))
        rows.append(("`--config.KEY=VALUE`", "override one key of the "
                     "config; a flag marked [config: key] sets that key "
                     "too, and wins"))
      rows += [_flag_cell(names, kwargs) for names, kwargs in command.flags]
      if rows:
        out += ["| flag | meaning |", "|---|---|"]
        out += [f"| {a} | {b} |" for a, b in rows]
  return "\n".join(out) + "\n"


def markdown_files() -> list[str]:
  return [os.path.join(ROOT, "README.md"),
          os.path.join(ROOT, "lab", "benchmarks", "README.md")] + sorted(
              glob.glob(os.path.join(ROOT, "docs", "*.md"))
              + glob.glob(os.path.join(ROOT, "lab", "*.md"))
              + glob.glob(os.path.join(ROOT, "lab", "experiments", "*",
                                       "README.md")))


def rendered_files() -> list[str]:
  """The Markdown files, the configs whose headers quote figures, and the
  notebooks (value markers in their Markdown cells, one line each)."""
  return markdown_files() + sorted(
      glob.glob(os.path.join(ROOT, "configs", "**", "*.py"), recursive=True)
      + glob.glob(os.path.join(ROOT, "colabs", "*.ipynb")))


def render(text: str, values: re.Pattern = VALUE) -> str:
  """`text` with every marked table and value rewritten from its JSON."""
  def one(m: re.Match) -> str:
    name = m.group("name")
    if name not in TABLES:
      raise KeyError(f"no table named {name!r} (lab/tools/render_tables.py)")
    return m.group(1) + "\n".join(TABLES[name]()) + "\n" + m.group(4)

  def value(m: re.Match) -> str:
    return m.group(1) + VALUES[m.group("name")]() + m.group(4)
  return values.sub(value, MARKER.sub(one, text))


def render_file(path: str, text: str) -> str:
  return render(text, CONFIG_VALUE if path.endswith(".py") else VALUE)


def stale(paths=None) -> list[str]:
  """The files whose marked tables differ from their JSON, and
  docs/commands.md if it differs from the command table."""
  out = []
  if paths is None:
    current = ""
    if os.path.exists(COMMANDS_MD):
      with open(COMMANDS_MD, encoding="utf-8") as f:
        current = f.read()
    if current != commands_markdown():
      out.append(os.path.relpath(COMMANDS_MD, ROOT))
  for path in paths or rendered_files():
    with open(path, encoding="utf-8") as f:
      text = f.read()
    if render_file(path, text) != text:
      out.append(os.path.relpath(path, ROOT))
  return out


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--check", action="store_true",
                      help="exit 1 if a table is stale; write nothing")
  args = parser.parse_args(argv)
  if args.check:
    try:
      bad = stale()
    except (ValueError, KeyError, OSError) as e:  # a run file changed by hand
      print(f"render_tables: {e}", file=sys.stderr)
      return 1
    for path in bad:
      print(f"{path}: stale (a table differs from its JSON, or commands.md "
            "from paraflax/commands/); run python lab/tools/render_tables.py",
            file=sys.stderr)
    return 1 if bad else 0
  text = commands_markdown()
  with open(COMMANDS_MD, "w", encoding="utf-8") as f:
    f.write(text)
  for path in rendered_files():
    with open(path, encoding="utf-8") as f:
      text = f.read()
    new = render_file(path, text)
    if new != text:
      with open(path, "w", encoding="utf-8") as f:
        f.write(new)
      print("rendered", os.path.relpath(path, ROOT))
  return 0


if __name__ == "__main__":
  sys.exit(main())
