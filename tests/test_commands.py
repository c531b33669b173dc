"""The command table: choices match their registries, targets exist, and
`--help` stays free of jax and TensorFlow."""
import importlib
import inspect
import subprocess
import sys

import pytest

from paraflax import choices
from paraflax import cli
from paraflax import commands


def _registry(module: str, name: str):
  names = tuple(getattr(importlib.import_module(module), name))
  # Scores whose resource a flag names (ref_prob) sit beside the registry.
  return names + tuple(getattr(importlib.import_module(module), "OPTIONAL",
                               ()))


@pytest.mark.parametrize("offered, module, name", [
    (choices.STOP_RULES, "paraflax.decoding.beam_search", "STOP_RULES"),
    (choices.MARGINS, "paraflax.mining.margin", "MARGINS"),
    (choices.RETRIEVALS, "paraflax.mining.margin", "STRATEGIES"),
    (choices.KNN_BACKENDS, "paraflax.mining.searches", "BACKENDS"),
    (choices.FAISS_INDEXES, "paraflax.mining.faiss_knn", "INDEXES"),
    (choices.INDEX_METRICS, "paraflax.mining.index_spec", "METRICS"),
    (choices.SIMILARITIES, "paraflax.mining.similarity", "SIMILARITIES"),
    (choices.ALIGN_BASELINES, "paraflax.evaluation.text_baselines",
     "BASELINES"),
    (choices.MLP_NEGATIVES, "paraflax.recipes.mlp_similarity", "NEGATIVES"),
    (choices.MINING_LANGS, "paraflax.evaluation.mining_set", "SIDES"),
    (choices.MINING_SPLITS, "paraflax.evaluation.mining_set", "GOLD_SETS"),
    (choices.PARAPHRASE_SCORES, "paraflax.filtering.scores", "SCORERS"),
    (choices.LM_FORMATS, "paraflax.filtering.lm", "FORMATS"),
    (choices.DOMAINS, "paraflax.evaluation.domain_selection", "DOMAINS"),
    (choices.PIPELINE_STAGES, "paraflax.pipeline.stages", "STAGES"),
])
def test_choices_match_registries(offered, module, name):
  assert sorted(offered) == sorted(_registry(module, name))


@pytest.mark.parametrize("name", sorted(commands.COMMANDS))
def test_every_flag_reaches_its_function(name):
  command = commands.COMMANDS[name]
  module, _, function = command.target.partition(":")
  params = inspect.signature(
      getattr(importlib.import_module(module), function)).parameters
  sub = cli._parser()._subparsers._group_actions[0].choices[name]  # pylint: disable=protected-access
  dests = {a.dest for a in sub._actions if a.dest != "help"  # pylint: disable=protected-access
           and not a.dest.startswith(commands.SETTING)}  # config keys
  takes_any = any(p.kind is p.VAR_KEYWORD for p in params.values())
  assert takes_any or dests <= set(params), dests - set(params)
  required = {n for n, p in params.items() if p.default is p.empty
              and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
  assert required <= dests, required - dests


def test_help_loads_no_framework():
  code = ("import sys\nfrom paraflax import cli\n"
          "for argv in (['--help'], ['mine', '--help'], ['train', '--help']):\n"
          "  try:\n    cli.main(argv)\n  except SystemExit:\n    pass\n"
          "heavy = [m for m in ('jax', 'tensorflow', 'flax', 'seqio')"
          " if m in sys.modules]\nprint('HEAVY', heavy)")
  out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                       text=True, check=True).stdout
  assert "HEAVY []" in out


@pytest.mark.parametrize("name", sorted(commands.COMMANDS))
def test_help_prints_what_the_table_says(name):
  # argparse %-formats argument help but prints a description as written,
  # so "%%" belongs in the one and would show doubled in the other.
  sub = cli._parser()._subparsers._group_actions[0].choices[name]  # pylint: disable=protected-access
  assert "%%" not in sub.format_help()


def test_the_commands_that_train_or_mine_keep_freed_memory():
  """Their XLA:CPU temporaries would page-fault afresh in every step
  (`paraflax.host`); `test_mining_cli` checks that `prepare` runs."""
  keep = {name for name, command in commands.COMMANDS.items()
          if command.prepare == commands.KEEP_FREED_MEMORY}
  assert keep == {"pipeline", "train", "sweep", "mine", "eval-filtering"}
