"""Benchmarks, each run as `python -m bench.<name>` from the repository root (docs/benchmarks.md)."""
