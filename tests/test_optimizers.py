"""The optimizer block: learning-rate schedules, and the constant one as the
bare Adam whose state saved checkpoints hold."""
import flax.serialization
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax
import pytest

from paraflax import errors
from paraflax.training import optimizers


def _block(**keys) -> ml_collections.ConfigDict:
  return ml_collections.ConfigDict({"learning_rate": 1e-3, **keys})


@pytest.mark.parametrize("keys, rates", [
    # step:                         0     50    100    200     400
    ({"schedule": "linear_decay"}, [1.0, 0.875, 0.75, 0.5, 0.0]),
    ({"schedule": "linear_decay", "end_fraction": 0.1},
     [1.0, 0.8875, 0.775, 0.55, 0.1]),
    ({"schedule": "cosine"}, [1.0, 0.9619, 0.8536, 0.5, 0.0]),
    ({"schedule": "linear_decay", "warmup_steps": 100},
     [0.0, 0.5, 1.0, 2 / 3, 0.0]),
    ({"schedule": "constant", "warmup_steps": 100},
     [0.0, 0.5, 1.0, 1.0, 1.0]),
])
def test_schedule_values(keys, rates):
  rate = optimizers.learning_rate(_block(**keys), train_steps=400)
  got = [float(rate(step)) / 1e-3 for step in (0, 50, 100, 200, 400)]
  np.testing.assert_allclose(got, rates, atol=1e-4)


@pytest.mark.parametrize("keys", [{}, {"schedule": "constant",
                                       "warmup_steps": 0, "end_fraction": 0.0}])
def test_constant_is_the_bare_adam_of_saved_checkpoints(keys):
  params = {"w": jnp.arange(6.0).reshape(2, 3), "b": jnp.ones(3)}
  grads = {"w": jnp.full((2, 3), 0.5), "b": -jnp.ones(3)}
  states = []
  for tx in (optax.adam(1e-3), optimizers.make(_block(**keys), 960)):
    state = tx.init(params)
    updates, state = tx.update(grads, state, params)
    states.append((flax.serialization.to_bytes(state),
                   flax.serialization.to_bytes(updates)))
  assert states[0] == states[1]


def test_a_scheduled_state_counts_its_steps():
  """Where the constant rate holds nothing, a schedule's step count is
  optimizer state: checkpointed, so a resumed run goes on from its step."""
  tx = optimizers.make(_block(schedule="linear_decay"), 960)
  state = tx.init({"w": jnp.zeros(2)})
  for _ in range(3):
    _, state = tx.update({"w": jnp.ones(2)}, state)
  assert isinstance(optax.adam(1e-3).init({"w": jnp.zeros(2)})[1],
                    optax.EmptyState)
  assert isinstance(state[1], optax.ScaleByScheduleState)
  assert int(state[1].count) == 3


@pytest.mark.parametrize("keys, match", [
    ({"schedule": "step"}, "constant, linear_decay, cosine"),
    ({"schedule": "cosine", "warmup_steps": 960}, "warmup_steps=960"),
])
def test_bad_blocks_name_the_fix(keys, match):
  with pytest.raises(errors.ConfigError, match=match):
    optimizers.make(_block(**keys), 960)


def test_kim2019_step_decay_multiplies_by_0_9_every_50k_after_100k():
  block = ml_collections.ConfigDict({
      "name": "sgd", "learning_rate": 1.0, "schedule": "step_decay",
      "decay_start": 100_000, "decay_every": 50_000, "decay_rate": 0.9})
  rate = optimizers.learning_rate(block, train_steps=800_000)
  for step, want in ((0, 1.0), (100_000, 1.0), (149_999, 1.0),
                     (150_000, 0.9), (199_999, 0.9), (200_000, 0.81),
                     (800_000, 0.9**14)):
    np.testing.assert_allclose(float(rate(step)), want, rtol=1e-5)
  # SGD: the update is -rate x gradient, with no state but the count.
  tx = optimizers.make(block, 800_000)
  params = {"w": jnp.ones(3)}
  updates, _ = tx.update({"w": jnp.full(3, 0.5)}, tx.init(params), params)
  np.testing.assert_allclose(updates["w"], -0.5)


@pytest.mark.parametrize("keys, match", [
    ({"name": "adagrad"}, "use one of adam, sgd"),
    ({"schedule": "step_decay"}, "needs optimizer.decay_start"),
    ({"schedule": "step_decay", "decay_start": 0, "decay_every": 0,
      "decay_rate": 0.9}, "decay_every > 0"),
])
def test_bad_optimizer_or_step_decay_names_the_fix(keys, match):
  with pytest.raises(errors.ConfigError, match=match):
    optimizers.make(_block(**keys), 100)
