"""The one driver loop (raylab.driver.loop) on an in-process backend whose refs are already resolved: jobs
are settled by their own done/failed, the evaluation actor restarts like any other, and the one restart
policy (topology.max_actor_restarts) holds for every actor. No Ray."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from raylab.builders.plans import build_plan
from raylab.driver.loop import Call, Driver, Flow
from raylab.driver.monitor import RunMonitor
from raylab.driver.placement import RestartWatch
from raylab.envs.registry import env_spaces
from raylab.errors import RaylabError
from raylab.types import EvalResult, Weights
from tests.conftest import FAKE, make_config, metrics_rows


class Died(Exception):
    """The fake backend's actor death."""


@dataclass(eq=False)
class Ref:
    value: Any = None
    error: BaseException | None = None
    pending: bool = False
    """Never ready (an actor Ray cannot place again)."""


class Actor:
    """An actor whose next calls die as scripted (``deaths``: how many of its next calls fail); each death
    starts a new life, as a Ray restart does."""

    def __init__(self, deaths: int = 0):
        self.deaths, self.life_now = deaths, 0

    def call(self, value: Any) -> Ref:
        if self.deaths:
            self.deaths -= 1
            self.life_now += 1
            return Ref(error=Died("the actor died unexpectedly"))
        return Ref(value)

    def get_life(self) -> Ref:
        return Ref(self.life_now)

    def ready(self) -> Ref:
        return Ref(True)


class Evaluator(Actor):
    """Scores ``mean`` once the rollout actor has answered a call (weights version >= 1: every scripted death
    of it is behind), 0 before, so that the target cannot end a run before the deaths it checks."""

    def __init__(self, deaths: int, mean: float):
        super().__init__(deaths)
        self.mean, self.versions = mean, []

    def evaluate(self, episodes: int, target: float | None, confirm: int, *weights: Ref) -> Ref:
        version = weights[0].value.version
        self.versions.append(version)
        score = self.mean if version >= 1 else 0.0
        return self.call(EvalResult(version, np.full(episodes, score), np.ones(episodes)))


class Backend:
    ActorDied = Died

    def __init__(self, evaluator: Evaluator):
        self._evaluator = evaluator

    def run(self, demands: Any, body: Any) -> Any:
        return body()

    cpus = 64.0

    def nodes(self) -> list[dict[str, float]]:
        return [{"CPU": self.cpus}]

    def spawn(self, spec: Any) -> Evaluator:  # the driver spawns only the evaluator itself
        return self._evaluator

    def wait(self, refs: list[Ref], timeout: float, every: bool = False, fetch: bool = True) -> list[Ref]:
        return [ref for ref in refs if not ref.pending]

    def called_died(self, err: BaseException) -> bool:
        return False

    def get(self, ref: Ref | list[Ref]) -> Any:
        if isinstance(ref, list):
            return [self.get(r) for r in ref]
        if ref.error is not None:
            raise ref.error
        return ref.value

    def put(self, value: Any) -> Ref:
        return Ref(value)

    def death_of(self, err: BaseException, client: Any) -> bool:
        return True

    def wait_ready(self, clients: list[Any], what: str) -> None:
        pass

    def placement(self, clients: dict[str, Any]) -> dict[str, str]:
        return {name: "node-0" for name in clients}

    def peak_memory_bytes(self, clients: list[Any]) -> int:
        return 0


@dataclass
class Tick(Call):
    flow: Counter

    def done(self, driver: Driver, value: int) -> None:
        driver.heard(self.kind, self.name, self.flow.worker.life_now)
        self.flow.done += 1

    def failed(self, driver: Driver, err: BaseException) -> None:
        driver.lost(self.kind, self.name, self.tag, err)
        self.flow.down = True  # called again once it is back, as a rollout actor is
        driver.when_back(self.flow.worker, self.kind, self.name, lambda: setattr(self.flow, "down", False))


class Counter(Flow):
    """One rollout actor answering calls one at a time; its weights' version is the calls done."""

    def __init__(self, deaths: int):
        self.worker, self.done, self.down = Actor(deaths), 0, False

    def create(self, driver: Driver) -> dict[str, Any]:
        return {"rollout_0": self.worker}

    def step(self, driver: Driver) -> None:
        if not self.down and not driver.in_flight(Tick):
            tag = driver.restarts.tag("rollout_0")
            driver.submit(Tick(self.worker.call(1), "rollout", "rollout_0", tag, flow=self, drain=True))

    def weights(self) -> Weights:
        return Weights(self.done, {"w": np.zeros(2, np.float32)})

    def eval_weights(self, driver: Driver) -> list[Ref]:
        return [Ref(self.weights())]

    def latest_weights(self, driver: Driver) -> list[Ref]:
        return [Ref(self.weights())]

    def state(self, driver: Driver) -> dict[str, Any] | None:
        return {"done": self.done}

    def final_state(self, driver: Driver) -> dict[str, Any]:
        return {"done": self.done}

    def extra(self, driver: Driver, state: dict[str, Any]) -> dict[str, Any]:
        return {"counter": state}


def drive(tmp_path: Path, deaths: int, eval_deaths: int, *overrides: str) -> tuple[Any, Counter, Evaluator]:
    """A run of ``Counter`` whose actor dies on its first ``deaths`` calls, the evaluator on its first
    ``eval_deaths``; every evaluation returns 10 (the target is 5)."""
    cfg = make_config(
        tmp_path, *FAKE, "topology=apex_dqn", "stop.mean_return=5", "stop.seconds=60", "eval.every_seconds=0.05",
        "eval.episodes=2", "eval.final_episodes=3", "logger.report_every_seconds=0.1", *overrides,
    )  # fmt: skip
    flow, evaluator = Counter(deaths), Evaluator(eval_deaths, mean=10.0)
    spaces = env_spaces(cfg.env)

    def open_monitor(beside_checkpoints: Any) -> RunMonitor:
        return RunMonitor(cfg, spaces, replay_snapshot=beside_checkpoints)

    summary = Driver(build_plan(cfg, spaces), flow, Backend(evaluator), open_monitor).run()
    return summary, flow, evaluator


def test_jobs_settle_themselves_and_a_dead_evaluator_comes_back(tmp_path):
    summary, flow, evaluator = drive(tmp_path, 2, 1)
    assert summary.stop_reason.startswith("eval return 10.0 >= stop.mean_return=5"), summary.stop_reason
    restarts = summary.benchmark["restarts"]
    assert restarts["restarts/rollout"] == 2 and restarts["restarts/eval"] == 1
    assert summary.eval_return_mean == 10.0 and summary.benchmark["eval"]["episodes"] == 3  # the final evaluation
    # the evaluations: one lost to its death, then the one that met the target, then the final ones: the
    # weights that met it (best.pt, the result) and the newest (final.pt), another version
    bm = summary.benchmark
    best, newest = bm["best"]["version"], bm["eval_newest"]["policy_version"]
    assert bm["best"]["met_target"] and bm["eval"]["policy_version"] == best < newest
    assert evaluator.versions[-3] == best and sorted(evaluator.versions[-2:]) == [best, newest]
    assert bm["eval_newest"]["episodes"] == 3
    assert summary.benchmark["counter"] == {"done": flow.done} and flow.done >= 1
    assert summary.benchmark["placement"]["actors"] == {"rollout_0": "node-0", "eval": "node-0"}
    rows = metrics_rows(summary.run_dir)
    assert rows[-1]["restarts/rollout"] == 2
    # the loop's rows hold the driver's wait; the last (after the loop) only if the loop went round since
    assert all("timing/driver/wait_s" in row for row in rows[:-1]) and any("timing/driver/wait_s" in r for r in rows)


def test_max_actor_restarts_0_ends_the_run_at_the_first_crash_in_one_line(tmp_path):
    with pytest.raises(RaylabError) as err:
        drive(tmp_path, 1, 0, "topology.max_actor_restarts=0")
    message = str(err.value)
    assert "\n" not in message and message.startswith("rollout_0 died (the actor died unexpectedly)")
    assert "topology.max_actor_restarts=0" in message


@pytest.mark.parametrize("who", ["rollout_0", "eval"])
def test_max_actor_restarts_n_allows_n_deaths_per_actor(who, tmp_path):
    def deaths(n: int) -> tuple[int, int]:
        return (n, 0) if who == "rollout_0" else (0, n)

    summary, _, _ = drive(tmp_path / "two", *deaths(2), "topology.max_actor_restarts=2")
    kind = "rollout" if who == "rollout_0" else "eval"
    assert summary.benchmark["restarts"][f"restarts/{kind}"] == 2
    with pytest.raises(RaylabError) as err:
        drive(tmp_path / "three", *deaths(3), "topology.max_actor_restarts=2")
    assert str(err.value).startswith(
        f"{who} died 3 times (last: the actor died unexpectedly), more than topology.max_actor_restarts=2"
    )


class Stranded(Actor):
    """An actor whose node leaves the cluster with it: its first call fails, and it never comes back."""

    def __init__(self, backend: Backend):
        super().__init__(deaths=1)
        self.backend = backend

    def call(self, value: Any) -> Ref:
        self.backend.cpus = 0.5  # the node left: the cluster cannot hold the run any more
        return super().call(value)

    def get_life(self) -> Ref:
        return Ref(pending=True)


def test_an_actor_the_cluster_can_no_longer_hold_ends_the_run_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(RestartWatch, "GRACE_S", 1.0)
    cfg = make_config(
        tmp_path, *FAKE, "topology=apex_dqn", "stop.seconds=120", "eval.every_seconds=null",
        "logger.report_every_seconds=0.1",
    )  # fmt: skip
    backend = Backend(Evaluator(0, mean=10.0))
    flow = Counter(0)
    flow.worker = Stranded(backend)

    def open_monitor(beside_checkpoints: Any) -> RunMonitor:
        return RunMonitor(cfg, env_spaces(cfg.env), replay_snapshot=beside_checkpoints)

    start = time.monotonic()
    with pytest.raises(RaylabError) as err:
        Driver(build_plan(cfg, env_spaces(cfg.env)), flow, backend, open_monitor).run()
    message = str(err.value)
    assert "\n" not in message and time.monotonic() - start < 60
    assert re.match(r"rollout_0 has waited \d+ s to restart, and the cluster can no longer hold the run", message)
    assert "the Ray cluster has 0.5" in message and "resume=<run dir>" in message
