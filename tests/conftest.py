"""Hypothesis profiles: no per-example deadline (exact arithmetic and torch start-up vary with the
machine's load), and in CI (CI=true) a derandomized run, so a landing never depends on luck."""
import os

from hypothesis import HealthCheck, settings

settings.register_profile("dev", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", parent=settings.get_profile("dev"), derandomize=True)
settings.load_profile("ci" if os.environ.get("CI") else "dev")
