"""Config files: the experiments they name, the loader, and flags that set
config keys."""
import copy
import dataclasses
import json
import pathlib
import sys

import pytest

from paraflax import cli
from paraflax import commands
from paraflax import config as config_lib
from paraflax import errors
from paraflax.mining import pipeline

ROOT = pathlib.Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "configs"

# Every experiment's ConfigDict.to_dict() as the files made it before they
# moved into configs/ (commit 10f0ab8: configs/nmt_de_en.py and the builders
# in paraflax/recipes/*_config.py). A saved workdir's config.json must still
# match on resume (recipes/workdir.py: check_same_experiment).
BEFORE = \
{'avg': {'batch_size': 100,
         'checkpoint': {'every': 400, 'keep': 3},
         'data': {'max_len': 40,
                  'split': 'train',
                  'task': 'paraphrase_en_human',
                  'vocab_max_size': 0,
                  'vocab_min_count': 1},
         'eval': {'select': 'STSb.dev-tuning', 'sets': ('STSb.dev-tuning',)},
         'eval_every': 400,
         'log_every': 40,
         'loss': {'lambda_c': 0.0,
                  'lambda_w': 0.0,
                  'margin': 0.4,
                  'sampling': 'max',
                  'scramble': 0.0},
         'megabatch': 40,
         'mesh': {'num_devices': -1},
         'model': {'name': 'avg', 'word_dim': 300, 'word_vectors': ''},
         'optimizer': {'learning_rate': 0.001},
         'partitioning': {'rules': (('.*', 'replicate'),)},
         'recipe': 'paraphrase',
         'seed': 0,
         'train_steps': 2000},
 'bilingual:cs': {'batch_size': 32,
                  'checkpoint': {'every': 500, 'keep': 3},
                  'data': {'dev_split': 'newstest2013',
                           'dev_task': 'bitext_newstest_dev_cs_en',
                           'max_len': 64,
                           'mono_tasks': (),
                           'too_long': 'skip',
                           'train_tasks': ('bitext_multi30k_cs_en',
                                           'bitext_newstest_pool_cs_en')},
                  'direction': 'xx_en',
                  'eval': {'batch_size': 100, 'sentences': 1000},
                  'eval_every': 500,
                  'lang': 'cs',
                  'log_every': 50,
                  'loss': {'label_smoothing': 0.0},
                  'mesh': {'num_devices': -1},
                  'model': {'feed_embedding': True,
                            'hidden': 256,
                            'word_dim': 256},
                  'optimizer': {'clip_norm': 1.0, 'learning_rate': 0.001},
                  'partitioning': {'rules': (('.*', 'replicate'),)},
                  'recipe': 'bilingual',
                  'seed': 0,
                  'train_steps': 2000,
                  'vocab': {'joint': True,
                            'model_type': 'unigram',
                            'size': 8000},
                  'word_vectors': {'cs': '', 'en': ''}},
 'bilingual:de': {'batch_size': 32,
                  'checkpoint': {'every': 500, 'keep': 3},
                  'data': {'dev_split': 'newstest2013',
                           'dev_task': 'bitext_newstest_dev_de_en',
                           'max_len': 64,
                           'mono_tasks': (),
                           'too_long': 'skip',
                           'train_tasks': ('bitext_multi30k_de_en',
                                           'bitext_newstest_pool_de_en',
                                           'bitext_opennmt_wmt_de_en')},
                  'direction': 'xx_en',
                  'eval': {'batch_size': 100, 'sentences': 1000},
                  'eval_every': 500,
                  'lang': 'de',
                  'log_every': 50,
                  'loss': {'label_smoothing': 0.0},
                  'mesh': {'num_devices': -1},
                  'model': {'feed_embedding': True,
                            'hidden': 256,
                            'word_dim': 256},
                  'optimizer': {'clip_norm': 1.0, 'learning_rate': 0.001},
                  'partitioning': {'rules': (('.*', 'replicate'),)},
                  'recipe': 'bilingual',
                  'seed': 0,
                  'train_steps': 2000,
                  'vocab': {'joint': True,
                            'model_type': 'unigram',
                            'size': 8000},
                  'word_vectors': {'de': '', 'en': ''}},
 'bilingual:fr': {'batch_size': 32,
                  'checkpoint': {'every': 500, 'keep': 3},
                  'data': {'dev_split': 'newstest2013',
                           'dev_task': 'bitext_newstest_dev_fr_en',
                           'max_len': 64,
                           'mono_tasks': (),
                           'too_long': 'skip',
                           'train_tasks': ('bitext_multi30k_fr_en',
                                           'bitext_newstest_pool_fr_en')},
                  'direction': 'xx_en',
                  'eval': {'batch_size': 100, 'sentences': 1000},
                  'eval_every': 500,
                  'lang': 'fr',
                  'log_every': 50,
                  'loss': {'label_smoothing': 0.0},
                  'mesh': {'num_devices': -1},
                  'model': {'feed_embedding': True,
                            'hidden': 256,
                            'word_dim': 256},
                  'optimizer': {'clip_norm': 1.0, 'learning_rate': 0.001},
                  'partitioning': {'rules': (('.*', 'replicate'),)},
                  'recipe': 'bilingual',
                  'seed': 0,
                  'train_steps': 2000,
                  'vocab': {'joint': True,
                            'model_type': 'unigram',
                            'size': 8000},
                  'word_vectors': {'en': '', 'fr': ''}},
 'gran': {'batch_size': 100,
          'checkpoint': {'every': 160, 'keep': 3},
          'data': {'max_len': 40,
                   'split': 'train',
                   'task': 'paraphrase_en_human',
                   'vocab_max_size': 0,
                   'vocab_min_count': 1},
          'eval': {'select': 'STSb.dev-tuning', 'sets': ('STSb.dev-tuning',)},
          'eval_every': 160,
          'log_every': 40,
          'loss': {'lambda_c': 0.0,
                   'lambda_w': 0.0,
                   'margin': 0.4,
                   'sampling': 'max',
                   'scramble': 0.0},
          'megabatch': 40,
          'mesh': {'num_devices': -1},
          'model': {'hidden': 300,
                    'name': 'gran',
                    'word_dim': 300,
                    'word_vectors': ''},
          'optimizer': {'learning_rate': 0.001},
          'partitioning': {'rules': (('.*', 'replicate'),)},
          'recipe': 'paraphrase',
          'seed': 0,
          'train_steps': 480},
 'lstmavg': {'batch_size': 100,
             'checkpoint': {'every': 160, 'keep': 3},
             'data': {'max_len': 40,
                      'split': 'train',
                      'task': 'paraphrase_en_human',
                      'vocab_max_size': 0,
                      'vocab_min_count': 1},
             'eval': {'select': 'STSb.dev-tuning',
                      'sets': ('STSb.dev-tuning',)},
             'eval_every': 160,
             'log_every': 40,
             'loss': {'lambda_c': 0.0,
                      'lambda_w': 0.0,
                      'margin': 0.4,
                      'sampling': 'max',
                      'scramble': 0.0},
             'megabatch': 40,
             'mesh': {'num_devices': -1},
             'model': {'hidden': 300,
                       'name': 'lstmavg',
                       'word_dim': 300,
                       'word_vectors': ''},
             'optimizer': {'learning_rate': 0.001},
             'partitioning': {'rules': (('.*', 'replicate'),)},
             'recipe': 'paraphrase',
             'seed': 0,
             'train_steps': 480},
 'nmt:cs': {'batch_size': 64,
            'checkpoint': {'every': 500, 'keep': 3},
            'data': {'dev_split': 'newstest2013',
                     'dev_task': 'bitext_newstest_dev_cs_en',
                     'max_len': 64,
                     'too_long': 'skip',
                     'train_tasks': ('bitext_multi30k_cs_en',
                                     'bitext_newstest_pool_cs_en')},
            'decode': {'alpha': 0.6, 'max_output': 100},
            'eval': {'beam': 4, 'sentences': 500},
            'eval_every': 1000,
            'log_every': 100,
            'loss': {'label_smoothing': 0.1},
            'mesh': {'num_devices': -1},
            'model': {'attention_dim': 256,
                      'cell': 'gru',
                      'emb_dim': 256,
                      'hidden': 256},
            'optimizer': {'clip_norm': 1.0, 'learning_rate': 0.001},
            'partitioning': {'rules': (('.*', 'replicate'),)},
            'recipe': 'nmt',
            'seed': 0,
            'train_steps': 6000,
            'vocab': {'joint': True, 'model_type': 'unigram', 'size': 8000}},
 'nmt:de': {'batch_size': 64,
            'checkpoint': {'every': 500, 'keep': 3},
            'data': {'dev_split': 'newstest2013',
                     'dev_task': 'bitext_newstest_dev_de_en',
                     'max_len': 64,
                     'too_long': 'skip',
                     'train_tasks': ('bitext_multi30k_de_en',
                                     'bitext_newstest_pool_de_en',
                                     'bitext_opennmt_wmt_de_en')},
            'decode': {'alpha': 0.6, 'max_output': 100},
            'eval': {'beam': 4, 'sentences': 500},
            'eval_every': 1000,
            'log_every': 100,
            'loss': {'label_smoothing': 0.1},
            'mesh': {'num_devices': -1},
            'model': {'attention_dim': 256,
                      'cell': 'gru',
                      'emb_dim': 256,
                      'hidden': 256},
            'optimizer': {'clip_norm': 1.0, 'learning_rate': 0.001},
            'partitioning': {'rules': (('.*', 'replicate'),)},
            'recipe': 'nmt',
            'seed': 0,
            'train_steps': 6000,
            'vocab': {'joint': True, 'model_type': 'unigram', 'size': 8000}},
 'nmt:fr': {'batch_size': 64,
            'checkpoint': {'every': 500, 'keep': 3},
            'data': {'dev_split': 'newstest2013',
                     'dev_task': 'bitext_newstest_dev_fr_en',
                     'max_len': 64,
                     'too_long': 'skip',
                     'train_tasks': ('bitext_multi30k_fr_en',
                                     'bitext_newstest_pool_fr_en')},
            'decode': {'alpha': 0.6, 'max_output': 100},
            'eval': {'beam': 4, 'sentences': 500},
            'eval_every': 1000,
            'log_every': 100,
            'loss': {'label_smoothing': 0.1},
            'mesh': {'num_devices': -1},
            'model': {'attention_dim': 256,
                      'cell': 'gru',
                      'emb_dim': 256,
                      'hidden': 256},
            'optimizer': {'clip_norm': 1.0, 'learning_rate': 0.001},
            'partitioning': {'rules': (('.*', 'replicate'),)},
            'recipe': 'nmt',
            'seed': 0,
            'train_steps': 6000,
            'vocab': {'joint': True, 'model_type': 'unigram', 'size': 8000}}}


def _spec(name: str) -> str:
  family, _, arg = name.partition(":")
  return f"{CONFIGS / family}.py" + (f":{arg}" if arg else "")


def _typed(value):
  """The value with its types spelt out, so that 1 != 1.0, (1,) != [1]."""
  if isinstance(value, dict):
    return {k: _typed(v) for k, v in value.items()}
  if isinstance(value, (tuple, list)):
    return type(value).__name__, [_typed(v) for v in value]
  return type(value).__name__, value


# What changed on purpose since BEFORE, per experiment: (block, key, value
# now; docs/changelog.md). Input feeding is the NMT default.
_OPENNMT = (("model", "input_feeding", True), ("model", "bridge", "final"),
            ("loss", "normalize", "sentences"))
# Input feeding; batches sorted by the longer side.
CHANGED = {name: _OPENNMT[:1] + (("data", "sort_by", "longer"),)
           for name in ("nmt:cs", "nmt:de", "nmt:fr")}
# Dev pairs found in the training data stop a run unless allowed.
for _name in ("nmt:cs", "nmt:de", "nmt:fr", "bilingual:cs", "bilingual:de",
              "bilingual:fr"):
  CHANGED[_name] = (*CHANGED.get(_name, ()),
                    ("data", "allow_dev_overlap", False))
# The quick-start GRAN starts from PPDB word vectors, keeps their
# words and mixes PPDB's pairs in at 5 %; configs/paraphrase.py:gran is the
# experiment of before.
CHANGED["gran"] = (("data", "task", ""),
                   ("data", "mixture", (("paraphrase_en_human", 0.95),
                                        ("paraphrase_en_ppdb_lexical", 0.05))),
                   ("data", "vocab_from_vectors", True),
                   ("loss", "scramble", 0.3),
                   # The margin (docs/paraphrase-embeddings.md).
                   ("loss", "margin", 0.8),
                   ("model", "word_vectors",
                    "runs/ppdb_words/word_vectors.txt"))


# How many length groups an encoder step sorts its sentences
# into; the same numbers, so a workdir of before resumes with the new value.
LENGTH_GROUPS = {"gran": 8, "lstmavg": 8}
# The quick-start GRAN trains longer (1,280 updates of 50 pairs).
TRAIN_STEPS = {"gran": 1280}
# Its batches of 50, evaluated every 320 updates; keys at the config's top, named so by `check_same_experiment`.
TOP_LEVEL = {"gran": (("batch_size", 50), ("eval_every", 320))}
# NMT outputs stop at 1.5 x the source's subwords + 10; a workdir
# of before decodes without (0) and may change it on resume.
OUTPUT_RATIO = {name: 1.5 for name in ("nmt:cs", "nmt:de", "nmt:fr")}


def _checkpointed(workdir) -> None:
  """A committed checkpoint's folder: the workdir holds a run to resume
  (without one, another config replaces the start)."""
  (workdir / "checkpoints" / "8").mkdir(parents=True)


@pytest.mark.parametrize("name", sorted(BEFORE))
def test_the_experiments_are_unchanged(name, tmp_path):
  """The same experiments, with their `eval` block as evaluators, but for
  the CHANGED keys; a workdir of before resumes with those keys set back."""
  from paraflax.recipes import workdir  # pylint: disable=g-import-not-at-top
  config = config_lib.load(_spec(name))
  then = copy.deepcopy(workdir.upgrade(BEFORE[name]))  # BEFORE stays
  for block, key, now in CHANGED.get(name, ()):
    assert config[block][key] == now and then[block][key] != now
    then[block][key] = now
  for key, now in TOP_LEVEL.get(name, ()):
    assert config[key] == now and then[key] != now
    then[key] = now
  if name in TRAIN_STEPS:
    assert config.train_steps == TRAIN_STEPS[name] != then["train_steps"]
    config.train_steps = then["train_steps"]  # may change on resume
  if name in OUTPUT_RATIO:
    assert then["decode"]["max_output_ratio"] == 0.0
    assert config.decode.max_output_ratio == OUTPUT_RATIO[name]
    config.decode.max_output_ratio = 0.0  # as the old config.json has it
  if name in LENGTH_GROUPS:
    assert then["length_groups"] == 1
    assert config.length_groups == LENGTH_GROUPS[name]
    config.length_groups = 1  # as the resumed run's config.json has it
  assert _typed(config.to_dict()) == _typed(then)
  (tmp_path / workdir.CONFIG_FILE).write_text(json.dumps(BEFORE[name]))
  _checkpointed(tmp_path)
  if name in CHANGED:
    keys = ", ".join(sorted({block for block, _, _ in CHANGED[name]} |
                            {key for key, _ in TOP_LEVEL.get(name, ())}))
    with pytest.raises(errors.ConfigError, match=f"differs in: {keys}"):
      workdir.check_same_experiment(str(tmp_path), config)
    before = workdir.upgrade(BEFORE[name])
    for block, key, _ in CHANGED[name]:
      config[block][key] = before[block][key]
    for key, _ in TOP_LEVEL.get(name, ()):
      config[key] = before[key]
  workdir.check_same_experiment(str(tmp_path), config)  # resumes
  assert (json.loads(workdir.read_config(str(tmp_path)).to_json())
          == json.loads(config.to_json()))


def test_the_family_file_is_the_named_experiment():
  for encoder in ("avg", "lstmavg", "gran"):
    family = config_lib.load(_spec(f"paraphrase:{encoder}"))
    for block, key, now in CHANGED.get(encoder, ()):
      family[block][key] = now
    for key, now in TOP_LEVEL.get(encoder, ()):
      family[key] = now
    family.train_steps = TRAIN_STEPS.get(encoder, family.train_steps)
    assert family == config_lib.load(_spec(encoder))


@pytest.mark.parametrize("recipe", ["nmt", "bilingual"])
def test_any_language_loads_and_names_no_data(recipe, tmp_path, capsys):
  config = config_lib.load(_spec(f"{recipe}:ru"))
  assert config.lang == "ru" and config.data.train == () and \
      config.data.dev == ""
  code = cli.main(["train", "--config", _spec(f"{recipe}:ru"), "--workdir",
                   str(tmp_path / "w")])
  assert code == cli.EXIT_BAD_INPUT
  assert "data.train names no bitext" in capsys.readouterr().err
  assert not (tmp_path / "w").exists()


def test_a_missing_or_extra_argument_says_how_to_pass_it():
  with pytest.raises(errors.ConfigError,
                     match=r"nmt\.py: get_config needs its lang: pass "
                     r"--config .*nmt\.py:<lang>"):
    config_lib.load(_spec("nmt"))
  with pytest.raises(errors.ConfigError, match=r"gran\.py takes no argument"):
    config_lib.load(_spec("gran:de"))


@pytest.mark.parametrize("body, line, message", [
    ("def get_config(:\n  pass\n", 3, "SyntaxError"),
    ("import ml_collections\n\n\ndef get_config():\n  return {}['lr']\n", 7,
     "KeyError: 'lr'"),
    ("from configs import nothing_here\n", 3, "ImportError"),
])
def test_a_broken_config_names_its_file_and_line(tmp_path, body, line,
                                                   message):
  path = tmp_path / "broken.py"
  path.write_text('"""A broken config."""\n\n' + body)
  with pytest.raises(errors.ConfigError) as e:
    config_lib.load(str(path))
  assert f"broken.py:{line}: {message}" in str(e.value)


def test_shared_pieces_come_from_the_loaded_files_folder(tmp_path):
  (tmp_path / "common.py").write_text("STEPS = 7\n")
  (tmp_path / "mine.py").write_text(
      "import ml_collections\nfrom configs import common\n\n\n"
      "def get_config(arg=None):\n"
      "  return ml_collections.ConfigDict({'steps': common.STEPS, "
      "'arg': arg})\n")
  assert config_lib.load(str(tmp_path / "mine.py:x")).to_dict() == {
      "steps": 7, "arg": "x"}
  # The repo's configs/common.py again, and nothing left behind.
  assert config_lib.load(_spec("nmt:de")).data.max_len == 64
  assert not [m for m in sys.modules if m.split(".")[0] == "configs"]


def test_the_mine_config_mirrors_its_options():
  config = config_lib.load(_spec("mine"))
  assert config_lib.fields_of(pipeline.Options, config) == pipeline.Options()
  assert sorted(config.keys()) == sorted(
      f.name for f in dataclasses.fields(pipeline.Options))


@pytest.mark.parametrize("name", [n for n, c in commands.COMMANDS.items()
                                  if isinstance(c.config, str)])
def test_every_setting_flag_is_a_key_of_the_default_config(name):
  command = commands.COMMANDS[name]
  config = config_lib.load(str(ROOT / command.config))
  keys = [kw["dest"][len(commands.SETTING):] for _, kw in command.flags
          if kw.get("dest", "").startswith(commands.SETTING)]
  assert keys

  def has(node, dotted: str) -> bool:  # nested keys: "pivot.max_phrase_len"
    head, _, rest = dotted.partition(".")
    return head in node and (not rest or has(node[head], rest))

  assert all(has(config, k) for k in keys), keys


SEEN = {}


def _record(**kwargs):
  SEEN.clear()
  SEEN.update(kwargs)


@pytest.mark.parametrize("argv, expected", [
    (["mine", "--output", "o"], {"k": 4, "dedup": None, "threshold": None}),
    (["mine", "--output", "o", "--config.k=7", "--config.nprobe=3", "--k",
      "9", "--no-dedup", "--threshold", "1.5", "--config.nlist=5"],
     {"k": 9, "nprobe": 3, "dedup": False, "threshold": 1.5, "nlist": 5,
      "margin": "ratio"}),
    (["mine", "--output", "o", "--config.dedup=true",
      "--config.threshold=0.9"], {"dedup": True, "threshold": 0.9}),
    (["train-mlp", "--workdir", "w", "--config.epochs=5", "--epochs", "3",
      "--config.hidden=64"], {"epochs": 3, "hidden": 64, "seed": 0}),
])
def test_a_flag_wins_over_an_override_which_wins_over_the_file(
    monkeypatch, tmp_path, argv, expected):
  command = commands.COMMANDS[argv[0]]
  monkeypatch.setitem(commands.COMMANDS, argv[0], dataclasses.replace(
      command, target=f"{__name__}:_record"))
  monkeypatch.chdir(tmp_path)  # the default config is found from anywhere
  assert cli.main(argv) == 0
  config = SEEN["config"]
  assert {k: config[k] for k in expected} == expected
  assert not [k for k in SEEN if k.startswith(commands.SETTING)]


def test_a_bad_value_for_an_unset_key_is_named(capsys):
  code = cli.main(["mine", "--output", "o", "--config.threshold=high"])
  assert code == cli.EXIT_BAD_INPUT
  assert "--config.threshold=high: not a value for threshold" in (
      capsys.readouterr().err)


def test_mine_takes_another_config_file(monkeypatch, tmp_path):
  path = tmp_path / "mine_k8.py"
  path.write_text((CONFIGS / "mine.py").read_text().replace(
      "c.k = 4", "c.k = 8"))
  monkeypatch.setitem(commands.COMMANDS, "mine", dataclasses.replace(
      commands.COMMANDS["mine"], target=f"{__name__}:_record"))
  assert cli.main(["mine", "--config", str(path), "--output", "o"]) == 0
  assert SEEN["config"].k == 8


def test_a_config_saved_before_the_opennmt_keys_resumes(tmp_path):
  """A config.json written with evaluators but before model.input_feeding,
  model.bridge and loss.normalize is the same experiment."""
  from paraflax.recipes import workdir  # pylint: disable=g-import-not-at-top
  config = config_lib.load(_spec("nmt:de"))
  config.model.input_feeding, config.model.bridge = False, "mean_tanh"
  config.loss.normalize = "tokens"  # what ran before the keys existed
  saved = json.loads(config.to_json())
  for block, key, _ in _OPENNMT:
    del saved[block][key]
  assert workdir.upgrade(saved) == json.loads(config.to_json())
  (tmp_path / workdir.CONFIG_FILE).write_text(json.dumps(saved))
  _checkpointed(tmp_path)
  workdir.check_same_experiment(str(tmp_path), config)
  config.model.input_feeding = True
  with pytest.raises(errors.ConfigError, match="differs in: model"):
    workdir.check_same_experiment(str(tmp_path), config)


def test_a_run_may_change_how_it_decodes_on_resume(tmp_path):
  """A workdir of before the output limit per source length
  keeps it off; a resumed run may set it, or any decode key, and then
  decodes (evaluates, translates) with the new settings."""
  from paraflax.recipes import workdir  # pylint: disable=g-import-not-at-top
  config = config_lib.load(_spec("nmt:de"))
  saved = json.loads(config.to_json())
  del saved["decode"]["max_output_ratio"], saved["decode"]["max_output_plus"]
  (tmp_path / workdir.CONFIG_FILE).write_text(json.dumps(saved))
  _checkpointed(tmp_path)
  old = workdir.read_config(str(tmp_path)).decode
  assert (old.max_output_ratio, old.max_output_plus) == (0.0, 10)
  config.decode.max_output, config.decode.alpha = 50, 1.0
  workdir.check_same_experiment(str(tmp_path), config)  # ratio 1.5 too
  config.batch_size = 32
  with pytest.raises(errors.ConfigError, match=(
      "differs in: batch_size.*only train_steps, length_groups, decode "
      "may change")):
    workdir.check_same_experiment(str(tmp_path), config)


def test_a_paraphrase_config_saved_before_the_filter_keys_resumes(tmp_path):
  """A config.json written before data.filter and data.max_pairs
  and the optimizer's schedule is the same experiment: no
  filter, every pair, a constant rate."""
  from paraflax.recipes import workdir  # pylint: disable=g-import-not-at-top
  config = config_lib.load(_spec("gran"))
  saved = json.loads(config.to_json())
  del saved["data"]["filter"], saved["data"]["max_pairs"]
  saved["optimizer"] = {"learning_rate": config.optimizer.learning_rate}
  assert workdir.upgrade(saved) == json.loads(config.to_json())
  (tmp_path / workdir.CONFIG_FILE).write_text(json.dumps(saved))
  _checkpointed(tmp_path)
  workdir.check_same_experiment(str(tmp_path), config)
  config.data.max_pairs = 100
  with pytest.raises(errors.ConfigError, match="differs in: data"):
    workdir.check_same_experiment(str(tmp_path), config)
  config.data.max_pairs = 0
  config.optimizer.schedule = "cosine"
  with pytest.raises(errors.ConfigError, match="differs in: optimizer"):
    workdir.check_same_experiment(str(tmp_path), config)
