"""Optimizers as optax GradientTransformations (NamedTuple states)."""

from lib.optim.sign import sign_gd
