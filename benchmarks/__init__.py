"""The project's benchmarks: scripts run from the repository root, not part of the
distribution. ``python -m benchmarks`` runs them all (see run_all.py)."""
