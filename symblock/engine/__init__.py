"""The exact engine: numbers, matrices, the step vocabulary, specs, and the block forward."""
