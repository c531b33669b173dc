"""Every error paraflax raises on purpose, in one place.

`USER_ERRORS` mean 'fix your input or config': the command line reports
them as one message, without a traceback. Imports no framework, so any
module and the command line can catch them without loading one.
"""
import os


class ConfigError(ValueError):
  """A config key, flag or combination of settings that cannot work."""


class DataError(ValueError):
  """An input file that cannot be used as it is; the message names the file,
  the line and the fix."""


class NoCheckpointError(FileNotFoundError):
  """A workdir has nothing to restore."""


class TrainingDiverged(RuntimeError):
  """Loss or gradient norm became NaN / inf."""


USER_ERRORS = (ConfigError, DataError, NoCheckpointError, TrainingDiverged)


def shown_path(path: str) -> str:
  """`path` as a message names it: relative to the working directory when
  inside it (as the user typed it), else as it is."""
  relative = os.path.relpath(path)
  return path if relative.startswith("..") else relative
