"""lab/benchmarks/nmt_step_profile.py's accounting: each operation's own
time (its span less what ran nested in it) and the kind it is summed
under, for XLA:CPU's thunks and torch's operations."""
import importlib.util
import sys

import pytest

from tests.conftest import ROOT


@pytest.fixture(name="profile", scope="module")
def _profile():
  sys.path.insert(0, str(ROOT / "lab" / "benchmarks"))
  spec = importlib.util.spec_from_file_location(
      "nmt_step_profile", ROOT / "lab" / "benchmarks" / "nmt_step_profile.py")
  module = importlib.util.module_from_spec(spec)
  sys.modules[spec.name] = module  # its dataclass looks itself up there
  spec.loader.exec_module(module)
  return module


def test_an_operation_s_own_time_leaves_out_what_ran_inside_it(profile):
  events = [{"name": "while.5", "ts": 0, "dur": 100},
            {"name": "dot.1", "ts": 10, "dur": 30},
            {"name": "fusion.2", "ts": 50, "dur": 10},
            {"name": "dot.1", "ts": 120, "dur": 5}]
  own = profile.own_times(events)
  assert own == pytest.approx({"while.5": 60e-6, "dot.1": 35e-6,
                               "fusion.2": 10e-6})


@pytest.mark.parametrize("name,kind", [
    ("dot.31", "products"), ("ynn_fusion.55", "products"),
    ("while.5", "loop"), ("copy_bitcast_fusion.5", "copies"),
    ("bitcast_dynamic-update-slice_fusion.16", "copies"),
    ("add_tanh_fusion.1", "elementwise"), ("wrapped_broadcast.11",
                                           "elementwise"),
    ("gather.3", "gathers"), ("rng-bit-generator.1", "other")])
def test_each_xla_thunk_is_summed_under_its_kind(profile, name, kind):
  assert profile.kind_of(name, profile._OURS) == kind  # pylint: disable=protected-access


@pytest.mark.parametrize("name,kind", [
    ("aten::mm", "products"), ("aten::addmm", "products"),
    ("aten::tanh_backward", "elementwise"), ("aten::copy_", "copies"),
    ("aten::embedding_dense_backward", "gathers"),
    ("Optimizer.step#Adam.step", "optimizer"), ("aten::_log_softmax",
                                                "elementwise")])
def test_each_torch_operation_is_summed_under_its_kind(profile, name, kind):
  assert profile.kind_of(name, profile._TORCH) == kind  # pylint: disable=protected-access


def test_time_outside_every_operation_counts_as_other(profile):
  found = profile.summary(profile.Profile(
      {"dot.1": 0.6, "fusion.2": 0.2}, wall=1.0, steps=2, target_tokens=400,
      unprofiled_step_s=0.45), profile._OURS)  # pylint: disable=protected-access
  assert found["kinds_ms"]["products"] == pytest.approx(300)
  assert found["kinds_ms"]["other"] == pytest.approx(100)
  assert found["kinds_ms_per_1k_target_tokens"]["products"] == \
      pytest.approx(1500)
  assert sum(found["shares"].values()) == pytest.approx(1)


class _Pieces:
  """A sentencepiece model's pieces: <unk>, <s>, </s>, then the rest."""
  pieces = ["<unk>", "<s>", "</s>", "▁the", "\xa0", "s"]

  def get_piece_size(self):
    return len(self.pieces)

  def id_to_piece(self, i):
    return self.pieces[i]

  def is_unknown(self, i):
    return i == 0

  def is_control(self, i):
    return i in (1, 2)


def test_opennmt_gets_every_piece_it_can_list_as_its_vocabularies(
    profile, tmp_path):
  del profile  # puts lab/benchmarks on the path
  import nmt_vs_opennmt  # pylint: disable=import-outside-toplevel
  found = nmt_vs_opennmt.onmt_vocabularies(
      "unused", str(tmp_path), "unused.yaml", _Pieces(), _Pieces(), "all")
  # Its own unknown and boundary tokens stand for sentencepiece's; a piece
  # Python splits as whitespace cannot be listed.
  assert (tmp_path / "vocab.tgt").read_text() == "▁the\t1\ns\t1\n"
  assert found == {"which": "all", "pieces": {"src": 2, "tgt": 2}}
