"""Word alignment: eflomal in both directions, grow-diag-final-and.

Links are (e, f) pairs: e indexes the English word, f the foreign word.
eflomal samples with its own unseeded random state, so two runs align a
few words differently; `paraflax pivot` keeps each block's links in its
parts folder so that a rerun reuses them.
"""
from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Sequence

Link = tuple[int, int]
# Moses' neighbourhood: the four sides, then the four diagonals.
_NEIGHBOURS = ((-1, 0), (0, -1), (1, 0), (0, 1),
               (-1, -1), (-1, 1), (1, -1), (1, 1))


def grow_diag_final_and(e2f: Iterable[Link], f2e: Iterable[Link],
                        len_e: int, len_f: int) -> list[Link]:
  """Koehn et al.'s symmetrisation (Moses' `grow-diag-final-and`).

  Starts from the intersection; grows into neighbours of the union while
  one of their words is unaligned, until nothing changes; then adds points
  of each direction whose two words are both still unaligned.
  """
  e2f, f2e = set(e2f), set(f2e)
  union = e2f | f2e
  links = e2f & f2e
  e_done = {e for e, _ in links}
  f_done = {f for _, f in links}

  def add(e: int, f: int) -> None:
    links.add((e, f))
    e_done.add(e)
    f_done.add(f)

  grew = True
  while grew:
    grew = False
    for e in range(len_e):
      for f in range(len_f):
        if (e, f) not in links:
          continue
        for de, df in _NEIGHBOURS:
          point = (e + de, f + df)
          if point in union and point not in links and (
              point[0] not in e_done or point[1] not in f_done):
            add(*point)
            grew = True
  for direction in (e2f, f2e):
    for e in range(len_e):
      for f in range(len_f):
        if (e, f) in direction and e not in e_done and f not in f_done:
          add(e, f)
  return sorted(links)


def parse_links(line: str, *, flip: bool) -> list[Link]:
  """Pharaoh `i-j` links; `flip` turns eflomal's (foreign, English) into
  (English, foreign)."""
  out = []
  for item in line.split():
    i, j = item.split("-")
    out.append((int(j), int(i)) if flip else (int(i), int(j)))
  return out


def align(foreign: Sequence[Sequence[str]], english: Sequence[Sequence[str]],
          *, iterations: float = 1.0) -> list[list[Link]]:
  """Symmetrised (e, f) links of each tokenised sentence pair (eflomal's
  HMM + fertility model, both directions). No side may be empty."""
  import eflomal  # pylint: disable=g-import-not-at-top
  with tempfile.TemporaryDirectory(prefix="paraflax-align-") as tmp:
    fwd, rev = os.path.join(tmp, "fwd"), os.path.join(tmp, "rev")
    aligner = eflomal.Aligner(rel_iterations=iterations)
    aligner.align([" ".join(s) + "\n" for s in foreign],
                  [" ".join(s) + "\n" for s in english],
                  links_filename_fwd=fwd, links_filename_rev=rev)
    with open(fwd, encoding="utf-8") as f_fwd, \
         open(rev, encoding="utf-8") as f_rev:
      pairs = list(zip(f_fwd, f_rev))
  if len(pairs) != len(english):
    raise RuntimeError(f"eflomal returned {len(pairs)} alignments for "
                       f"{len(english)} sentence pairs")
  return [grow_diag_final_and(parse_links(a, flip=True),
                              parse_links(b, flip=True), len(e), len(f))
          for (a, b), e, f in zip(pairs, english, foreign)]
