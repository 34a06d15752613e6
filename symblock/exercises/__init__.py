"""Exercises: constrained random variants, presets (which steps a sheet asks), IDs, stress tests."""
