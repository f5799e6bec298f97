"""Benchmarks: ``python -m raylab.bench <command>``. Each writes a JSON (with the machine it ran on) and a PNG."""
