"""Timing, throughput and the loggers (console, metrics.jsonl, W&B)."""
