"""lab/figures.md: every generated table of README.md, docs/ and lab/, and
every figure that prose and config headers quote (value markers), with
the result files it is rendered from and the command behind each (from
lab/results/manifest.json).

    python lab/tools/figures.py            # rewrite lab/figures.md
    python lab/tools/figures.py --check    # exit 1 if it is stale

A table's files are the ones its renderer opens under lab/results/ and
lab/tables/ (an audit hook watches `open` while the renderer runs), so
the list follows the code, not a hand-kept mapping.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# pylint: disable=wrong-import-position
import manifest
import render_tables
import typed_figures

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import run  # lab/run.py: a file's command as today's checkout runs it

FIGURES_MD = os.path.join(render_tables.ROOT, "lab", "figures.md")
_opened: list[str] | None = None


def _watch(event: str, args: tuple) -> None:
  if _opened is not None and event == "open" and isinstance(args[0], str):
    _opened.append(os.path.abspath(args[0]))


sys.addaudithook(_watch)


def sources(name: str, renderers: dict | None = None) -> list[str]:
  """The files that table `name`'s renderer (or the value's, from
  `renderers`) reads, in the order first read: result files relative to
  lab/results/, table definitions as lab/tables/NAME.json."""
  global _opened
  _opened = []
  try:
    (renderers or render_tables.TABLES)[name]()
    opened = _opened
  finally:
    _opened = None
  results = os.path.abspath(manifest.RESULTS) + os.sep
  tables = os.path.abspath(render_tables.run_tables.DEFINITIONS) + os.sep
  return list(dict.fromkeys(
      p[len(results):] if p.startswith(results)
      else os.path.relpath(p, render_tables.ROOT) for p in opened
      if p.startswith(tables)
      or (p.startswith(results) and not p.endswith(manifest.NAME))))


def _is_definition(rel: str) -> bool:
  """Whether `rel` (from `sources`) is a table's hand-written definition
  under lab/tables/ rather than a result file."""
  return rel.startswith("lab/tables/")


def tables_by_page() -> list[tuple[str, str]]:
  """(page, table name) for every table marker, pages in render order."""
  out = []
  for path in render_tables.markdown_files():
    with open(path, encoding="utf-8") as f:
      for m in render_tables.MARKER.finditer(f.read()):
        out.append((os.path.relpath(path, render_tables.ROOT),
                    m.group("name")))
  return out


def values_by_page() -> list[tuple[str, str]]:
  """(page, value name) for every value marker of the rendered files."""
  out = []
  for path in render_tables.rendered_files():
    pattern = (render_tables.CONFIG_VALUE if path.endswith(".py")
               else render_tables.VALUE)
    with open(path, encoding="utf-8") as f:
      names = dict.fromkeys(m.group("name") for m in pattern.finditer(f.read()))
    out += [(os.path.relpath(path, render_tables.ROOT), n) for n in names]
  return out


def _rows(items: list[tuple[str, str]], renderers: dict | None,
          entries: dict[str, dict]) -> list[str]:
  out, last_page = [], None
  for page, name in items:
    files = sources(name, renderers) or [""]
    for i, rel in enumerate(files):
      shown = page if page != last_page else ""
      last_page = page
      out.append(f"| {shown} | {'' if i else name} | "
                 f"{'`' + rel + '`' if rel else '**none**'} | "
                 f"{_command(rel, entries) if rel else ''} |")
  return out


def _value_rows(entries: dict[str, dict]) -> list[str]:
  """One row per page and set of files, naming the values read from them."""
  grouped: dict[tuple[str, tuple[str, ...]], list[str]] = {}
  for page, name in values_by_page():
    files = tuple(sources(name, render_tables.VALUES))
    grouped.setdefault((page, files), []).append(name)
  out, last_page = [], None
  for (page, files), names in grouped.items():
    shown, last_page = (page if page != last_page else ""), page
    commands = dict.fromkeys(_command(rel, entries) for rel in files)
    out.append(f"| {shown} | {', '.join(names)} | "
               f"{'<br>'.join(f'`{rel}`' for rel in files) or '**none**'} | "
               f"{'<br>'.join(commands)} |")
  return out


def _command(rel: str, entries: dict[str, dict]) -> str:
  if _is_definition(rel):
    return "the table's rows, written by hand (a transcribed row says so)"
  if rel not in entries:
    return "**not in the manifest**"
  try:
    command = run.shell_line(run.command_of(rel, entries))
    note = run.note_of(entries[rel]["command"])[1]
  except ValueError:
    command, note = entries[rel]["command"], ""
  if not command:
    return "kept without a command"
  after = ", ".join(f"`{need}`" for need, _ in run.needs_of(rel, entries))
  return ("`" + command.replace("|", "\\|") + "`"
          + (f" ({note})" if note else "") + (f", after {after}" if after
                                              else ""))


def _typed_rows() -> list[str]:
  """One row per figure typed rather than rendered, with why."""
  out = []
  for page, entries in typed_figures.listed().items():
    for i, (figure, why) in enumerate(entries.items()):
      out.append(f"| {'' if i else page} | {figure} | "
                 f"{why.replace('|', chr(92) + '|')} |")
  return out


def markdown() -> str:
  entries = manifest.load()
  out = ["# Figures and their sources", "",
         "Generated by `python lab/tools/figures.py` from the table "
         "renderers and `results/manifest.json`: each table of README.md, "
         "docs/ and lab/, the result files it is rendered from, and the "
         "command that reruns each (`python lab/run.py FILE`; a command "
         "with placeholders such as WORK reads them from the environment; "
         "\"after\" names the kept runs or commands that make what it "
         "reads, which `lab/run.py` runs first). "
         "\"Kept without a command\": a file kept before the record had a "
         "writer that holds no command. `lab/tables/`: a table's "
         "definition, the rows it shows and the runs behind them.", "",
         "| page | table | result file | command |", "|---|---|---|---|"]
  out += _rows(tables_by_page(), None, entries)
  out += ["", "## Figures quoted in prose and config headers", "",
          "Each value marker (`<!-- value: NAME -->` in a page, "
          "`{NAME=...}` in a config header) and the files it is read from.",
          "", "| page | value | result file | command |", "|---|---|---|---|"]
  out += _value_rows(entries)
  out += ["", "## Figures typed, not rendered", "",
          "The figures that README.md, docs/, the config headers and the "
          "lab's pages type instead of rendering from a result file, each "
          "with why: a setting, a size computed from a shape, or a "
          "transcription of a run whose output was not kept "
          "(`lab/tables/typed_figures.json`; `python "
          "lab/tools/typed_figures.py` fails on one not listed).",
          "", "| page | figure | why typed |", "|---|---|---|"]
  out += _typed_rows()
  return "\n".join(out) + "\n"


def unsourced() -> list[str]:
  """Tables that read no result file, or a file the manifest lacks."""
  entries, out = manifest.load(), []
  for kind, items, renderers in (
      ("table", tables_by_page(), None),
      ("value", values_by_page(), render_tables.VALUES)):
    for page, name in items:
      files = sources(name, renderers)
      if not files:
        out.append(f"{page}: {kind} {name} reads no file of lab/results/")
      out += [f"{page}: {kind} {name} reads {rel}, not in the manifest"
              for rel in files
              if rel not in entries and not _is_definition(rel)]
  return out


def main(argv: list[str] | None = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--check", action="store_true")
  args = parser.parse_args(argv)
  text = markdown()
  current = ""
  if os.path.exists(FIGURES_MD):
    with open(FIGURES_MD, encoding="utf-8") as f:
      current = f.read()
  if args.check:
    if current != text:
      print("lab/figures.md is stale: python lab/tools/figures.py",
            file=sys.stderr)
      return 1
    return 0
  with open(FIGURES_MD, "w", encoding="utf-8") as f:
    f.write(text)
  print(f"wrote {os.path.relpath(FIGURES_MD, render_tables.ROOT)}")
  return 0


if __name__ == "__main__":
  sys.exit(main())
