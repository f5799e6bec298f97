"""The algorithm table without torch: what the config checks need to know about each algorithm.

``raylab.config`` reads it (which Ray topology runs an algorithm, whether it has a replay or a Learner), so
it imports nothing but the standard library. The torch side, how to build each algorithm's policies and
objective, is raylab.builders.algorithms.
"""

from __future__ import annotations

from dataclasses import dataclass

LOCAL_TOPOLOGY = "local"
"""The serial topology runs every algorithm."""


@dataclass(frozen=True)
class AlgorithmInfo:
    name: str
    """What ``algo=`` selects (the ``name`` of its config section, raylab/config/algo.py)."""
    topology: str
    """The Ray topology that runs it (every algorithm also runs in topology=local)."""
    replay: bool = False
    """It learns from a replay buffer (replay.* and checkpoint.replay apply)."""
    no_learner: str | None = None
    """Why it has no Learner (its gradients are applied elsewhere), or None when a Learner trains it."""
    continuous_actions: bool = True
    """It acts in Box action spaces too (a Gaussian policy); False: Discrete only (DQN's Q head)."""


ALGORITHMS: dict[str, AlgorithmInfo] = {
    info.name: info
    for info in (
        AlgorithmInfo("dqn", "apex_dqn", replay=True, continuous_actions=False),
        AlgorithmInfo(
            "a3c",
            "a3c",
            no_learner="its gradients are computed in the workers and applied by the parameter servers",
        ),
        AlgorithmInfo("ppo", "ppo"),
        AlgorithmInfo("appo", "appo"),
    )
}
"""Every algorithm raylab runs, by name."""


def _topology_algos() -> dict[str, tuple[str, ...]]:
    table: dict[str, tuple[str, ...]] = {LOCAL_TOPOLOGY: tuple(ALGORITHMS)}
    for info in ALGORITHMS.values():
        table[info.topology] = (*table.get(info.topology, ()), info.name)
    return table


TOPOLOGY_ALGOS: dict[str, tuple[str, ...]] = _topology_algos()
"""Which algorithms each topology runs: local runs them all, each Ray topology the ones naming it."""
