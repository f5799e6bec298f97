"""``python -m docs.tables [NAME ...] [--benchmarks DIR]``, from the checkout's root: prints the tables."""

from __future__ import annotations

from . import main

if __name__ == "__main__":
    raise SystemExit(main())
