"""`paraflax sweep`: every point of a grid of overrides trained and evaluated
in its own workdir, then one table (JSON, Markdown) and a plot.

A sweep config is a `get_config()` file like any other (configs/sweeps/):

    base      config spec of every point ("configs/paraphrase.py:gran");
              a relative path is read from the paraflax checkout
    settings  base config keys every point sets, as a nested block that
              mirrors the base config (settings.data.max_pairs = 2000)
    overrides "key=value" every point applies before its own (a block's
              whole value, such as evals={...}, which settings would walk)
    points    points listed: each a tuple of "key=value" overrides
    axes      and/or axes, each a tuple of alternatives (a "key=value" or a
              tuple of them): their cross product follows the listed points
    columns   metrics of the table besides the selected one:
              "<evaluator>/<metric>" as logged, or a path into the
              evaluator's details in evals.json
              ("sts_all/semeval_2012_2015/mean_pearson")

A point's "key=value" is applied as `--config.key=value` would be (the same
code: `config.override`), after the settings and the sweep's overrides.
Point k trains in `WORKDIR/<its name>` (`recipes.train`), then runs its
config's evals on the best checkpoint (`inference.evaluate`); `WORKDIR/<name>/sweep_point.json`,
written atomically, marks it finished. A rerun skips finished points; the
train loop resumes an unfinished one from its checkpoint. A finished point
keeps its best checkpoint (for `embed`, `eval-sts`) and drops the states
kept for resuming (a GRAN point's three took 135 of its 180 MB; the
paper's grids, Avg and GRAN, over 7 files took 66 GB with them).

`--worker i --workers n` trains only the points k with k % n == i and writes
no table (hosts would race on it); a run without --worker trains whatever
is left and writes the table, `--report-only` writes it from the finished
points alone.
"""
from __future__ import annotations

import itertools
import json
import logging
import os
import shutil
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import ml_collections

from paraflax import errors
from paraflax import files
# ROOT, Point, grid, point_name, flat_settings, points, mine: sweep's names
# too, as its callers use them.
from paraflax.inference.sweep_grid import ROOT  # pylint: disable=unused-import
from paraflax.inference.sweep_grid import Point
from paraflax.inference.sweep_grid import assignments
from paraflax.inference.sweep_grid import flat_settings  # pylint: disable=unused-import
from paraflax.inference.sweep_grid import grid  # pylint: disable=unused-import
from paraflax.inference.sweep_grid import mine
from paraflax.inference.sweep_grid import point_name
from paraflax.inference.sweep_grid import points

POINT_FILE = "sweep_point.json"  # in a point's workdir: it is finished
RESULTS = "results"  # WORKDIR/results.{json,md,png}


# --- running a point ----------------------------------------------------------


def _numbers(tree: Any, prefix: str) -> Iterator[tuple[str, float]]:
  if isinstance(tree, Mapping):
    for key, value in tree.items():
      yield from _numbers(value, f"{prefix}/{key}")
  elif isinstance(tree, (int, float)) and not isinstance(tree, bool):
    yield prefix, float(tree)


def _record_path(workdir: str, point: Point) -> str:
  return os.path.join(workdir, point.name, POINT_FILE)


def run_point(workdir: str, point: Point) -> dict:
  """Trains (or resumes) and evaluates one point; its record."""
  from paraflax.inference import evaluate  # pylint: disable=g-import-not-at-top
  from paraflax.recipes import train  # pylint: disable=g-import-not-at-top
  folder = os.path.join(workdir, point.name)
  print(f"== sweep point {point.index}: {point.name} "
        f"({' '.join(point.overrides) or 'the base config'})", flush=True)
  train.run(ml_collections.ConfigDict(point.config), folder)  # `points` checked it
  reports = evaluate.evaluate(folder)
  values = dict(itertools.chain.from_iterable(
      _numbers(r.details, name) for name, r in reports.items()))
  values.update({f"{name}/{k}": v for name, r in reports.items()
                 for k, v in r.metrics.items()})
  with open(os.path.join(folder, evaluate.EVALS_FILE), encoding="utf-8") as f:
    step = json.load(f)["checkpoint_step"]
  record = {"name": point.name, "overrides": list(point.overrides),
            "checkpoint_step": step, "select": point.config.select,
            "metrics": dict(sorted(values.items()))}
  files.write_text_atomic(_record_path(workdir, point),
                          json.dumps(record, indent=2) + "\n")
  _drop_resume_states(folder)
  return record


def _drop_resume_states(folder: str) -> None:
  """Removes a finished point's checkpoints for resuming, where its best
  checkpoint exists; also run on points found finished, which a kill may
  have stopped half-way through the removal."""
  from paraflax.training import checkpointing  # pylint: disable=g-import-not-at-top
  if os.path.isdir(os.path.join(folder, checkpointing.BEST)):
    shutil.rmtree(os.path.join(folder, checkpointing.LATEST),
                  ignore_errors=True)


def _read(path: str) -> Any:
  if not os.path.exists(path):
    return None
  with open(path, encoding="utf-8") as f:
    return json.load(f)


def _finished(workdir: str, point: Point) -> dict | None:
  return _read(_record_path(workdir, point))


def _claim(workdir: str, all_points: Sequence[Point], overwrite: bool
           ) -> None:
  """The sweep's points and their configs are recorded beside the results;
  another sweep over the same workdir is refused (`files.claim_output`)."""
  settings = {f"point {p.name}": json.loads(p.config.to_json())
              for p in all_points}
  settings["points"] = [p.name for p in all_points]
  leftovers = [os.path.join(workdir, p.name) for p in all_points]
  leftovers += [os.path.join(workdir, f"{RESULTS}.{ext}")
                for ext in ("md", "png")]
  if os.path.isdir(workdir):  # folders of points this sweep no longer has
    leftovers += [e.path for e in os.scandir(workdir)
                  if e.is_dir() and e.path not in leftovers]
  output = os.path.join(workdir, RESULTS + ".json")
  try:
    # Not locked: the workers of one sweep share it (each point's own
    # workdir is what one of them trains).
    files.claim_output(output, settings, overwrite=overwrite,
                       leftovers=leftovers, lock=False)
  except errors.ConfigError:
    # Workers started together: another may have claimed the workdir and
    # made its first point between our reading the record and our look.
    if _read(files.settings_path(output)) != json.loads(json.dumps(settings)):
      raise


# --- the table ----------------------------------------------------------------


def _row(point: Point, record: dict | None, columns: Sequence[str],
         failure: str | None) -> dict:
  row = {"name": point.name, "overrides": list(point.overrides)}
  if record is None:
    return {**row, "status": f"failed: {failure}" if failure
            else "not finished"}
  metrics = record["metrics"]
  return {**row, "status": "finished",
          "checkpoint_step": record["checkpoint_step"],
          "select": record["select"],
          "selected": metrics.get(record["select"]),
          "columns": {c: metrics.get(c) for c in columns},
          "metrics": metrics}


def _cell(value: float | None) -> str:
  return "-" if value is None else f"{100 * value:.2f}"


def markdown(rows: Sequence[dict], columns: Sequence[str]) -> str:
  """One row per point; metrics x 100."""
  select = next((r["select"] for r in rows if "select" in r), "selected")
  head = ["point", "overrides", "step", f"{select} (dev, selects)",
          *columns]
  lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
  for r in rows:
    shown = "<br>".join(f"`{o}`" for o in r["overrides"]) or "(base)"
    if r["status"] != "finished":
      # A failure's message is one cell of the table.
      status = r["status"].replace("|", "\\|").replace("\n", " ")
      cells = [status] + ["-"] * (len(head) - 3)
    else:
      cells = [str(r["checkpoint_step"]), _cell(r["selected"]),
               *(_cell(r["columns"][c]) for c in columns)]
    lines.append("| " + " | ".join([r["name"], shown, *cells]) + " |")
  return "\n".join(lines) + "\n"


def plot(path: str, rows: Sequence[dict],
         sweep: ml_collections.ConfigDict) -> None:
  """The selected metric of every finished point: bars for listed points,
  and per axis a line over its alternatives for each setting of the
  others."""
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  from matplotlib import pyplot as plt  # pylint: disable=g-import-not-at-top
  axes = [[assignments(a) for a in axis] for axis in sweep.axes]
  score = {tuple(r["overrides"]): r.get("selected") for r in rows}
  listed = [r for r in rows[:len(sweep.points)]
            if r.get("selected") is not None]
  panels = (1 if listed or not axes else 0) + len(axes)
  fig, subplots = plt.subplots(1, panels, figsize=(max(6, 0.5 * len(rows) + 3)
                                                   * panels ** 0.5, 4),
                               squeeze=False)
  subplots = list(subplots[0])
  if listed or not axes:
    ax = subplots.pop(0)
    ax.bar(range(len(listed)), [100 * r["selected"] for r in listed])
    ax.set_xticks(range(len(listed)), [r["name"] for r in listed],
                  rotation=60, ha="right", fontsize=7)
    ax.set_ylabel(f"{rows[0].get('select', 'selected')} x 100")
  for i, (axis, ax) in enumerate(zip(axes, subplots)):
    others = [a for j, a in enumerate(axes) if j != i]
    for rest in itertools.product(*others):
      ys = []
      for alternative in axis:
        combo = list(rest)
        combo.insert(i, alternative)
        value = score.get(sum(combo, ()))
        ys.append(float("nan") if value is None else 100 * value)
      ax.plot(range(len(axis)), ys, marker="o",
              label=point_name(sum(rest, ())) if rest else None)
    ax.set_xticks(range(len(axis)), [point_name(a) for a in axis],
                  rotation=60, ha="right", fontsize=7)
    keys = sorted({o.partition("=")[0] for a in axis for o in a})
    ax.set_title(f"axis {i}: {', '.join(keys)}", fontsize=8)
    if others:
      ax.legend(fontsize=6)
  fig.tight_layout()
  with files.atomic_output(path, "wb") as f:
    fig.savefig(f, format="png", dpi=100)
  plt.close(fig)


def report(workdir: str, sweep: ml_collections.ConfigDict,
           all_points: Sequence[Point],
           failures: Mapping[str, str] | None = None) -> list[dict]:
  """Writes WORKDIR/results.{json,md,png} from the finished points."""
  columns = list(sweep.columns)
  rows = [_row(p, _finished(workdir, p), columns, (failures or {}).get(p.name))
          for p in all_points]
  table = {"base": sweep.base, "columns": columns, "points": rows}
  base = os.path.join(workdir, RESULTS)
  files.write_text_atomic(base + ".json", json.dumps(table, indent=2) + "\n")
  files.write_text_atomic(base + ".md", markdown(rows, columns))
  plot(base + ".png", rows, sweep)
  done = sum(r["status"] == "finished" for r in rows)
  print(f"{done} of {len(rows)} points finished; table in {base}.md, plot "
        f"in {base}.png", flush=True)
  return rows


# --- the command --------------------------------------------------------------


def sweep(config: ml_collections.ConfigDict, workdir: str,
          worker: int | None = None, workers: int = 1, dry_run: bool = False,
          report_only: bool = False, overwrite: bool = False) -> list[dict]:
  """`paraflax sweep`: trains and evaluates this worker's unfinished points
  of the sweep config `config`; without --worker, writes the table."""
  all_points = points(config)
  todo = mine(all_points, worker, workers)
  if dry_run:
    for p in todo:
      print(f"{p.index}\t{os.path.join(workdir, p.name)}\t"
            f"{' '.join(p.overrides) or '(base)'}")
    return []
  _claim(workdir, all_points, overwrite)
  failures: dict[str, str] = {}
  for p in ([] if report_only else todo):
    if _finished(workdir, p) is not None:
      print(f"== sweep point {p.index}: {p.name} finished before", flush=True)
      _drop_resume_states(os.path.join(workdir, p.name))
      continue
    try:
      run_point(workdir, p)
    except errors.USER_ERRORS as e:  # the other points still run
      logging.error("sweep point %s failed: %s", p.name, e)
      failures[p.name] = str(e)
  rows = [] if worker is not None else report(workdir, config, all_points,
                                               failures)
  if failures:
    raise errors.ConfigError(
        f"{len(failures)} sweep point(s) failed ({', '.join(failures)}); "
        f"see {os.path.join(workdir, RESULTS)}.md. Fix them and rerun: the "
        "finished points are kept.")
  return rows
