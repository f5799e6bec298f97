"""The cost of memory: a rollout worker and a PPO learner with an LSTM or GRU core beside the MLP."""

from __future__ import annotations

from .format import Json, _int, _ratio, _rows, _sentence

ROLLOUT_LABELS = {
    "mlp_numpy": "MLP, NumPy copy (default)",
    "mlp_torch": "MLP, torch",
    "lstm_64_numpy": "LSTM 64, NumPy copy (default)",
    "lstm_64_torch": "LSTM 64, torch",
    "gru_64_numpy": "GRU 64, NumPy copy (default)",
    "gru_64_torch": "GRU 64, torch",
    "lstm_256_numpy": "LSTM 256, NumPy copy (default)",
    "lstm_256_torch": "LSTM 256, torch",
}


def recurrent_cost(data: list[Json]) -> str:
    """benchmarks/recurrent_cost.py: agent steps/s of a rollout worker and steps trained/s of a PPO learner,
    each with its ratio to the MLP acting the same way (NumPy or torch) and to the MLP's learner."""
    (d,) = data
    envs = list(d["rollout_steps_per_s"])
    rollout = list(d["rollout_steps_per_s"][envs[0]])
    header = ["rollout worker", *(f"{e} envs: steps/s (÷ MLP)" for e in envs)]
    rows = []
    for name in rollout:
        base = "mlp_numpy" if name.endswith("numpy") else "mlp_torch"
        cells = [ROLLOUT_LABELS.get(name, name)]
        for e in envs:
            rate = d["rollout_steps_per_s"][e][name]
            cells.append(f"{_int(rate)} ({_ratio(rate / d['rollout_steps_per_s'][e][base])})")
        rows.append(cells)
    gflops = d.get("learner_gflops")  # files before it have no weight counts
    learner_rows = [
        [name.replace("/", ", ").replace("_", " "), _int(rate), _ratio(d["learner_vs_mlp"][name])]
        + ([_int(d["learner_weights"][name]), f"{gflops[name]:.1f}"] if gflops else [])
        for name, rate in d["learner_steps_per_s"].items()
    ]
    learner_header = ["PPO learner", "steps trained/s", "÷ MLP"]
    note = ""
    if gflops:
        learner_header += ["weights", "GFLOP/s (≈ 6 × weights × steps/s)"]
        note = (
            " A weight costs about 6 flops per step trained (a multiply-add forward, two backward), so the last "
            "column is the arithmetic the CPU sustained: a small network is bound by per-call overhead, a large "
            "core by arithmetic."
        )
    return (
        _rows(header, rows)
        + "\n"
        + _rows(learner_header, learner_rows)
        + f"\n{_sentence(d['protocol'])}; torch {d['torch']}.{note}\n"
    )
