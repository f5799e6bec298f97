"""The tables of the tasks that need memory (benchmarks/memory_tasks.py, one file per group): each recurrent policy
beside its feed-forward control and a peer (RLlib, frame-stacked Ape-X) or a published figure."""

from __future__ import annotations

import statistics

from .format import Json, _int, _rows, _s, _sig

NONE = "—"


def _shape(v: Json) -> str:
    return f"{v['topology']}, {v['workers']} × {v['envs_per_worker']}"


def _model(v: Json) -> str:
    frames = f", {v['frame_stack']} frames stacked" if v.get("frame_stack", 1) > 1 else ""
    return f"{v['model']}{frames}"


def _variant(name: str, v: Json) -> str:
    framework = "RLlib " if v["framework"] == "rllib" else ""
    return f"`{name}` ({framework}{v['role']})"


def _num(x: float | None, digits: int = 3) -> str:
    return NONE if x is None else _sig(x, digits)


def _steps(x: float | None) -> str:
    return NONE if x is None else _int(x)


def _runs(d: Json, name: str) -> list[Json]:
    return sorted((r for r in d["runs"] if r["variant"] == name), key=lambda r: r["seed"])


def _per_seed(runs: list[Json], key: str, digits: int = 3) -> str:
    """Each seed's ``key``, in seed order ("—" for a failed run or a missing value)."""
    return ", ".join(_num(r.get(key), digits) if r.get("ok") else "failed" for r in runs) or NONE


def _reached(s: Json) -> str:
    return f"{s['reached']} / {s['runs']}"


def _notes(d: Json) -> str:
    """The criterion of each task, its peer or published figure, the machine's quietness, failures."""
    lines = []
    for task in d["tasks"].values():
        pub = task["published"]
        peer = f" Peer or published: {pub['source']}: {pub['figure']}." if pub else ""
        lines.append(f"{task['what']}: {task['criterion']}.{peer}")
    loads = [r["loadavg_before"][0] for r in d["runs"] if r.get("loadavg_before")]
    if loads:
        lines.append(
            f"1-minute load average before each run: {min(loads):.2f} to {max(loads):.2f} "
            f"(median {statistics.median(loads):.2f}) on {d['machine']['cores']} cores; {d['cap_s']:g} s cap per run."
        )
    failed = sum(s["failed"] for s in d["summary"].values())
    if failed:
        lines.append(f"{failed} run(s) failed (their errors are in the JSON).")
    if not d.get("complete", True):
        lines.append("The group did not finish: these are the runs that did.")
    return "".join(f"\n{line}\n" for line in lines)


def _rllib_notes(d: Json) -> str:
    """Each RLlib variant's settings and env, one line each."""
    lines = []
    for name, v in d["variants"].items():
        if v["framework"] == "rllib":
            words = "; ".join(w for w in (v.get("config"), v.get("shape_note")) if w)
            lines.append(f"`{name}`, RLlib {d.get('rllib', '')}: {words}; {v['env']}.")
    return "".join(f"\n{line}\n" for line in lines)


def memory_stateless(data: list[Json]) -> str:
    """StatelessCartPole-v1: recurrent PPO, APPO and A3C, the MLP control, frame stacking and RLlib's PPO-LSTM, to
    a training return of 350 (RLlib's criterion)."""
    (d,) = data
    target = f"{d['tasks']['stateless_cartpole']['target']:g}"
    header = ["variant", "model", "topology, workers × envs", f"reached {target}",
              "train time (median; a miss counts its whole run)", f"env steps to {target} (median of the reached)",
              "env steps/s (median)", "final greedy eval, per seed", "whole command (median)"]  # fmt: skip
    rows = []
    for name, s in d["summary"].items():
        v, runs = d["variants"][name], _runs(d, name)
        greedy = _per_seed(runs, "final_eval_return", 3) if v["framework"] == "raylab" else NONE
        rows.append([
            _variant(name, v), _model(v), _shape(v), _reached(s), _s(s["median_train_s"]),
            _steps(s["median_env_steps_to_target"]), _steps(s["median_env_steps_per_s"]), greedy,
            _s(s["median_process_s"]),
        ])  # fmt: skip
    return _rows(header, rows) + _rllib_notes(d) + _notes(d)


def memory_r2d2(data: list[Json]) -> str:
    """R2D2 against Ape-X with 4 stacked frames on StatelessCartPole-v1, and against feed-forward Ape-X on
    CartPole-v1 (the cost where memory buys nothing), each to a confirmed greedy target."""
    (d,) = data
    header = ["task", "variant", "model", "topology, workers × envs", "reached", "train time (median)",
              "env steps (median)", "env steps/s (median)", "final greedy eval, per seed"]  # fmt: skip
    rows = []
    for name, s in d["summary"].items():
        v = d["variants"][name]
        task = d["tasks"][v["task"]]
        rows.append([
            f"{task['what']} (≥ {task['target']:g})", _variant(name, v), _model(v), _shape(v), _reached(s),
            _s(s["median_train_s"]), _steps(s["median_env_steps"]), _steps(s["median_env_steps_per_s"]),
            _per_seed(_runs(d, name), "final_eval_return", 3),
        ])  # fmt: skip
    return _rows(header, rows) + _notes(d)


def memory_popgym(data: list[Json]) -> str:
    """POPGym: each recurrent PPO beside its MLP control for the same training seconds; MMER per seed."""
    (d,) = data
    published = any(t["published"].get("value") is not None for t in d["tasks"].values())
    header = ["task", "variant", "model", "MMER, per seed", "MMER (median)", "final training return (median)",
              "env steps (median)", "env steps/s (median)"] + ["published MMER"] * published  # fmt: skip
    rows = []
    for name, s in d["summary"].items():
        v = d["variants"][name]
        task = d["tasks"][v["task"]]
        value = task["published"].get("value")
        rows.append([
            task["what"], _variant(name, v), _model(v), _per_seed(_runs(d, name), "train_return_max"),
            _num(s["median_train_return_max"]), _num(s["median_train_return_final"]), _steps(s["median_env_steps"]),
            _steps(s["median_env_steps_per_s"]),
        ] + [f"{value:.3f} ({task['published']['figure']})" if value is not None else NONE] * published)  # fmt: skip
    return _rows(header, rows) + _rllib_notes(d) + _notes(d)


def memory_minigrid(data: list[Json]) -> str:
    """MiniGrid's Memory room: PPO-LSTM beside its MLP control for the same training seconds; success rates."""
    (d,) = data
    ((_, task),) = d["tasks"].items()
    episodes = d["checkpoint_eval"]["episodes"]
    header = ["variant", "model", f"success rate of final.pt ({episodes} episodes), per seed",
              "its mean return (median)", "best training return (median)",
              f"time to a training return of {task['target']:g} (reached)", "env steps (median)",
              "env steps/s (median)"]  # fmt: skip
    rows = []
    for name, s in d["summary"].items():
        v = d["variants"][name]
        rows.append([
            _variant(name, v), _model(v), _per_seed(_runs(d, name), "final_success_rate", 2),
            _num(s["median_final_eval_return"]), _num(s["median_train_return_max"]),
            f"{_s(s['median_seconds_to_target'])} ({_reached(s)})", _steps(s["median_env_steps"]),
            _steps(s["median_env_steps_per_s"]),
        ])  # fmt: skip
    return _rows(header, rows) + _rllib_notes(d) + _notes(d)
