"""Fixed-width text tables, as the evaluations print them: a header line
and one line a row, each column a header, a format spec ("<8", ">9.2f")
and the row's value; a plain string between columns stands on every line."""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence

Column = tuple[str, str, Callable[[dict], object]]


def _width(spec: str) -> str:
  """The alignment and width of a format spec, for its header."""
  return re.match(r"[<>^]?\d*", spec).group(0)


def table(columns: Sequence[Column | str], rows: Sequence[dict]) -> str:
  def line(cell) -> str:
    return "".join(c if isinstance(c, str) else cell(*c) for c in columns)
  lines = [line(lambda head, spec, _: f"{head:{_width(spec)}}")]
  lines += [line(lambda _, spec, value, r=r: f"{value(r):{spec}}")
            for r in rows]
  return "\n".join(lines)


def key(name: str, scale: float = 1) -> Callable[[dict], object]:
  """The row's value under `name`, times `scale` unless 1."""
  return (lambda r: r[name]) if scale == 1 else (lambda r: scale * r[name])
