"""The one wrapper over orbax's CheckpointManager (switching to orbax V1 is a one-file change).

Every process calls `save` and `restore`; orbax coordinates the writes.
"""

import os

import jax
import orbax.checkpoint as ocp


class Checkpointer:
  """Saves and restores a pytree of arrays under `<workdir>/ckpt`, keeping the last K."""

  def __init__(self, workdir: str, *, keep: int):
    self.directory = os.path.abspath(os.path.join(workdir, "ckpt"))
    options = ocp.CheckpointManagerOptions(
      max_to_keep=max(int(keep), 1), create=True
    )
    self._manager = ocp.CheckpointManager(self.directory, options=options)

  def latest_step(self) -> int | None:
    return self._manager.latest_step()

  def restore(self, abstract_state, step: int | None = None):
    """Restores into the structure, dtypes and shardings of `abstract_state`."""
    step = self.latest_step() if step is None else step
    target = jax.tree.map(ocp.utils.to_shape_dtype_struct, abstract_state)
    return self._manager.restore(step, args=ocp.args.StandardRestore(target))

  def restore_latest(self, abstract_state):
    """(step, state) of the newest checkpoint, or (None, None) if there is none.

    Minimal version; the robust one (fallback, timeout) replaces it.
    """
    step = self.latest_step()
    if step is None:
      return None, None
    return step, self.restore(abstract_state, step)

  def save(self, step: int, state) -> None:
    if step in self._manager.all_steps():
      return
    self._manager.save(step, args=ocp.args.StandardSave(state), force=True)

  def wait(self) -> None:
    self._manager.wait_until_finished()

  def close(self) -> None:
    self._manager.wait_until_finished()
    self._manager.close()
