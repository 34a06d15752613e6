"""Grading: answers files, per-entry marking with carried errors, and mistake diagnosis."""
