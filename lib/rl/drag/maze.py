"""The DRAG U-maze: walls, positions, rendered observations, coverage.

Castanet, Sigaud, Lamprier, "Imagine Beyond! Distributionally Robust
Auto-Encoding for State Space Coverage in Online RL" (NeurIPS 2025, arXiv
2505.17830), the CPU reproduction's environment (spec: extended_papers.md
section 7): a 2-D point in [0, 1)^2 moving in a U-shaped maze, observed as a
16 x 16 image of a Gaussian blob; coverage is counted on the maze's cells.
"""

import jax
import jax.numpy as jnp
import numpy as np

from lib.core import errors

# A U-shaped maze on an 8 x 8 cell grid: a wall from the top down the middle,
# open at the bottom; start in the top-left, the far side is the top-right.
U_MAZE = np.array(
  [
    [0, 0, 0, 1, 1, 0, 0, 0],
    [0, 0, 0, 1, 1, 0, 0, 0],
    [0, 0, 0, 1, 1, 0, 0, 0],
    [0, 0, 0, 1, 1, 0, 0, 0],
    [0, 0, 0, 1, 1, 0, 0, 0],
    [0, 0, 0, 0, 0, 0, 0, 0],
    [0, 0, 0, 0, 0, 0, 0, 0],
    [0, 0, 0, 0, 0, 0, 0, 0],
  ],
  bool,
)


def cell_of(pos, maze=U_MAZE):
  """Cell index (row-major) of positions [..., 2] in [0, 1)^2 (x, y)."""
  h, w = maze.shape
  col = jnp.clip((pos[..., 0] * w).astype(jnp.int32), 0, w - 1)
  row = jnp.clip((pos[..., 1] * h).astype(jnp.int32), 0, h - 1)
  return row * w + col


def is_free(pos, maze=U_MAZE):
  inside = jnp.all((pos >= 0.0) & (pos < 1.0), axis=-1)
  return inside & ~jnp.asarray(maze).ravel()[cell_of(pos, maze)]


def render(pos, pixels: int = 16, width: float = 1.0 / 16):
  """A Gaussian blob image [pixels * pixels] in [0, 1] at the position."""
  c = (jnp.arange(pixels) + 0.5) / pixels
  gx = jnp.exp(-((c - pos[..., 0:1]) ** 2) / (2 * width**2))
  gy = jnp.exp(-((c - pos[..., 1:2]) ** 2) / (2 * width**2))
  img = gy[..., :, None] * gx[..., None, :]
  return img.reshape(pos.shape[:-1] + (pixels * pixels,))


GOAL_DECODINGS = ("argmax", "soft_argmax")


def decode_position(img, pixels: int = 16, mode: str = "argmax"):
  """The position [.., 2] (x, y) an image [.., pixels^2] shows.

  "argmax": the centre of its brightest pixel, whatever the image's
  intensity. "soft_argmax": the mean pixel centre under softmax(20 img), the
  reports' reading up to 2026-12-05: exact for a full-intensity blob, but a
  faint or blurred decoded image (peak 0.25) lets the 255 background pixels
  outweigh the blob, and the position drifts to the image centre (0.5, 0.5),
  a wall cell of the U-maze, pulling imagined goals towards it (most for
  the blurriest decoder).
  """
  errors.check_one_of(mode, GOAL_DECODINGS, "goal decoding")
  c = (jnp.arange(pixels) + 0.5) / pixels
  if mode == "argmax":
    i = jnp.argmax(img, axis=-1)
    return jnp.stack([c[i % pixels], c[i // pixels]], -1)
  p = jax.nn.softmax(20.0 * img, axis=-1).reshape(
    img.shape[:-1] + (pixels, pixels)
  )
  x = jnp.sum(p.sum(-2) * c, -1)
  y = jnp.sum(p.sum(-1) * c, -1)
  return jnp.stack([x, y], -1)


def coverage(cells, maze=U_MAZE, weights=None):
  """(fraction of free cells hit, entropy of the cell histogram) of cells [N]."""
  free = ~jnp.asarray(maze).ravel()
  w = jnp.ones(cells.shape[0]) if weights is None else weights
  hist = jnp.zeros(free.shape[0]).at[cells].add(w)
  hit = jnp.sum((hist > 0) & free) / jnp.sum(free)
  p = hist / jnp.maximum(jnp.sum(hist), 1e-12)
  ent = -jnp.sum(jnp.where(p > 0, p * jnp.log(jnp.where(p > 0, p, 1.0)), 0.0))
  return hit, ent
