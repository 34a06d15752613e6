"""Independent numeric paths that cross-check the engine: NumPy float64 and real torch.nn modules."""
