"""Command-line front ends: ``shoe-controller`` and ``shoe-diag``."""
