"""Errors that mean 'fix your input or config'; the CLI reports them without
a traceback. Kept free of heavy imports so any command can catch them."""
from paraflax.config import ConfigError
from paraflax.data.readers import DataError


class NoCheckpointError(FileNotFoundError):
  """A workdir has nothing to restore."""


class TrainingDiverged(RuntimeError):
  """Loss or gradient norm became NaN / inf."""


USER_ERRORS = (ConfigError, DataError, NoCheckpointError, TrainingDiverged)
