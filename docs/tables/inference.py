"""The tables of central batched inference (topology.inference=central): the rollout loop before and after it
was split into an env runner and a trajectory builder, the transport measured both ways, the frame path
against per-actor inference, learning at equal frames, and a node lost mid-run."""

from __future__ import annotations

from .format import Json, _int, _pct, _ratio, _rows, _sentence, _sig

LOOP_LABELS = {
    "overhead": "the loop alone (an env and a policy that cost nothing), µs per step",
    "cartpole_appo": "`cartpole_appo`, 32 envs: agent steps/s",
    "pong_appo": "`pong_appo`, 16 envs, Nature CNN: agent steps/s",
    "simple_tag_mixed_ppo": "`simple_tag_mixed_ppo` (two space groups, two policies): agent steps/s",
}


def rollout_loop(data: list[Json]) -> str:
    """benchmarks/rollout_loop.py: one rollout worker in one process, the old tree against the new."""
    (d,) = data
    header = ["workload", f"old ({d['commits']['old']})", f"new ({d['commits']['new']})", "new / old"]
    rows = []
    for name, r in d["results"].items():
        med = r["median"]
        fmt = _sig if r["unit"].startswith("us") else _int
        rows.append([LOOP_LABELS.get(name, name), fmt(med["old"]), fmt(med["new"]), _ratio(r["new_over_old"])])
    return _rows(header, rows) + f"\n{_sentence(d['protocol'])}.\n"


PAYLOAD_LABELS = {"cartpole": "CartPole", "pong": "Pong", "coinrun": "CoinRun"}


def inference_transport(data: list[Json]) -> str:
    """benchmarks/inference_transport.py: a Ray actor call against a shared-memory channel per request."""
    (d,) = data
    served = f"served by one inference actor, {d['callers']} callers (requests/s)"
    header = [
        "payload (one split)",
        "bytes in / out",
        "transport",
        "round trip (µs)",
        served,
        "its CPU per request (µs)",
    ]
    rows = []
    for name, r in d["results"].items():
        shape = "×".join(str(x) for x in r["obs_shape"])
        label = f"{PAYLOAD_LABELS.get(name, name)}: {r['rows']} × {shape} {r['dtype']}"
        size = f"{_int(r['bytes_per_request']['in'])} / {_int(r['bytes_per_request']['out'])}"
        for transport, title in (("ray", "Ray actor call"), ("shm", "shared memory + pipes")):
            m = r["median"][transport]
            rows.append([label, size, title, _int(m["round_trip_us"]), _int(m["served_per_s"]),
                         _int(m["server_cpu_us_per_request"])])  # fmt: skip
    return _rows(header, rows) + f"\n{_sentence(d['protocol'])}.\n"


WORKLOAD_LABELS = {"pong": "Pong (`pong_appo`), 16 envs, Nature CNN", "cartpole": "CartPole (`cartpole_appo`), 32 envs"}


def central_inference(data: list[Json]) -> str:
    """benchmarks/central_inference.py: env only, in process, W local and W central rollout actors on Ray."""
    (d,) = data
    header = ["workload", "stage", "frames/s", "/ (W × in process)", "central / local",
              "rollout actors' time: env, inference", "inference actor: rows per batch, busy"]  # fmt: skip
    rows = []
    for name, r in d["results"].items():
        label, fps, med = WORKLOAD_LABELS.get(name, name), r["median_frames_per_s"], r["median"]
        rows.append([label, "env only (one core's limit)", _int(fps["env_only"]), "—", "—", "—", "—"])
        rows.append([label, "env + inference, one process", _int(fps["in_process"]), "—", "—", "—", "—"])
        for w in d["workers"]:
            for mode in ("local", "central"):
                key, m = f"{w}_{mode}", med[f"{w}_{mode}"]
                served = (
                    f"{m['inference_rows_per_batch']:.1f}, {_pct(m['inference_actor_busy'])}"
                    if mode == "central" else "—"
                )  # fmt: skip
                stage = f"{w} rollout actor{'s' if w > 1 else ''}, " + (
                    "each with its own policy"
                    if mode == "local"
                    else f"{r['env_splits']} env splits + 1 inference actor"
                )
                rows.append([
                    label, stage, _int(fps[key]), _pct(r["over_in_process"][key]),
                    _ratio(r["central_over_local"][str(w)]) if mode == "central" else "—",
                    f"{_pct(m['env_share'])}, {_pct(m['inference_share'])}", served,
                ])  # fmt: skip
    return _rows(header, rows) + f"\n{_sentence(d['protocol'])}.\n"


def node_lost(data: list[Json]) -> str:
    """benchmarks/node_lost.py: the worker node of a two-node cluster removed mid-run."""
    (d,) = data
    restarts = ", ".join(f"{k.removeprefix('restarts/')} {v}" for k, v in d["restarts"].items() if v)
    half = d["seconds_to_half_rate"]
    rows = [
        ["the lost node held", ", ".join(d["held_by_the_lost_node"])],
        ["env steps when it was lost", _int(d["env_steps_at_loss"])],
        ["restarts counted", restarts or "0"],
        ["lost: chunks, agent steps", f"{d['lost_chunks']}, {_int(d['lost_agent_steps'])}"],
        [
            "lost: seconds until the env-step rate was back to half its rate before",
            "—" if half is None else f"{half:.1f} s",
        ],
        ["how the run ended", f"{d['stop_reason']} (exit status {d['returncode']})"],
        ["whole run", f"{_int(d['total_env_steps'])} env steps in {d['duration_s']:.1f} s"],
    ]
    return _rows(["`" + d["experiment"] + "`, topology.inference=central, 2 rollout + 2 inference actors", ""], rows)
