"""lib.train.Checkpointer restores into abstract states (ShapeDtypeStructs)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lib import train as train_lib
from lib.core import errors


def test_restore_latest_into_an_abstract_state_with_typed_keys(tmp_path):
  # The documented target: arrays or ShapeDtypeStructs, e.g. eval_shape of
  # the init. A typed key is stored as its key data; the restored keys must
  # be the saved ones.
  state = {
    "w": jnp.arange(4.0),
    "key": jax.random.key(3),
    "keys": jax.random.split(jax.random.key(4), 3),
    "raw": jax.random.PRNGKey(5),
  }
  ckpt = train_lib.Checkpointer(str(tmp_path), keep=1)
  ckpt.save(7, state)
  ckpt.wait()
  step, restored = ckpt.restore_latest(jax.eval_shape(lambda: state))
  ckpt.close()
  assert step == 7
  for name in ("key", "keys"):
    assert restored[name].dtype == state[name].dtype
    np.testing.assert_array_equal(
      jax.random.key_data(restored[name]), jax.random.key_data(state[name])
    )
  np.testing.assert_array_equal(restored["raw"], state["raw"])
  np.testing.assert_array_equal(restored["w"], state["w"])


def test_save_on_a_closed_checkpointer_is_refused(tmp_path):
  # orbax logged tracebacks and wrote nothing; the caller never knew.
  ckpt = train_lib.Checkpointer(str(tmp_path), keep=1)
  ckpt.save(1, {"w": jnp.ones(2)})
  ckpt.close()
  with pytest.raises(
    errors.CheckpointError, match=r"save\(step=2\) on a closed"
  ):
    ckpt.save(2, {"w": jnp.ones(2)})
  assert train_lib.Checkpointer(str(tmp_path), keep=1).all_steps() == [1]
