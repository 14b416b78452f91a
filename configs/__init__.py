"""Experiment configs: `get_config(arg)` per experiment; pure data, no jax."""
