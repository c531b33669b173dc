"""Paraphrastic sentence embeddings, NMT and bitext mining in JAX/Flax.

The public API (`__all__`, documented in `paraflax.api` and the README's
"Python" section):

    model = paraflax.load(workdir)      # .embed, .translate, .score_pairs
    paraflax.train(config, workdir)
    paraflax.mine(x, y, k=4, margin="ratio", retrieval="max")
    table = paraflax.sweep_results(workdir)  # `paraflax sweep`'s results
    paraflax.paraphrases(table, "disease", n=5)  # a pivot table's best

Names are imported on first use, so `import paraflax` is quick and loads
neither TensorFlow nor jax.
"""
import importlib

# name -> the module that defines it
_API = {name: f"paraflax.api.{module}" for module, names in (
    ("model", ("Model", "load", "train")),
    ("mining", ("mine", "candidates", "best_threshold", "mining_benchmark")),
    ("data", ("tasks", "task", "examples", "data_dir", "fetch_data")),
    ("results", ("sweep_results", "domain_results", "ppdb_results",
                 "paraphrases")),
) for name in names}
_API.update({name: "paraflax.errors" for name in (
    "ConfigError", "DataError", "NoCheckpointError")})
_API.update({"MARGINS": "paraflax.choices", "RETRIEVALS": "paraflax.choices",
             "SIMILARITIES": "paraflax.choices"})

__all__ = sorted(_API)


def __getattr__(name: str):
  if name not in _API:
    raise AttributeError(f"module 'paraflax' has no attribute {name!r}")
  value = getattr(importlib.import_module(_API[name]), name)
  globals()[name] = value  # later lookups skip __getattr__
  return value


def __dir__() -> list[str]:
  return sorted(set(globals()) | set(_API))
