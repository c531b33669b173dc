"""Every writer claims its output, and no split leaks into another: the
catalogue's classes, each on tiny synthetic data and by calling the
functions the commands call."""
import json

import pytest

from paraflax import files
from paraflax.errors import ConfigError


def test_a_refusal_names_only_the_keys_that_differ(tmp_path):
  output = str(tmp_path / "w")
  first = {"vocab": {"size": 2000, "coverage": 1.0}, "data": {"a": 1, "b": 2},
           "mining": {"dev": "x"}}
  files.claim_output(output, first, overwrite=False)
  (tmp_path / "w").write_text("started\n")
  # The same settings in another key order are the same settings.
  files.claim_output(output, {"mining": {"dev": "x"},
                              "data": {"b": 2, "a": 1},
                              "vocab": {"coverage": 1.0, "size": 2000}},
                     overwrite=False)
  other = json.loads(json.dumps(first))
  other["vocab"]["size"] = 4000
  with pytest.raises(ConfigError) as e:
    files.claim_output(output, other, overwrite=False)
  assert "(differs in vocab.size 2000 -> 4000)" in str(e.value)
