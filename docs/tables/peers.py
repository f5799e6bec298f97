"""The tables that set raylab beside other frameworks: PPO against RLlib, APPO against Sample Factory and RLlib,
and apex_dqn end to end against RLlib's DQN (and on Mario)."""

from __future__ import annotations

from .format import Json, _int, _pct, _ratio, _rows, _s


def ppo_vs_rllib(data: list[Json]) -> str:
    """benchmarks/ppo_vs_rllib.py: raylab PPO against RLlib PPO (CartPole, Pendulum), to a training return."""
    (d,) = data
    s = d["summary"]
    target = f"{d.get('target', 475):g}"  # files written before Pendulum was added are CartPole's
    header = [
        "rollout workers × envs each",
        f"raylab: train time to {target} (median)",
        "RLlib",
        "RLlib / raylab",
        "raylab env steps/s",
        "RLlib env steps/s",
        "raylab / RLlib",
        f"env steps to {target} (raylab / RLlib)",
        "whole command (raylab / RLlib)",
    ]
    rows = []
    for key in sorted(k.removeprefix("ratio_") for k in s if k.startswith("ratio_")):
        ours, theirs, ratio = s[f"raylab_ppo_{key}"], s[f"rllib_ppo_{key}"], s[f"ratio_{key}"]
        rows.append(
            [
                key.replace("x", " × "),
                f"{_s(ours['median_train_s'])} ({ours['reached']} / {ours['runs']})",
                f"{_s(theirs['median_train_s'])} ({theirs['reached']} / {theirs['runs']})",
                _ratio(ratio["wall_time_rllib_over_raylab"]),
                _int(ours["median_env_steps_per_s"]),
                _int(theirs["median_env_steps_per_s"]),
                _ratio(ratio["env_steps_per_s_raylab_over_rllib"]),
                f"{ours['median_env_steps'] / 1000:.0f}k / {theirs['median_env_steps'] / 1000:.0f}k",
                f"{_s(ours['median_process_s'])} / {_s(theirs['median_process_s'])}",
            ]
        )
    return _rows(header, rows) + f"\nCriterion: {d['criterion']} (RLlib {d['rllib']}).\n"


def appo_vs_peers(data: list[Json]) -> str:
    """benchmarks/appo_vs_peers.py: raylab APPO against Sample Factory APPO and RLlib PPO, to a training return."""
    (d,) = data
    s = d["summary"]
    target = f"{d['target']:g}"
    header = ["framework and algorithm", "rollout workers × envs each", f"train time to {target} (median)",
              "reached", f"env steps to {target} (median)", "env steps/s (median)", "raylab's env steps/s ×",
              "raylab's time to target ×", "whole command (median)"]  # fmt: skip
    names = {"raylab_appo": "raylab APPO", "sf_appo": "Sample Factory APPO", "rllib_ppo": "RLlib PPO"}
    rows = []
    for key, r in s.items():
        if "_vs_" in key:
            continue
        framework, shape = key.rsplit("_", 1)
        ratio = s.get(f"raylab_appo_{shape}_vs_{key}")
        rows.append([
            names[framework], shape.replace("x", " × "), _s(r["median_train_s"]), f"{r['reached']} / {r['runs']}",
            f"{r['median_env_steps'] / 1000:.0f}k", _int(r["median_env_steps_per_s"]),
            _ratio(ratio["env_steps_per_s_ratio"]) if ratio else "—",
            _ratio(ratio["time_to_target_ratio"]) if ratio else "—", _s(r["median_process_s"]),
        ])  # fmt: skip
    versions = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in d["versions"].items())
    return _rows(header, rows) + f"\nCriterion: {d['criterion']}; the ratios at the same shape ({versions}).\n"


FRAMEWORKS = {"raylab": "raylab apex_dqn", "rllib": "RLlib DQN"}


def e2e_cartpole(data: list[Json]) -> str:
    """``raylab.bench e2e``: apex_dqn end to end beside RLlib's DQN, and where raylab's time went."""
    (d,) = data
    header = [
        "framework",
        "env steps/s",
        "learner updates/s",
        "samples trained per env step",
        f"training return ≥ {d['target']:g} (last 100 episodes)",
        "best training return, per seed",
        f"greedy eval ≥ {d['target']:g}, per seed",
    ]
    rows = []
    for name, s in d["summary"].items():
        reached = s["greedy_eval_target_reached_s"]
        rows.append(
            [
                FRAMEWORKS.get(name, name),
                _int(s["env_steps_per_s"]),
                _int(s["updates_per_s"]),
                f"{s['samples_per_env_step']:.1f}",
                s["reached_475"].replace("/", " / "),
                ", ".join(f"{x:.0f}" for x in s["best_return_mean"]),
                "at " + ", ".join(_s(x) for x in reached) if any(x is not None for x in reached) else "—",
            ]
        )
    out = _rows(header, rows)
    if "raylab_over_rllib" in d:
        r = d["raylab_over_rllib"]
        out += (
            f"\nraylab / RLlib: {_ratio(r['env_steps_per_s'])} the env steps/s, "
            f"{_ratio(r['samples_per_env_step'])} the samples per env step; {d['seconds']:.0f} s of training per run.\n"
        )
    share = d["summary"]["raylab"].get("busy_share")
    if share:
        out += "\n" + _rows(["raylab stage", "share of training time"], ([f"`{k}`", _pct(v)] for k, v in share.items()))
    return out


def e2e_mario(data: list[Json]) -> str:
    """``raylab.bench e2e`` on Mario: as configured and with collection free-running."""
    header = [
        "mario_dqn, overrides",
        "env steps/s (frames/s)",
        "learner updates/s",
        "samples per env step",
        "rollout worker time: env / inference / weight sync",
        "learner busy",
        "sampling efficiency",
    ]
    rows = []
    for d in data:
        s, eff = d["summary"]["raylab"], d["sampling_efficiency"]
        share = s["busy_share"]
        worker = " / ".join(_pct(share[f"rollout/{k}_s (per worker)"]) for k in ("env", "inference", "weight_sync"))
        rows.append(
            [
                " ".join(f"`{o}`" for o in d["raylab_overrides"]) or "as configured",
                f"{_int(s['env_steps_per_s'])} ({_int(eff['e2e_env_frames_per_s'])})",
                f"{s['updates_per_s']:.1f}",
                f"{s['samples_per_env_step']:.1f}",
                worker,
                _pct(share["learner/update_s"]),
                _pct(eff["efficiency"]),
            ]
        )
    eff = data[0]["sampling_efficiency"]
    notes = (
        f"\nSampling efficiency: end-to-end frames/s over {eff['workers']} workers × the single-process raw "
        f"emulator rate ({eff['raw_env_frames_per_s_one_process']:,} frames/s); {data[0]['seconds']:.0f} s per run.\n"
    )
    return _rows(header, rows) + notes
