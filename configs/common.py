"""The blocks several experiment configs share; not a config itself.

Config files import it as `from configs import common` (the loader,
`paraflax/config.py`, makes `configs` the folder of the file it loads).
"""
import ml_collections

# Bitext with an English side, per language (see `paraflax tasks`).
TRAIN_TASKS = {
    "de": ("bitext_multi30k_de_en", "bitext_newstest_pool_de_en",
           "bitext_opennmt_wmt_de_en"),
    "fr": ("bitext_multi30k_fr_en", "bitext_newstest_pool_fr_en"),
    "cs": ("bitext_multi30k_cs_en", "bitext_newstest_pool_cs_en"),
}


def bitext_data(lang: str) -> ml_collections.ConfigDict:
  """All shared bitext of `lang`-en; dev pairs from newstest2013."""
  if lang not in TRAIN_TASKS:
    raise ValueError(f"no bitext for {lang!r}-en: the language is one of "
                     f"{', '.join(TRAIN_TASKS)}.")
  return ml_collections.ConfigDict({
      "train_tasks": TRAIN_TASKS[lang],
      "dev_task": f"bitext_newstest_dev_{lang}_en",
      "dev_split": "newstest2013",
      "max_len": 64,  # subwords incl. EOS
      "too_long": "skip",  # skip | truncate | error (pairs over max_len)
  })


def loop(*, eval_every: int, log_every: int, checkpoint_every: int,
         keep: int = 3) -> dict:
  """The keys the one train loop reads, to `update` a config with."""
  return {
      "eval_every": eval_every,  # steps; evaluation picks the best/ copy
      "log_every": log_every,
      "checkpoint": ml_collections.ConfigDict(
          {"every": checkpoint_every, "keep": keep}),
      # -1: every visible device on the `data` axis.
      "mesh": ml_collections.ConfigDict({"num_devices": -1}),
      # (regex, tactic) over parameter paths; or ((".*", "fsdp"),).
      "partitioning": ml_collections.ConfigDict(
          {"rules": ((".*", "replicate"),)}),
  }
