"""The machine stamp every benchmark JSON carries: the CPU, and whether it computes bf16 natively (the learner's
precision, and so its rates, follow from that)."""

from __future__ import annotations

import json

from docs.tables.format import machine_line
from raylab.bench.machine import machine_info
from raylab.models.precision import native_bf16


def test_the_stamp_names_the_cpu_and_whether_it_computes_bf16_natively():
    info = machine_info()
    assert info["cpu"] and info["cores"] >= 1 and info["torch"]
    assert info["native_bf16"] is native_bf16()
    json.dumps(info)  # plain JSON values


def test_a_tables_machine_line_says_native_bf16_where_the_stamp_does():
    stamp = {"date": "2026-12-02T07:00:00", "cpu": "AMD EPYC", "cores": 2, "python": "3.11.7", "git_commit": "abc1234"}
    assert machine_line({"machine": {**stamp, "native_bf16": True}}).startswith(
        "2026-12-02 07:00, AMD EPYC with native bf16, 2"
    )
    assert machine_line({"machine": stamp}).startswith("2026-12-02 07:00, AMD EPYC, 2 cores, no GPU; Python 3.11.7;")
