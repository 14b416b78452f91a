"""JAX implementations of NeurIPS 2025 papers: pure functions, optax optimizers, flax models.

Subpackages: core, data, optim, quant, flows, pde, continual, alignment,
evaluation, explain, interp, rl, models, train. Import the one you need
(`from lib import optim`); nothing here has import-time side effects.
"""
