"""Which config keys apply to which algorithm, model and topology: one table, and the one check that reads it.

A key not listed here applies to every run. A listed key set to a value other than its default where it does
not apply is refused in one line naming the key, what it applies to and the fix; left at its default it is
fine, so a section every run composes (``replay``, ``params``, ``learner``) never gets in the way. The table
is the docs' too: ``python -m docs.tables`` writes it into docs/configuration.md (``markdown_table``).

Keys a shared option sets for every algorithm stay out of the table: debug=smoke shrinks replay.capacity,
replay.min_size and the learner's batch_size, updates_per_call and publish_every for every run, whichever
algorithm it trains; and the experiments set model.hidden_sizes, which a custom network (model=custom)
leaves to its factory, so swapping in one's own network is not refused. No torch here: ``raylab.config``
imports this module.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from raylab.config.algorithms import ALGORITHMS, TOPOLOGY_ALGOS
from raylab.errors import ConfigError

if TYPE_CHECKING:
    from raylab.config.schema import RunConfig

BUILT_IN_MODELS = ("mlp", "nature_cnn", "impala_cnn")
"""The networks raylab builds itself (``model.encoder``); model=custom is the user's ``model.factory``."""
MODELS = (*BUILT_IN_MODELS, "custom")
"""Every ``model=`` option (the value of ``model.encoder``)."""
TOPOLOGIES = tuple(TOPOLOGY_ALGOS)
"""Every ``topology=`` option (the value of ``topology.name``)."""

REPLAY = tuple(name for name, info in ALGORITHMS.items() if info.replay)
LEARNER = tuple(name for name, info in ALGORITHMS.items() if info.no_learner is None)
NO_LEARNER = tuple(name for name, info in ALGORITHMS.items() if info.no_learner is not None)
ACTOR_CRITIC = tuple(name for name, info in ALGORITHMS.items() if info.continuous_actions)
Q_HEAD = tuple(name for name, info in ALGORITHMS.items() if not info.continuous_actions)


@dataclass(frozen=True)
class Scope:
    """The options of one dimension (algo, model or topology) that a key applies to, and why."""

    names: tuple[str, ...]
    why: str
    """What the key acts on there, shown in parentheses: e.g. ``its Q head``."""


@dataclass(frozen=True)
class Applies:
    """One row of the table: a key (``section.field``) and where it applies (None: every option of that
    dimension)."""

    key: str
    algo: Scope | None = None
    model: Scope | None = None
    topology: Scope | None = None
    fix: str = "remove it"
    """What the refusal tells the user to do."""

    def scopes(self) -> dict[str, Scope]:
        found = {"algo": self.algo, "model": self.model, "topology": self.topology}
        return {dim: scope for dim, scope in found.items() if scope is not None}


def _learner_option(name: str) -> Applies:
    return Applies(f"learner.{name}", algo=Scope(LEARNER, "a Learner steps their optimizer"))


def _replay_option(name: str) -> Applies:
    return Applies(f"replay.{name}", algo=Scope(REPLAY, "its replay buffer"))


def _params_option(name: str) -> Applies:
    return Applies(f"params.{name}", algo=Scope(NO_LEARNER, "its parameter server"))


REPLAY_OPTIONS = (
    "kind", "num_shards", "alpha", "beta", "beta_final", "beta_anneal_env_steps", "priority_eps", "frame_dedup",
    "samples_per_insert", "error_buffer",
)  # fmt: skip
"""The replay keys in the table: all but capacity and min_size, which debug=smoke sets for every algorithm."""

_BUILT_IN = "the networks raylab builds; a custom module owns its own"

TABLE: tuple[Applies, ...] = (
    Applies(
        "model.dueling",
        algo=Scope(Q_HEAD, "its Q head"),
        model=Scope(BUILT_IN_MODELS, _BUILT_IN),
    ),
    Applies(
        "model.normalize_obs",
        algo=Scope(tuple(a for a in LEARNER if a in ACTOR_CRITIC), "their learner owns the statistics"),
        model=Scope(BUILT_IN_MODELS, _BUILT_IN),
    ),
    Applies("model.log_std_init", algo=Scope(ACTOR_CRITIC, "their Gaussian policy for Box actions")),
    Applies(
        "model.init",
        algo=Scope(ACTOR_CRITIC, "their policy and value heads"),
        model=Scope(BUILT_IN_MODELS, _BUILT_IN),
    ),
    # every algorithm has a recurrent form (the actor-critics: BPTT over chunks; dqn: R2D2's sequence replay)
    Applies("model.recurrent", model=Scope(BUILT_IN_MODELS, _BUILT_IN)),
    Applies("model.recurrent_size", model=Scope(BUILT_IN_MODELS, _BUILT_IN)),
    Applies("model.norm", model=Scope(("nature_cnn",), "BatchNorm after its convolutions")),
    Applies("model.conv_channels", model=Scope(("nature_cnn",), "the widths of its three convolutions")),
    Applies(
        "model.rollout_precision",
        algo=Scope(LEARNER, "their rollout actors act with a copy of the learner's network"),
        model=Scope(("nature_cnn", "impala_cnn"), "their convolutions; an MLP acts through its NumPy copy"),
    ),
    Applies(
        "model.factory", model=Scope(("custom",), "it builds the whole network"), fix="remove it, or add model=custom"
    ),
    Applies("model.options", model=Scope(("custom",), "keyword arguments for model.factory")),
    Applies("topology.chunks_in_flight", topology=Scope(("appo",), "its actors queue sample calls")),
    Applies("learner.publish_every_calls", algo=Scope(("appo",), "its actors act on whichever weights they hold")),
    Applies("learner.average_rate", algo=Scope(("dqn",), "the Ape-X flow evaluates its learner's average")),
    *(
        _learner_option(name)
        # compile_mode before compile: a compile_mode needs compile=true, and the refusal names the first
        for name in ("precision", "compile_mode", "compile", "grad_accumulation", "prefetch", "tf32", "fused")
    ),
    Applies("learner.lr", algo=Scope(LEARNER, "their Learner's Adam"), fix="set algo.lr instead"),
    # lr_final before lr_schedule: an lr_final needs lr_schedule=linear, and the refusal names the first
    Applies("learner.lr_final", algo=Scope(LEARNER, "their Learner's Adam")),
    Applies("learner.lr_schedule", algo=Scope(LEARNER, "their Learner's Adam")),
    Applies("learner.adam_eps", algo=Scope(LEARNER, "their Learner's Adam"), fix="set algo.rmsprop_eps instead"),
    Applies(
        "learner.max_grad_norm", algo=Scope(LEARNER, "their Learner's clipping"), fix="set algo.max_grad_norm instead"
    ),
    *(_replay_option(name) for name in REPLAY_OPTIONS),
    *(_params_option(name) for name in ("num_shards", "pushes_in_flight", "shard_cpus", "worker_nice")),
    Applies("checkpoint.replay", algo=Scope(REPLAY, "it snapshots the replay buffer")),
    Applies(
        "eval.greedy",
        algo=Scope(ACTOR_CRITIC, "sampling from their policy"),
        fix="remove it, or set algo.epsilon.eval instead",
    ),
)
"""Every key that applies to some algorithms, models or topologies only."""

ENTRIES: dict[str, Applies] = {entry.key: entry for entry in TABLE}


@functools.cache
def default(key: str) -> Any:
    """The dataclass default of ``key`` (``section.field`` of RunConfig)."""
    from raylab.config.schema import RunConfig

    return value(RunConfig(), key)


def value(run: RunConfig, key: str) -> Any:
    section, name = key.split(".")
    return getattr(getattr(run, section), name)


def chosen(run: RunConfig) -> dict[str, str]:
    """The run's option in each dimension the table names."""
    return {"algo": run.algo.name, "model": run.model.encoder, "topology": run.topology.name}


def applies(entry: Applies, options: dict[str, str]) -> bool:
    """Whether ``entry``'s key applies with these options (dimension -> option)."""
    return all(options[dim] in scope.names for dim, scope in entry.scopes().items())


def refusal(entry: Applies, run: RunConfig, where: str = "") -> str | None:
    """The one-line refusal of ``entry``'s key in ``run``, or None when it is at its default or applies."""
    setting = value(run, entry.key)
    if setting == default(entry.key):
        return None
    options = chosen(run)
    for dim, scope in entry.scopes().items():
        if options[dim] not in scope.names:
            return (
                f"{where}{entry.key}={show(setting)} applies to {dim}={'/'.join(scope.names)} ({scope.why}), "
                f"not {dim}={options[dim]}: {entry.fix}"
            )
    return None


def check_applicable(run: RunConfig, where: str = "") -> None:
    """ConfigError naming the first key of the table that ``run`` sets off its default where it does not apply;
    ``where`` prefixes the key (``policies.<name>.`` for one policy's overrides)."""
    for entry in TABLE:
        message = refusal(entry, run, where)
        if message is not None:
            raise ConfigError(message)


def show(setting: Any) -> str:
    """A value as the user writes it on the command line."""
    if isinstance(setting, bool):
        return str(setting).lower()
    if setting is None:
        return "null"
    if isinstance(setting, tuple):
        return str(list(setting))
    return str(setting)


def markdown_table() -> str:
    """The table as the docs show it (docs/configuration.md, written by ``python -m docs.tables``)."""
    lines = ["| Key | Applies to | Where it does not, a value off its default is refused with |", "|---|---|---|"]
    for entry in TABLE:
        where = "; ".join(f"{dim}={'/'.join(s.names)} ({s.why})" for dim, s in entry.scopes().items())
        lines.append(f"| `{entry.key}` (default `{show(default(entry.key))}`) | {where} | {entry.fix} |")
    return "\n".join(lines)
