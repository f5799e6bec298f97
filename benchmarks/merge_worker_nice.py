"""Merge the alternating `bench scaling --workers 16` runs with params.worker_nice=0 and =10 into one JSON.

    for r in 0 1 2; do for nice in 0 10; do
      python -m raylab.bench scaling +experiment=snake_a3c params.worker_nice=$nice --workers 16 --in-flight 1 \\
          --repeats 1 --checkpoint CKPT --output RUNS/nice${nice}_r$r.json
    done; done
    python benchmarks/merge_worker_nice.py RUNS     # writes benchmarks/a3c_worker_nice.json
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path


def main(runs: Path) -> int:
    variants: dict[str, list[dict]] = {}
    machine = None
    for path in sorted(runs.glob("nice*_r*.json")):
        report = json.loads(path.read_text())
        machine = report["machine"]
        nice = path.stem.split("_")[0].removeprefix("nice")
        variants.setdefault(f"worker_nice={nice}", []).extend(report["rows"])
    summary = {}
    for name, rows in variants.items():
        summary[name] = {
            key: statistics.median(r[key] for r in rows)
            for key in ("total_s", "wait_s", "wait_share", "apply_s", "server_queue_s", "lag_mean")
        } | {"rows": len(rows)}
        print(name, json.dumps({k: round(v, 3) for k, v in summary[name].items()}))
    out = Path(__file__).with_name("a3c_worker_nice.json")
    report = {"benchmark": "a3c_worker_nice", "workers": 16, "machine": machine, "summary": summary, "runs": variants}
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
