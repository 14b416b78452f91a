"""Self-contained Pallas kernels; one folder per op (reference, kernels, ops)."""
