"""`paraflax cache-task`: seqio's own Beam caching (`seqio.scripts.
cache_tasks_main.run_pipeline`) of a filtered paraphrase Task
(`backtranslated:SCORED` with a filter and a number of pairs).

The cache holds what the Task's preprocessors up to its
`CacheDatasetPlaceholder` make (the pairs the filter keeps and the draw
picks, each numbered: `tasks.POSITION`), as seqio writes it: TFRecord
shards of shuffled examples, info and stats JSON, COMPLETED. A train
config reads it with `data.cache_dir` (`tasks.examples`, which puts the
examples back in the Task's order). The Task is registered in this
process, so the runner's workers must run this process's code: the
DirectRunner, or a runner given the same paraflax and the same SCORED
path (docs/filtering.md, "Scoring on Apache Beam").
"""
from __future__ import annotations

import re
import sys
from collections.abc import Sequence

from paraflax import errors


def cache_task(task: str, output: str, filter: str | None = None,
               max_pairs: int = 0, seed: int = 0,
               runner: str = "DirectRunner",
               pipeline_options: Sequence[str] = (), shards: int = 8,
               overwrite: bool = False) -> str:
  """Writes seqio's cache of `task` (backtranslated:PATH, filtered by
  `filter` as `data.filter` and `max_pairs`, `seed`) into the folder
  `output`; returns the Task's cache folder. A Task already cached there
  is left alone unless `overwrite`."""
  # pylint: disable=g-import-not-at-top
  import apache_beam as beam
  from absl import flags
  from apache_beam.options.pipeline_options import PipelineOptions
  from paraflax.data import filters
  from paraflax.data import tasks
  import seqio
  from seqio.scripts import cache_tasks_main
  # pylint: enable=g-import-not-at-top
  if not task.startswith(tasks.BACKTRANSLATED):
    raise errors.ConfigError(
        f"--task {task}: cache-task caches the paraphrase Tasks of scored "
        f"back-translations; give {tasks.BACKTRANSLATED}SCORED.jsonl.")
  if shards < 1:
    raise errors.ConfigError(f"--shards {shards}: give 1 or more.")
  name = tasks.register_backtranslated(
      task[len(tasks.BACKTRANSLATED):], filters.from_flag(filter), max_pairs,
      seed)
  # run_pipeline reads seqio's own flags: the shard count, no extra seed.
  flags.FLAGS(["cache-task", f"--min_shards={shards}",
               f"--max_shards={shards}"], known_only=True)
  seqio.add_global_cache_dirs([output])
  options = PipelineOptions(["--runner", runner, *pipeline_options])
  with beam.Pipeline(options=options) as pipeline:
    folders = cache_tasks_main.run_pipeline(
        pipeline, [re.escape(name)], output, overwrite=overwrite,
        ignore_other_caches=False)
  found = seqio.TaskRegistry.get(name).cache_dir
  print(f"{task} (data.filter {filter or 'None'}, data.max_pairs "
        f"{max_pairs}, seed {seed}) is Task {name}: "
        + (f"cached into {folders[0]} ({runner})" if folders else
           f"already cached in {found}; --overwrite recaches it"),
        file=sys.stderr)
  return found
