"""The measured-looking figures that README.md, docs/, the config headers,
the notebooks' Markdown cells, the lab's pages and the hand-written table
definitions (lab/tables/*.json, whose cells reach the rendered tables) type
instead of rendering from a result file.

A figure is a number with a unit of measure: a time ("12 min 50 s",
"0.4 µs"), a share ("6.9 %"), a speed ratio ("1.64x"), a size ("2.1 GB",
"16 bytes"), a rate ("217k events/s") or "BLEU" / "F1" / "points"; a
number's commas group thousands ("1,024 MiB", not "8, byte"); or a score named
before its decimal number ("BLEU 6.21", "F1 0.14", "STSb test 64.96",
"Pearson 0.3280", "P@1 38.9"); decimal numbers given as a series
("54.06 / 59.35") or a span ("0.87-0.88", "1.00 to 1.23"); a decimal
number a few words after what it measures ("ratio 1.00", "loss at step
30 6.5773625"); or a decimal number in a row of a typed table, whose
cells carry no unit. Rendered figures (value and table
markers, a table definition's {NAME} cells), code blocks and `code` spans
are skipped. Every
figure left must be listed, per page, in lab/tables/typed_figures.json
with why it is typed: a setting rather than a measurement, or a
transcription (the run it comes from, and why its output is not kept).

    python lab/tools/typed_figures.py        # unlisted ones; exit 1 if any
    python lab/tools/typed_figures.py --all  # every typed figure, listed or not

`tests/test_docs.py` runs the check, and lab/figures.md lists the
transcriptions.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# pylint: disable=wrong-import-position
import render_tables

LISTED = os.path.join(render_tables.ROOT, "lab", "tables",
                      "typed_figures.json")
_UNIT = (r"%|min(?:utes?)?|ms|µs|ns|s|seconds?|h|hours?|MiB|GiB|TiB|MB|GB|TB"
         r"|BLEU|F1|points?|[a-z]+/s|bytes?|KiB|kB")
# A number and a unit; "1.64x" (no space) a ratio, "2 x 4" a product; the
# end of a range ("35-41 s") counts, a flag's or a name's digits do not.
FIGURE = re.compile(
    r"(?<![\w.^/=])(?<![A-Za-z_-]-)\d+(?:,\d{3})*(?:\.\d+)?(?:k|M)?"
    r"(?:x(?![\w^])|\s?(?:" + _UNIT + r")(?![\w^]))")
# A score's name, then its decimal number ("STSb dev-tuning 27.95").
SCORE = re.compile(
    r"(?<![\w@-])(?:BLEU|F1|P@\d+|Pearson|Spearman|dev(?:-tuning)?|test)"
    r"\s(?:of\s)?\d+\.\d+(?![\w.])")
SERIES = re.compile(r"(?<![\w.^/=])\d+\.\d+(?:\s?/\s?\d+\.\d+)+(?![\w.])")
# A span of decimal numbers ("0.87-0.88", "1.00 to 1.23"), and a decimal
# number a few words after what it measures ("ratio 1.00", "loss at step
# 30 6.57", "recall@4 ... 0.96").
_TO = r"(?:-|\s+to\s+)\d+\.\d+"  # a span's second end
SPAN = re.compile(r"(?<![\w.^/=@-])\d+\.\d+" + _TO + r"(?![\w.])")
MEASURE = re.compile(
    r"(?<![\w@-])(?:loss(?:es)?|ratio|recall(?:@\d+)?|accuracy|precision"
    r"|perplexity)(?:\s+at\s+step\s+[\d,]+)?[^.\d|]{0,24}?\s"
    r"\d+\.\d+(?:" + _TO + r")?(?![\w.])", re.I)
_TABLE_ROW = re.compile(r"^\|.*\|[ \t]*$", re.M)
_DECIMAL = re.compile(r"(?<![\w.^/=@-])\d+(?:,\d{3})*\.\d+(?![\w.])")
_RENDERED = (render_tables.MARKER, render_tables.VALUE,
             render_tables.CONFIG_VALUE, render_tables.run_tables.VALUE_REF)
_CODE = re.compile(r"^```.*?^```|`[^`\n]*`", re.S | re.M)


# lab/figures.md is generated: the list of rendered values and of these
# typed figures, which it quotes; typed_figures.json is that list's source.
UNCHECKED = ("lab/figures.md", "lab/tables/typed_figures.json")


def _pages() -> list[str]:
  """The rendered pages and the table definitions."""
  definitions = sorted(glob.glob(os.path.join(os.path.dirname(LISTED),
                                              "*.json")))
  return [p for p in (*render_tables.rendered_files(), *definitions)
          if os.path.relpath(p, render_tables.ROOT) not in UNCHECKED]


def _blank(m: re.Match) -> str:
  """`m`'s text as blanks, newlines kept (line numbers stay right)."""
  return re.sub(r"[^\n]", " ", m.group(0))


def figures(text: str) -> list[tuple[int, str]]:
  """(line, figure) of every typed figure in a page's `text`."""
  for pattern in (*_RENDERED, _CODE):
    text = pattern.sub(_blank, text)
  cells = [m for row in _TABLE_ROW.finditer(text)
           for m in _DECIMAL.finditer(text, row.start(), row.end())]
  hits, end = [], -1
  # The longest figure at each place: a series' numbers, a ratio's digits
  # or a table cell's are no figures of their own.
  for m in sorted((*FIGURE.finditer(text), *SCORE.finditer(text),
                   *SERIES.finditer(text), *SPAN.finditer(text),
                   *MEASURE.finditer(text), *cells),
                  key=lambda m: (m.start(), -m.end())):
    if m.start() >= end:
      hits.append(m)
      end = m.end()
  return [(text.count("\n", 0, m.start()) + 1, " ".join(m.group(0).split()))
          for m in hits]


def listed() -> dict[str, dict[str, str]]:
  """page -> {figure: why it is typed}."""
  with open(LISTED, encoding="utf-8") as f:
    return json.load(f)["pages"]


def page_figures(path: str) -> list[tuple[int | str, str]]:
  """(where, figure) of every typed figure of the page at `path`: its line,
  or in a notebook, which reads its Markdown cells only (its code is code),
  "cell C, line L"."""
  with open(path, encoding="utf-8") as f:
    if not path.endswith(".ipynb"):
      return figures(f.read())
    cells = json.load(f)["cells"]
  return [(f"cell {c}, line {line}", figure)
          for c, cell in enumerate(cells, 1) if cell["cell_type"] == "markdown"
          for line, figure in figures("".join(cell["source"]))]


def found() -> dict[str, list[tuple[int | str, str]]]:
  out = {}
  for path in _pages():
    hits = page_figures(path)
    if hits:
      out[os.path.relpath(path, render_tables.ROOT)] = hits
  return out


def problems() -> list[str]:
  """Figures typed but not listed, and listed figures no page types."""
  known, seen, out = listed(), found(), []
  for page, hits in seen.items():
    out += [f"{page}:{line}: {figure!r} is typed; render it from its "
            "result file (a value marker), or list it with why in "
            "lab/tables/typed_figures.json"
            for line, figure in hits if figure not in known.get(page, {})]
  for page, entries in known.items():
    typed = {figure for _, figure in seen.get(page, [])}
    out += [f"lab/tables/typed_figures.json: {page} no longer types "
            f"{figure!r}; remove the entry" for figure in entries
            if figure not in typed]
  return out


def main(argv: list[str] | None = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--all", action="store_true",
                      help="print every typed figure, listed or not")
  args = parser.parse_args(argv)
  if args.all:
    known = listed()
    for page, hits in found().items():
      for line, figure in hits:
        why = known.get(page, {}).get(figure, "NOT LISTED")
        print(f"{page}:{line}: {figure}  ({why})")
    return 0
  bad = problems()
  print("\n".join(bad) or "every typed figure is listed", file=sys.stderr)
  return 1 if bad else 0


if __name__ == "__main__":
  sys.exit(main())
