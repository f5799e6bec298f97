"""The flow the rollout-and-learner topologies share (apex_dqn, ppo, appo): rollout actors and one learner lane
per policy, what they start, load, checkpoint and restore; its jobs are in raylab.topology.jobs."""

from __future__ import annotations

from typing import Any

from raylab.driver.loop import Driver, Flow
from raylab.plan import RolloutPlan
from raylab.topology.inference_polls import InferencePolls
from raylab.topology.jobs import Lane, Rollout, Update
from raylab.types import LearnerStats, RolloutStats


class RolloutFlow(Flow):
    """A flow with rollout actors ``workers`` (clients) and one ``Lane`` per policy."""

    workers: list[Any]
    lanes: list[Lane]

    def __init__(self, plan: RolloutPlan):
        self.plan = plan
        self.policies = plan.policies

    @property
    def version(self) -> int:
        """The oldest lane's version (with one policy: the learner's)."""
        return min(lane.version for lane in self.lanes)

    weights_before_sampling = False
    """Central inference: wait for the inference actors to hold a round's weights before its first sample
    (PPO, on-policy); the asynchronous flows send them and go on."""

    def create(self, driver: Driver) -> dict[str, Any]:
        spawn = driver.backend.spawn
        self.lanes = [Lane(p, spawn(p.learner)) for p in self.policies.plans]
        clients: dict[str, Any] = {"transport": driver.backend.transport, "learner": self.lanes[0].learner}
        self.inference = [spawn(spec.bind(clients)) for spec in self.plan.inference]
        """topology.inference=central: the inference actors, which hold the newest weights instead of the workers."""
        self._sent: Any = None
        """The weights ref last sent to the inference actors."""
        self.polls = InferencePolls(self.inference)
        clients.update({f"inference_{k}": client for k, client in enumerate(self.inference)})
        self.workers = [spawn(spec.bind(clients)) for spec in self.plan.workers]
        return {
            **{lane.actor: lane.learner for lane in self.lanes},
            **{f"rollout_{i}": w for i, w in enumerate(self.workers)},
            **{f"inference_{k}": client for k, client in enumerate(self.inference)},
        }

    def load_learner(self, driver: Driver) -> None:
        """A resumed run's learner states; each lane's ``weights``: its learner's."""
        for lane in self.lanes:
            if lane.plan.resumed is not None:
                lane.version = driver.backend.get(lane.learner.load_state_dict(lane.plan.resumed))
            lane.weights = lane.learner.get_weights()

    def eval_weights(self, driver: Driver) -> list[Any]:
        return self.latest_weights(driver)

    def latest_weights(self, driver: Driver) -> list[Any]:
        return [lane.weights for lane in self.lanes]

    def state(self, driver: Driver) -> dict[str, Any] | None:
        """Every learner's state (None while one restarts: no periodic checkpoint then)."""
        refs = [lane.learner.state_dict() for lane in self.lanes]
        states = []
        for ref in refs:
            try:
                states.append(driver.backend.get(ref))
            except driver.backend.ActorDied:
                return None
        return self.policies.pack(states)

    def final_state(self, driver: Driver) -> dict[str, Any]:
        state = self.policies.pack(driver.backend.get([lane.learner.state_dict() for lane in self.lanes]))
        assert state is not None
        return state

    def restore(self, driver: Driver, lane: Lane) -> None:
        """Ray restarted ``lane``'s learner: it resumes from the latest periodic checkpoint, its versions moving
        on past the one it had (blocks meanwhile, seconds)."""
        state = self.policies.part(driver.monitor.latest_learner_state(), self.lanes.index(lane))
        driver.backend.wait_back(lane.learner, f"the {lane.actor}")
        version, life = driver.backend.get(
            [lane.learner.load_state_dict(state, lane.version + 1), lane.learner.get_life()]
        )
        driver.heard("learner", lane.actor, life)
        lane.version = int(version)
        self.restored(driver, lane)

    def extra(self, driver: Driver, state: dict[str, Any]) -> dict[str, Any]:
        """Several policies: each policy's learner restarts (benchmark_metrics.json's ``policies.<name>``)."""
        if not self.policies.several:
            return {}
        actors = driver.restarts.actors
        restarts = {lane.plan.name: actors[lane.actor].deaths if lane.actor in actors else 0 for lane in self.lanes}
        return {"policies": {name: {"learner_restarts": n} for name, n in restarts.items()}}

    def gauges(self, driver: Driver) -> dict[str, float]:
        return self.polls.gauges(driver)  # central inference's inference/* (none without it)

    def inference_of(self, worker: int, chosen: int | None = None) -> str:
        """The name of the inference actor that acts for worker ``worker`` (central inference): the one it
        reported it ``chosen`` (the first on its machine), else its own."""
        return f"inference_{worker % len(self.inference) if chosen is None else chosen}"

    def sample(self, driver: Driver, worker: int) -> None:
        """Start worker ``worker``'s next chunk (a Rollout job)."""
        raise NotImplementedError

    def arrived(self, driver: Driver, job: Rollout, stats: RolloutStats) -> None:
        raise NotImplementedError

    def on_rollout(self, driver: Driver, stats: RolloutStats) -> None:
        """Count an arrived chunk, each policy's lag against its own learner's version."""
        versions = [lane.version for lane in self.lanes] if self.policies.several else ()
        driver.monitor.on_rollout(stats, self.version, versions)

    def on_learner(self, driver: Driver, lane: Lane, stats: LearnerStats) -> None:
        driver.monitor.on_learner(stats, lane.plan.reports_as)

    def rollout_lost(self, driver: Driver, worker: int) -> None:
        """Worker ``worker`` died with a chunk in flight (it comes back, then samples again)."""

    def trained(self, driver: Driver, job: Update, stats: LearnerStats) -> None:
        raise NotImplementedError

    def restored(self, driver: Driver, lane: Lane) -> None:
        """``lane``'s learner came back from the latest checkpoint at ``lane.version``."""

    def dropped(self, driver: Driver, job: Update) -> None:
        """A learner call whose work is lost (its learner died)."""

    def rollout(self, driver: Driver, worker: int, weights: list[Any]) -> None:
        """Send worker ``worker`` a sample call (``weights[k]``: lane k's ref, or None when the worker has its
        newest); none once the run is stopping."""
        if driver.stopping:
            return
        if self.inference:  # the weights go to the inference actors, once per version; the workers get none
            self.send_inference_weights(driver, weights[0])
            weights = [None]
        *chunks, stats = self.workers[worker].sample(*weights)
        name = f"rollout_{worker}"
        job = Rollout(stats, "rollout", name, driver.restarts.tag(name), flow=self, worker=worker, chunks=chunks)
        driver.submit(job)

    def send_inference_weights(self, driver: Driver, weights: Any) -> None:
        """Hand ``weights`` (a ref; None: unchanged) to every inference actor unless they were the last sent; a
        failed hand-over is left to the actor's restart, which loads the learner's newest weights itself."""
        if weights is None or weights is self._sent:
            return
        first, self._sent = self._sent is None, weights
        acks = [client.set_weights(weights) for client in self.inference]
        if self.weights_before_sampling or first:  # the first: no step acts on older weights (a resumed run's)
            for k, ack in enumerate(acks):
                try:
                    driver.backend.get(ack)
                except driver.backend.ActorDied:
                    driver.backend.wait_back(self.inference[k], f"inference actor {k}")
                    driver.backend.get(self.inference[k].set_weights(weights))

    def update(self, driver: Driver, lane: Lane, *parts: Any) -> Update:
        """A learner call of ``lane`` on ``parts`` (chunks, or a replay's batches), submitted."""
        stats, weights, priorities = lane.learner.update(*parts, env_steps=driver.monitor.progress.env_steps)
        job = Update(stats, "learner", lane.actor, driver.restarts.tag(lane.actor), flow=self, lane=lane,
                     weights=weights, priorities=priorities, drain=True)  # fmt: skip
        driver.submit(job)
        return job
