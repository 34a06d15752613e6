"""Calculus on the trace: exact gradients, symbolic derivations, parameter counts."""
