"""The cost of memory: a rollout worker and a PPO learner with an LSTM or GRU core beside the MLP."""

from __future__ import annotations

from .format import Json, _int, _ratio, _rows, _sentence

ROLLOUT_LABELS = {
    "mlp_numpy": "MLP, NumPy copy (default)",
    "mlp_torch": "MLP, torch",
    "lstm_64": "LSTM 64",
    "gru_64": "GRU 64",
    "lstm_256": "LSTM 256",
    "gru_256": "GRU 256",
}


def recurrent_cost(data: list[Json]) -> str:
    """benchmarks/recurrent_cost.py: agent steps/s of a rollout worker and steps trained/s of a PPO learner."""
    (d,) = data
    envs = list(d["rollout_steps_per_s"])
    header = ["network", *(f"rollout, {e} envs: steps/s" for e in envs), "learner", "learner: steps trained/s"]
    rollout = list(next(iter(d["rollout_steps_per_s"].values())))
    learner = list(d["learner_steps_per_s"])
    rows = []
    for k in range(max(len(rollout), len(learner))):
        cells = []
        if k < len(rollout):
            name = rollout[k]
            cells.append(ROLLOUT_LABELS.get(name, name))
            for e in envs:
                rate, ratio = d["rollout_steps_per_s"][e][name], d["rollout_vs_mlp_torch"][e][name]
                cells.append(f"{_int(rate)} ({_ratio(ratio)})")
        else:
            cells += ["—"] * (1 + len(envs))
        if k < len(learner):
            name = learner[k]
            rate, ratio = d["learner_steps_per_s"][name], d["learner_vs_mlp"][name]
            cells += [name.replace("/", ", ").replace("_", " "), f"{_int(rate)} ({_ratio(ratio)})"]
        else:
            cells += ["—", "—"]
        rows.append(cells)
    return (
        _rows(header, rows)
        + f"\n{_sentence(d['protocol'])}; ratios to the MLP acting in torch (rollout) and to the MLP (learner); "
        f"torch {d['torch']}.\n"
    )

