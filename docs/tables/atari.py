"""The tables of the image workloads: a CNN's inference on the CPU, the frame path stage by stage, and Pong
against Sample Factory and RLlib."""

from __future__ import annotations

from .format import Json, _int, _pct, _ratio, _rows, _sentence, _sig

INFERENCE_LABELS = {
    "fp32": "fp32 (ms)",
    "bf16": "bf16 copy",
    "autocast_bf16": "bf16 autocast",
    "channels_last": "channels-last",
    "channels_last_weights": "channels-last weights",
    "bf16_channels_last": "bf16 + channels-last",
    "compile": "torch.compile",
    "int8_linear": "int8 Linear",
}
WORKLOAD_LABELS = {
    "pong": "Pong, Nature CNN",
    "coinrun": "CoinRun, Nature CNN",
    "coinrun_impala": "CoinRun, IMPALA CNN",
}


def cnn_inference(data: list[Json]) -> str:
    """benchmarks/cnn_inference.py: a rollout actor's act() per variant, ms and the ratio to fp32."""
    (d,) = data
    variants = list(next(iter(next(iter(d["results"].values()))["batches"].values()))["median_ms"])
    header = ["network", "batch", *(INFERENCE_LABELS.get(v, v) for v in variants)]
    rows = []
    for experiment, r in d["results"].items():
        for batch, b in r["batches"].items():
            cells = [f"{b['median_ms']['fp32']:.2f}"]
            cells += [f"{b['median_ms'][v]:.2f} ({_ratio(b['vs_fp32'][v])})" for v in variants[1:]]
            rows.append([f"{r['model']} `{experiment}`", batch, *cells])
    worst = max(
        (b["max_prob_diff"][v], v)
        for r in d["results"].values()
        for b in r["batches"].values()
        for v in ("bf16", "bf16_channels_last")
        if v in b["max_prob_diff"]
    )
    return (
        _rows(header, rows)
        + f"\n{_sentence(d['protocol'])}; torch {d['torch']}. The largest difference of an action's probability "
        f"from fp32's, bf16 variants: {worst[0]:.4f}.\n"
    )


def frame_path(data: list[Json]) -> str:
    """benchmarks/frame_path.py: env only, env + inference in one process, W rollout actors; fp32 and bf16."""
    (d,) = data
    header = ["workload", "stage", "fp32: frames/s", "bf16: frames/s", "bf16 / fp32", "full path / (W × in process)"]
    rows = []
    for name, r in d["results"].items():
        med = r["median_frames_per_s"]
        label = WORKLOAD_LABELS.get(name, name) + f", {r['envs_per_worker']} envs"
        rows.append([label, "env only (one core's limit)", _int(med["env_only"]), "—", "—", "—"])
        rows.append([label, "env + inference, one process", _int(med["in_process/fp32"]),
                     _int(med["in_process/bf16"]), _ratio(r["bf16_over_fp32"]["in_process"]), "—"])  # fmt: skip
        for w in d["workers"]:
            key = f"{w}_workers"
            rows.append([
                label, f"{w} rollout actor{'s' if w > 1 else ''} on Ray", _int(med[f"{key}/fp32"]),
                _int(med[f"{key}/bf16"]), _ratio(r["bf16_over_fp32"][key]),
                f"fp32 {_pct(r['full_over_in_process'][key + '/fp32'])}, bf16 "
                f"{_pct(r['full_over_in_process'][key + '/bf16'])}",
            ])  # fmt: skip
    return _rows(header, rows) + f"\n{_sentence(d['protocol'])}.\n"


def atari_vs_peers(data: list[Json]) -> str:
    """benchmarks/atari_vs_peers.py: Pong frames/s, CPU per 1,000 frames by role, peak memory per framework."""
    (d,) = data
    names = {"raylab": "raylab APPO", "sf": "Sample Factory 2.1.1 APPO", "rllib": "RLlib PPO"}
    header = ["framework", "env frames/s", "raylab / it", "CPU ms per 1k frames: rollout workers",
              "separate inference", "learner", "the rest", "total", "peak memory (PSS, MB)"]  # fmt: skip
    rows = []
    for f, fps in d["median_frames_per_s"].items():
        cpu = d["median_cpu_ms_per_1k_frames"][f]
        rest = sum(v for k, v in cpu.items() if k not in ("rollout", "inference", "learner"))
        rows.append([
            names.get(f, f), _int(fps), _ratio(d["raylab_over"][f]) if f in d["raylab_over"] else "—",
            *(_sig(cpu[r]) if r in cpu else "—" for r in ("rollout", "inference", "learner")), _sig(rest),
            _sig(sum(cpu.values())), _int(d["median_peak_pss_mb"][f]),
        ])  # fmt: skip
    return (
        _rows(header, rows)
        + f"\n{_sentence(d['protocol'])}. The rest: the driver, evaluation, Ray's own processes. RLlib's learner "
        "runs in its driver process (its default, no separate learner), Sample Factory's inference in its own "
        "worker.\n"
    )
