"""The blocks several experiment configs share; not a config itself.

Config files import it as `from configs import common` (the loader,
`paraflax/config.py`, makes `configs` the folder of the file it loads).
"""
import ml_collections

# The bundled bitext with an English side, per language (`paraflax tasks`).
TRAIN_TASKS = {
    "de": ("bitext_multi30k_de_en", "bitext_newstest_pool_de_en",
           "bitext_opennmt_wmt_de_en"),
    "fr": ("bitext_multi30k_fr_en", "bitext_newstest_pool_fr_en"),
    "cs": ("bitext_multi30k_cs_en", "bitext_newstest_pool_cs_en"),
}


def bitext_data(lang: str) -> ml_collections.ConfigDict:
  """The bitext of `lang`-en: for de, fr and cs all of the bundled bitext,
  dev pairs from newstest2013; for any other language none, named by
  --config.data.train=SPEC (one or several) and --config.data.dev=SPEC
  (docs/your-data.md)."""
  bundled = lang in TRAIN_TASKS
  return ml_collections.ConfigDict({
      # Data specs (paraflax/data/specs.py): a catalogued name, tsv:GLOB,
      # lines:SRC_GLOB,EN_GLOB or tfds:NAME/CONFIG[:SPLIT].
      "train": TRAIN_TASKS.get(lang, ()),
      # The dev set every evaluator reads unless it names its own `data`.
      "dev": f"bitext_newstest_dev_{lang}_en:newstest2013" if bundled else "",
      # Pairs of data.dev found in data.train stop the run, unless allowed.
      "allow_dev_overlap": False,
      "max_len": 64,  # subwords incl. EOS
      # Train batches, and the inputs the model decodes or embeds, are
      # padded to a multiple of this: one compiled step (or search) per
      # width. On an accelerator, where a compile takes tens of seconds, 32 (2
      # widths) or max_len (1) trade padding for compiles.
      "width_multiple": 8,
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
