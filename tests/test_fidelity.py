"""lab/fidelity.md's tables of each paper's settings against the configs
they name: every `key = value` and `key` absent of a table's preset and
default columns, and every `configs/FILE.py[:ARG]: key = value` anywhere
in a table, holds in that config; every preset of configs/papers/ has a
table."""
import ast
import pathlib
import re

import pytest

from paraflax import config as config_lib

ROOT = pathlib.Path(__file__).resolve().parents[1]
FIDELITY = ROOT / "lab" / "fidelity.md"
MARKER = re.compile(r"<!-- fidelity: (\S+) \| (\S+) -->")
HEADER = ["setting", "the paper", "preset", "default", "what it changes"]
SPAN = re.compile(r"`([^`]+)`( absent)?")
ASSIGNMENT = re.compile(r"^([A-Za-z_][\w.]*) = (.+)$")
NAMED = re.compile(r"^(configs/\S+?\.py(?::[^:\s]+)?): ([A-Za-z_][\w.]*) = (.+)$")
_MISSING = object()


def _cells(line: str) -> list[str]:
  assert line.startswith("|") and line.endswith("|"), line
  return [c.strip() for c in line[1:-1].split("|")]


def tables() -> list[tuple[str, str, list[list[str]]]]:
  """(preset, default, rows) of every marked table, in file order."""
  lines = FIDELITY.read_text(encoding="utf-8").splitlines()
  out = []
  for i, line in enumerate(lines):
    m = MARKER.fullmatch(line.strip())
    if not m:
      continue
    assert _cells(lines[i + 1]) == HEADER, lines[i + 1]
    rows, j = [], i + 3
    while j < len(lines) and lines[j].startswith("|"):
      rows.append(_cells(lines[j]))
      assert len(rows[-1]) == len(HEADER), lines[j]
      j += 1
    out.append((m.group(1), m.group(2), rows))
  return out


_LOADED: dict[str, object] = {}


def _config(spec: str):
  if spec not in _LOADED:
    path, _, arg = spec.partition(":")
    _LOADED[spec] = config_lib.load(
        str(ROOT / path) + (f":{arg}" if arg else ""))
  return _LOADED[spec]


def _value(config, key: str):
  value = config
  for part in key.split("."):
    if part not in value:
      return _MISSING
    value = value[part]
  return value


def _same(got, want) -> bool:
  if isinstance(got, (tuple, list)) or isinstance(want, (tuple, list)):
    return isinstance(got, (tuple, list)) and tuple(got) == tuple(want)
  return type(got) is type(want) and got == want or (
      isinstance(got, float) and isinstance(want, float) and got == want)


def claims(preset: str, default: str, rows) -> list[tuple[str, str, object]]:
  """(config spec, key, value or _MISSING for `key` absent) of a table."""
  out = []
  for row in rows:
    for column, cell in enumerate(row):
      for span, absent in SPAN.findall(cell):
        named = NAMED.match(span)
        if named:
          out.append((named.group(1), named.group(2),
                      ast.literal_eval(named.group(3))))
          continue
        if column not in (2, 3):
          continue
        spec = preset if column == 2 else default
        assignment = ASSIGNMENT.match(span)
        if assignment:
          out.append((spec, assignment.group(1),
                      ast.literal_eval(assignment.group(2))))
        elif absent and re.fullmatch(r"[\w.]+", span):
          out.append((spec, span, _MISSING))
  return out


TABLES = tables()


def test_every_paper_preset_has_a_table():
  presets = {p.partition(":")[0] for p, _, _ in TABLES}
  files = {f"configs/papers/{p.name}"
           for p in (ROOT / "configs" / "papers").glob("*.py")
           if p.name != "base.py"}
  assert files <= presets, sorted(files - presets)


@pytest.mark.parametrize("preset, default, rows", TABLES,
                         ids=[t[0] for t in TABLES])
def test_each_table_holds_in_its_configs(preset, default, rows):
  checked = claims(preset, default, rows)
  assert checked, f"{preset}: a table without a `key = value` to check"
  wrong = []
  for spec, key, want in checked:
    got = _value(_config(spec), key)
    if want is _MISSING:
      if got is not _MISSING:
        wrong.append(f"{spec}: {key} is {got!r}, the table says absent")
    elif got is _MISSING or not _same(got, want):
      shown = "absent" if got is _MISSING else repr(got)
      wrong.append(f"{spec}: {key} is {shown}, the table says {want!r}")
  assert not wrong, "\n".join(wrong)


def test_a_wrong_value_or_absence_is_caught():
  rows = [["margin", "0.4", "`loss.margin = 0.5`",
           "`loss.margin` absent", ""]]
  spec = "configs/papers/wieting2017.py:gran"
  checked = claims(spec, "configs/paraphrase.py:gran", rows)
  assert checked == [(spec, "loss.margin", 0.5),
                     ("configs/paraphrase.py:gran", "loss.margin", _MISSING)]
  assert _value(_config(spec), "loss.margin") == 0.4
  assert not _same(1, 1.0) and _same((), ()) and _same(("fr",), ["fr"])
