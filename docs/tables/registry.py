"""Every table by the name a docs page asks for it with (``<!-- raylab:bench NAME -->``): the JSON files it is
made from, its renderer, and its title; ``table`` renders one with its sources and machines."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from .atari import (
    atari_life_restart,
    atari_machines,
    atari_recipe_change,
    atari_seeds,
    atari_table,
    atari_trials,
    atari_vs_peers,
    autosize_sweep,
    cnn_inference,
    frame_path,
    frame_path_ab,
    pong_learning,
    pong_recipe_change,
    transport_dedup,
)
from .components import (
    code_shape,
    dqn_fused_update,
    frame_conversion,
    fused_vs_compile,
    learner,
    learner_profile,
    learner_step_cost,
    mario_frame_copy,
    nature_cnn_layers,
    policy_inference,
    ppo_fused_update,
    replay_snapshot,
    snake_loop,
    timer_overhead,
)
from .format import BENCHMARKS, Json, machine_line
from .inference import central_inference, inference_transport, node_lost, rollout_loop
from .learning import (
    before_after,
    equal_frames,
    fault_run,
    fixed_budget_learning,
    gcs_task_events,
    learn,
    learning_summary,
    mario_learning,
    mario_repress_jump,
    mario_trials,
    policies_learning,
    soak,
    throughput_before_after,
)
from .memory import memory_minigrid, memory_popgym, memory_r2d2, memory_stateless
from .peers import appo_vs_peers, e2e_cartpole, e2e_mario, ppo_vs_rllib
from .recurrent import recurrent_cost
from .throughput import (
    a3c_scaling,
    arena,
    envs,
    gpu_learner_ab,
    sampling,
    sampling_revisions,
    sampling_sink_weights,
    timed_variants,
)


@dataclass(frozen=True)
class Table:
    files: tuple[str, ...]
    """The JSON files under benchmarks/ the table is made from."""
    render: Callable[[list[Json]], str]
    """Their parsed contents (in ``files``' order) -> the Markdown table."""
    title: str
    """What it measures, in a few words."""


TABLES: dict[str, Table] = {
    "learner_step_cost": Table(
        ("learner_step_cost.json",), learner_step_cost, "the learner's cost per optimizer step, the work taken out"
    ),
    "learner_profile": Table(("learner_profile.json",), learner_profile, "where a learner call's time goes"),
    "cartpole_learning": Table(
        tuple(f"cartpole_{algo}_learning.json" for algo in ("dqn", "ppo", "appo", "a3c")),
        learning_summary,
        "each algorithm on CartPole to a greedy 475, one row per topology",
    ),
    "cartpole_dqn_learning": Table(("cartpole_dqn_learning.json",), learn, "Ape-X DQN on CartPole to a greedy 475"),
    "cartpole_ppo_learning": Table(("cartpole_ppo_learning.json",), learn, "PPO on CartPole to a greedy 475"),
    "cartpole_appo_learning": Table(("cartpole_appo_learning.json",), learn, "APPO on CartPole to a greedy 475"),
    "cartpole_a3c_learning": Table(("cartpole_a3c_learning.json",), learn, "A3C on CartPole to a greedy 475"),
    "cartpole_appo_central": Table(
        ("cartpole_appo_central.json",), learn, "APPO on CartPole to a greedy 475, central against per-actor inference"
    ),
    "pong_appo_central": Table(
        ("pong_appo_central.json",), fixed_budget_learning, "pong_appo at 400k agent steps, central against per-actor"
    ),
    "pong_appo_central_to18": Table(
        ("pong_appo_central_to18.json",), learn, "pong_appo with central inference to a greedy 18"
    ),
    "pong_appo_central_equal_frames": Table(
        ("pong_appo_central_equal_frames.json",),
        equal_frames,
        "pong_appo with central inference against per-actor inference, at equal frames",
    ),
    "spaces_learning": Table(
        ("spaces_learning.json",),
        learn,
        "FrozenLake (Discrete observations) and Blackjack (a Tuple), PPO and DQN, to their targets",
    ),
    "spaces_learning_entropy001": Table(
        ("spaces_learning_entropy001.json",), learn, "the first spaces invocation: frozenlake_ppo with entropy 0.01"
    ),
    "minigrid_doorkey_image_scale": Table(
        ("minigrid_doorkey_image_scale.json",), learn, "minigrid_doorkey_ppo's image scale: 0.1 against 1/255"
    ),
    "frozenlake_ppo_entropy": Table(
        ("frozenlake_ppo_entropy.json",), learn, "frozenlake_ppo's entropy bonus: 0.01 against 0.03, in one process"
    ),
    "pendulum_ppo_learning": Table(("pendulum_ppo_learning.json",), learn, "PPO on Pendulum (continuous actions)"),
    "snake_arena_learning": Table(
        ("snake_arena_learning.json", "snake_arena_throughput.json"),
        fixed_budget_learning,
        "the multi-snake arena, one shared policy, fixed budget",
    ),
    "snake_arena_policies": Table(
        ("snake_arena_policies.json",), policies_learning, "the arena: two policies against one shared, fixed budget"
    ),
    "simple_adversary_learning": Table(
        ("simple_adversary_learning.json",), policies_learning, "mpe2 simple_adversary: two teams, two policies"
    ),
    "spread_learning": Table(("spread_learning.json",), fixed_budget_learning, "mpe2 simple_spread, shared policy"),
    "cartpole_ppo_tuning": Table(
        ("cartpole_ppo_tuning.json",), learn, "cartpole_ppo's sweep winner over 3 seeds, to a training return of 475"
    ),
    "cartpole_appo_envs": Table(
        ("cartpole_appo_envs.json",), learn, "cartpole_appo at 32 envs x 32 steps against 8 x 64, 5 seeds"
    ),
    "cartpole_appo_envs_scan": Table(
        ("cartpole_appo_envs_scan.json",), learn, "cartpole_appo's envs per worker scanned, 3 seeds, 2M env-step cap"
    ),
    "halfcheetah_learning": Table(
        ("halfcheetah_learning.json",), fixed_budget_learning, "HalfCheetah-v5, 20 minutes, PPO and APPO"
    ),
    "memory_tasks_stateless": Table(
        ("memory_tasks_stateless.json",),
        memory_stateless,
        "StatelessCartPole-v1: recurrent policies, the MLP control, a frame stack and RLlib's PPO-LSTM, to 350",
    ),
    "memory_tasks_r2d2": Table(
        ("memory_tasks_r2d2.json",),
        memory_r2d2,
        "R2D2 against frame-stacked Ape-X (StatelessCartPole-v1) and against Ape-X (CartPole-v1)",
    ),
    "memory_tasks_popgym": Table(
        ("memory_tasks_popgym.json",),
        memory_popgym,
        "POPGym: recurrent PPO beside its MLP control and RLlib's PPO-LSTM, MMER",
    ),
    "memory_tasks_popgym_ids": Table(
        ("memory_tasks_popgym_ids.json",),
        memory_popgym,
        "POPGym RepeatPreviousEasy by its own id against raylab's wrapper id, GRU and MLP, MMER",
    ),
    "memory_tasks_minigrid": Table(
        ("memory_tasks_minigrid.json",),
        memory_minigrid,
        "MiniGrid Memory S7: PPO-LSTM beside its MLP control and RLlib's PPO-LSTM",
    ),
    "snake_arena_throughput": Table(("snake_arena_throughput.json",), arena, "the multi-snake arena's agent steps/s"),
    "core_before_after": Table(
        tuple(f"core_before_after_{algo}.json" for algo in ("dqn", "ppo", "appo", "a3c")),
        before_after,
        "before and after the framework core, to a greedy 475",
    ),
    "learner_data_path_before_after": Table(
        tuple(f"learner_data_path_{algo}.json" for algo in ("dqn", "ppo", "appo", "a3c")),
        before_after,
        "before and after the learner's data path on its device, to a greedy 475",
    ),
    "seam_before_after": Table(
        tuple(f"seam_before_after_{algo}.json" for algo in ("dqn", "ppo", "appo", "a3c")),
        before_after,
        "before and after the one actor seam, to a greedy 475",
    ),
    "seam_throughput": Table(
        tuple(f"seam_throughput_{algo}.json" for algo in ("dqn", "ppo")),
        throughput_before_after,
        "before and after the one actor seam, 15 s runs: throughput",
    ),
    "code_shape_seam": Table(("code_shape_seam.json",), code_shape, "the actor seam and the package's shape"),
    "fused_vs_compile": Table(
        ("fused_vs_compile.json",), fused_vs_compile, "a learner call: autograd, torch.compile and the fused step"
    ),
    "learner_cpu": Table(("learner_cpu.json",), learner, "DQN learner updates/s"),
    "learner_cpu_avx2": Table(
        ("learner_cpu_avx2.json",), learner, "DQN learner updates/s on a CPU without native bf16 (AVX2)"
    ),
    "learner_cpu_avx2_batches": Table(
        ("learner_cpu_avx2_batches.json",), learner, "DQN learner updates/s by batch size on the AVX2 CPU, fp32"
    ),
    "learner_cpu_avx2_frames": Table(
        ("learner_cpu_avx2_frames.json",), learner, "DQN learner updates/s on 84x84 and 64x64 frames on the AVX2 CPU"
    ),
    "learner_cpu_avx2_narrow": Table(
        ("learner_cpu_avx2_narrow.json",),
        learner,
        "DQN learner updates/s with the Nature CNN's convolutions at half their widths, on the AVX2 CPU",
    ),
    "frame_conversion": Table(
        ("frame_conversion.json",), frame_conversion, "uint8 frames to a CNN's channels-last input, two ways"
    ),
    "mario_frame_copy": Table(
        ("mario_frame_copy.json",), mario_frame_copy, "Mario frames out of nes-py: a strided copy against a swap"
    ),
    "nature_cnn_layers": Table(
        ("nature_cnn_layers.json",), nature_cnn_layers, "the Nature CNN's layers on one CPU thread: time and GFLOP/s"
    ),
    "learner_cpu_xeon": Table(
        ("learner_cpu_xeon.json",), learner, "DQN learner updates/s on an Intel Xeon with AVX512-BF16 and AMX"
    ),
    "learner_ppo_cpu": Table(("learner_ppo_cpu.json",), learner, "PPO learner updates/s"),
    "learner_cuda_dqn": Table(("learner_cuda_dqn.json",), learner, "DQN learner updates/s on an H100"),
    "learner_cuda_ppo": Table(("learner_cuda_ppo.json",), learner, "PPO learner updates/s on an H100"),
    "snake_dqn_loop": Table(("snake_dqn_loop.json",), snake_loop, "a reference Snake DQN loop against raylab's"),
    "cartpole_ppo_vs_rllib": Table(("cartpole_ppo_vs_rllib.json",), ppo_vs_rllib, "PPO against RLlib"),
    "cartpole_ppo_vs_rllib_first_fused": Table(
        ("cartpole_ppo_vs_rllib_first_fused.json",), ppo_vs_rllib, "the same, the first run with the fused update"
    ),
    "cartpole_ppo_vs_rllib_autograd": Table(
        ("cartpole_ppo_vs_rllib_autograd.json",), ppo_vs_rllib, "the same, before the fused actor-critic update"
    ),
    "cartpole_appo_vs_peers": Table(
        ("cartpole_appo_vs_peers.json",), appo_vs_peers, "APPO against Sample Factory and RLlib"
    ),
    "cartpole_appo_vs_peers_first_fused": Table(
        ("cartpole_appo_vs_peers_first_fused.json",), appo_vs_peers, "the same, the first run with the fused update"
    ),
    "cartpole_appo_vs_peers_autograd": Table(
        ("cartpole_appo_vs_peers_autograd.json",), appo_vs_peers, "the same, before the fused actor-critic update"
    ),
    "cartpole_appo_vs_peers_torch": Table(
        ("cartpole_appo_vs_peers_torch.json",), appo_vs_peers, "the same, the first run (acting in torch)"
    ),
    "pendulum_ppo_vs_rllib": Table(("pendulum_ppo_vs_rllib.json",), ppo_vs_rllib, "PPO against RLlib on Pendulum"),
    "pendulum_ppo_vs_rllib_autograd": Table(
        ("pendulum_ppo_vs_rllib_autograd.json",), ppo_vs_rllib, "the same, before the fused actor-critic update"
    ),
    "a3c_scaling": Table(("a3c_scaling.json",), a3c_scaling, "A3C worker scaling"),
    "a3c_scaling_16core": Table(("a3c_scaling_16core.json",), a3c_scaling, "A3C worker scaling on 16 cores"),
    "gpu_learner_ab": Table(
        ("gpu_learner_ab.json",), gpu_learner_ab, "pong_appo with 14 rollout actors on an H200: learners and inference"
    ),
    "learner_step_cost_h200": Table(
        ("learner_step_cost_h200.json",), learner_step_cost, "the learner per optimizer step on an H200, real networks"
    ),
    "learner_step_cost_h200_static": Table(
        ("learner_step_cost_h200_static.json",),
        learner_step_cost,
        "the learner per optimizer step on an H200, compiled, with the clip and Adam buffers marked static",
    ),
    "e2e_cartpole": Table(("e2e_cartpole.json",), e2e_cartpole, "apex_dqn end to end against RLlib DQN"),
    "e2e_mario": Table(("e2e_mario.json", "e2e_mario_free.json"), e2e_mario, "apex_dqn end to end on Mario"),
    "envs": Table(("envs.json",), envs, "raw env throughput"),
    "sampling": Table(
        tuple(f"sampling_{n}.json" for n in ("cartpole", "snake", "mario", "coinrun")),
        sampling,
        "the rollout path alone against the env-only limit",
    ),
    "sampling_after": Table(
        tuple(f"sampling_{n}_after.json" for n in ("snake", "mario", "coinrun")),
        sampling,
        "Snake, Mario and CoinRun's rollout paths, re-measured at 2594d24",
    ),
    "sampling_cartpole_after": Table(
        ("sampling_cartpole_after.json",), sampling, "CartPole's rollout path at 32 envs, 1 and 2 calls in flight"
    ),
    "cartpole_appo_chunks_in_flight": Table(
        ("cartpole_appo_chunks_in_flight.json",), learn, "cartpole_appo with 1 and 2 chunks in flight, 5 seeds"
    ),
    "cartpole_appo_rollout_length": Table(
        ("cartpole_appo_rollout_length.json",), learn, "cartpole_appo with 32- and 64-step chunks, 5 seeds"
    ),
    "cartpole_appo_rollout_length_c1": Table(
        ("cartpole_appo_rollout_length_c1.json",),
        learn,
        "cartpole_appo with 32-step chunks, 2 per update, and 64-step chunks, 1 per update, 5 seeds",
    ),
    "cartpole_appo_rollout_length_10seeds": Table(
        ("cartpole_appo_rollout_length_10seeds.json",),
        learn,
        "cartpole_appo with 32- and 64-step chunks, 10 more seeds",
    ),
    "sampling_cartpole_r64": Table(
        ("sampling_cartpole_r64.json",), sampling, "CartPole's rollout path with 64-step chunks"
    ),
    "sampling_cartpole_numpy": Table(
        ("sampling_cartpole_numpy.json",), sampling, "CartPole's rollout path acting in NumPy, 1 and 2 calls in flight"
    ),
    "sampling_sink_weights": Table(
        ("sampling_sink_weights.json",), sampling_sink_weights, "the sampling sink's weights: object store or inline"
    ),
    "sampling_cartpole_weight_load": Table(
        ("sampling_cartpole_weight_load.json",),
        sampling_revisions,
        "CartPole's rollout path before and after the direct weight load",
    ),
    "sampling_snake_weight_load": Table(
        ("sampling_snake_weight_load.json",),
        sampling_revisions,
        "Snake's rollout path before and after the direct weight load",
    ),
    "sampling_cartpole_niceness": Table(
        ("sampling_cartpole_niceness.json",),
        sampling_revisions,
        "CartPole's rollout path with the actors at Ray's nice 15 and at the driver's priority",
    ),
    "sampling_cartpole_inline": Table(
        ("sampling_cartpole_inline.json",), sampling, "CartPole's rollout path, the sink's weights inline"
    ),
    "sampling_snake_inline": Table(
        ("sampling_snake_inline.json",), sampling, "Snake's rollout path, the sink's weights inline"
    ),
    "sampling_cartpole_inprocess": Table(
        ("sampling_cartpole_inprocess.json",), sampling, "CartPole's rollout path, with the worker alone in process"
    ),
    "sampling_cartpole_envpool": Table(
        ("sampling_cartpole_envpool.json",), sampling, "CartPole's rollout path with env.backend=envpool"
    ),
    "cartpole_appo_envpool": Table(
        ("cartpole_appo_envpool.json",), learn, "cartpole_appo on gymnasium's and on EnvPool's CartPole, 5 seeds"
    ),
    "cartpole_appo_envpool_threads": Table(
        ("cartpole_appo_envpool_threads.json",), learn, "the same with EnvPool's default threads (the first version)"
    ),
    "policy_inference": Table(("policy_inference.json",), policy_inference, "act() in torch and in NumPy"),
    "cnn_inference": Table(("cnn_inference.json",), cnn_inference, "a CNN's act() on the CPU, six ways"),
    "recurrent_cost": Table(
        ("recurrent_cost.json",), recurrent_cost, "a recurrent core's cost to a rollout worker and a PPO learner"
    ),
    "frame_path": Table(("frame_path.json",), frame_path, "the frame path on Pong and CoinRun, stage by stage"),
    "frame_path_spaces": Table(
        ("frame_path_spaces.json",), frame_path_ab, "the Pong frame path before and after the space module"
    ),
    "spaces_before_after": Table(
        tuple(f"spaces_before_after_{algo}.json" for algo in ("dqn", "ppo", "appo", "a3c")),
        before_after,
        "before and after the space module, to a greedy 475",
    ),
    "rollout_loop": Table(("rollout_loop.json",), rollout_loop, "the rollout loop before and after its split"),
    "inference_transport": Table(
        ("inference_transport.json",), inference_transport, "central inference's transport: Ray calls and shared memory"
    ),
    "central_inference": Table(
        ("central_inference.json",), central_inference, "the frame path with central inference against per-actor"
    ),
    "node_lost": Table(("node_lost.json",), node_lost, "a node lost mid-run, with central inference"),
    "transport_dedup": Table(
        ("transport_dedup.json",),
        transport_dedup,
        "frames sent once: a Pong chunk's bytes and CPU, plain and deduplicated",
    ),
    "atari_table": Table(("atari_table.json",), atari_table, "one Atari recipe, several games, at 10M frames"),
    "atari_h200": Table(
        ("atari_h200_beamrider.json", "atari_h200_spaceinvaders.json", "atari_table.json"),
        atari_machines,
        "the Atari recipe with 14 rollout actors on an H200, beside its 2-core runs",
    ),
    "atari_seeds": Table(
        ("atari_table.json", "atari_table_seed1.json"), atari_seeds, "the Atari table's games on more than one seed"
    ),
    "atari_life_restart": Table(
        ("atari_life_restart.json",),
        atari_life_restart,
        "which actions start an Atari game's next life, with EnvPool's FIRE reset and with baselines'",
    ),
    "atari_reset_actions": Table(
        ("atari_table.json", "atari_table_reset2.json"),
        partial(atari_recipe_change, before="EnvPool's FIRE", after="FIRE, then 2"),
        "the Atari table's command with baselines' FIRE reset (reset_actions=[2]) against the recipe",
    ),
    "atari_trials_reset_actions": Table(
        ("atari_recipe_trials_reset2.json", "atari_table.json"),
        atari_trials,
        "baselines' FIRE reset (reset_actions=[2]) tried on Breakout, beside the recipe's run at the same frames",
    ),
    "atari_lambda": Table(
        ("atari_table_lambda1.json", "atari_table.json"),
        partial(atari_recipe_change, before="λ 1", after="λ 0.95"),
        "the Atari table with V-trace's λ at 1, the recipe's before, and at 0.95",
    ),
    "atari_lambda_speed": Table(
        ("atari_lambda_speed.json",), timed_variants, "the Atari recipe's frames/s at λ 1 and 0.95, alternating runs"
    ),
    "mario_learner_speed": Table(
        ("mario_learner_threads.json",), timed_variants, "mario_dqn's learner: 1 torch thread, 2, or fp32, alternating"
    ),
    "learner_omp_wait": Table(
        ("mario_learner_omp.json", "atari_learner_omp.json"),
        timed_variants,
        "a learner on 2 torch threads with OpenMP's waiting threads spinning (the default before) or asleep",
    ),
    "coinrun_learner_threads": Table(
        ("coinrun_appo_learner_threads.json",), timed_variants, "coinrun_appo's learner on 1 torch thread and on 2"
    ),
    "atari_trials": Table(
        ("atari_recipe_trials.json", "atari_table_epochs2.json"),
        atari_trials,
        "settings tried against the Atari recipe (2 epochs), beside its own run at the same frames",
    ),
    "atari_trials_epochs4": Table(
        ("atari_recipe_trials_epochs4.json", "atari_table_lambda1.json"),
        atari_trials,
        "settings tried against the Atari recipe (4 epochs, λ 1), beside its own run at the same frames",
    ),
    "atari_epochs": Table(
        ("atari_table_epochs2.json", "atari_table_lambda1.json"),
        partial(atari_recipe_change, before="2 epochs", after="4 epochs"),
        "the Atari table with the recipe's 2 epochs a call and with 4",
    ),
    "atari_fifth_game": Table(
        ("atari_fifth_game.json",), atari_table, "the Atari recipe on a game nothing names, 30 minutes of training"
    ),
    "atari_fifth_game_epochs": Table(
        ("atari_fifth_game_epochs2.json", "atari_fifth_game_lambda1.json"),
        partial(atari_recipe_change, before="2 epochs", after="4 epochs"),
        "the game nothing names, 30 minutes of training with the recipe's 2 epochs a call and with 4",
    ),
    "atari_fifth_game_lambda": Table(
        ("atari_fifth_game_lambda1.json", "atari_fifth_game.json"),
        partial(atari_recipe_change, before="λ 1", after="λ 0.95"),
        "the game nothing names, 30 minutes of training with V-trace's λ at 1 and at 0.95",
    ),
    "mario_dqn_learning": Table(
        ("mario_dqn_learning.json",), mario_learning, "mario_dqn, as committed, to the flag of World 1-1 on 2 cores"
    ),
    "mario_learning": Table(
        ("mario_learning.json",),
        mario_learning,
        "mario_dqn's recipe changes, each 2.5 hours toward the flag of World 1-1 on 2 cores",
    ),
    "mario_repress_jump": Table(
        ("mario_repress_jump.json",),
        mario_repress_jump,
        "trained Mario policies scored with env.options.repress_jump off and on, over the same greedy episodes",
    ),
    "mario_trials": Table(
        ("mario_recipe_trials.json", "mario_learning.json"),
        mario_trials,
        "mario_dqn recipe changes, each a short run beside the learning runs of the variant it changes",
    ),
    "atari_vs_peers": Table(
        ("atari_vs_peers.json",), atari_vs_peers, "Pong: raylab, Sample Factory and RLlib side by side"
    ),
    "coinrun_vs_sf": Table(("coinrun_vs_sf.json",), atari_vs_peers, "CoinRun: raylab and Sample Factory side by side"),
    "pong_learning_avx2": Table(
        ("pong_learning_avx2.json",),
        pong_learning,
        "Pong on 2 AVX2 cores (fp32), the learner's data path on its device",
    ),
    "pong_learning": Table(
        ("pong_learning.json",), pong_learning, "Pong on 2 cores: time and frames to a greedy 18, beside Sample Factory"
    ),
    "pong_learning_epochs4": Table(
        ("pong_learning_epochs4.json",), pong_learning, "Pong on 2 cores with the recipe's 4 epochs a call: time to 18"
    ),
    "pong_lambda": Table(
        ("pong_learning_epochs4.json", "pong_lambda95.json"),
        partial(pong_recipe_change, before="λ 1 (the recipe before)", after="λ 0.95 (the recipe now)"),
        "Pong on 2 cores to a greedy 18 with V-trace's λ at 1 (the recipe before) and at 0.95 (the recipe now)",
    ),
    "autosize_sweep": Table(
        ("autosize_sweep.json",), autosize_sweep, "topology.num_workers=auto against a sweep of worker counts"
    ),
    "dqn_fused_update": Table(("dqn_fused_update.json",), dqn_fused_update, "a DQN update: autograd and fused"),
    "ppo_fused_update": Table(("ppo_fused_update.json",), ppo_fused_update, "a PPO/APPO call: autograd and fused"),
    "cartpole_appo_fused": Table(("cartpole_appo_fused.json",), learn, "cartpole_appo through autograd and fused"),
    "cartpole_ppo_fused": Table(("cartpole_ppo_fused.json",), learn, "cartpole_ppo through autograd and fused"),
    "halfcheetah_ppo_fused": Table(
        ("halfcheetah_ppo_fused.json",), learn, "halfcheetah_ppo through autograd and fused, 120 s each"
    ),
    "cartpole_dqn_fused": Table(
        ("cartpole_dqn_fused.json",), learn, "cartpole_dqn through autograd and torch acting, and fused, 3 seeds"
    ),
    "cartpole_appo_numpy_inference": Table(
        ("cartpole_appo_numpy_inference.json",), learn, "cartpole_appo acting in torch and in NumPy, 5 seeds"
    ),
    "cartpole_ppo_numpy_inference": Table(
        ("cartpole_ppo_numpy_inference.json",), learn, "cartpole_ppo acting in torch and in NumPy, 5 seeds"
    ),
    "timer_overhead": Table(("timer_overhead.json",), timer_overhead, "the cost of per-stage timing"),
    "replay_snapshot": Table(("replay_snapshot.json",), replay_snapshot, "replay snapshots: size and seconds"),
    "fault_run": Table(("fault_run.json",), fault_run, "a run with actors killed, beside a clean one"),
    "gcs_task_events": Table(("gcs_task_events.json",), gcs_task_events, "Ray's GCS memory: task events capped"),
    "soak": Table(("soak.json",), soak, "30-minute runs with actors killed: memory, fds, object store, disk"),
}
"""Every table, by the name a docs page asks for it with."""


def table(name: str, benchmarks: Path = BENCHMARKS, link: Callable[[str], str] | None = None) -> str:
    """Table ``name`` from the JSON under ``benchmarks``, then its sources and machines. ``link`` turns a
    file name into a link target (the docs site's copy of the JSON); without it files are named plainly."""
    spec = TABLES[name]
    data = [json.loads((benchmarks / file).read_text()) for file in spec.files]
    sources = "; ".join(
        f"{f'[`{file}`]({link(file)})' if link else f'`benchmarks/{file}`'}: {machine_line(d)}"
        for file, d in zip(spec.files, data, strict=True)
    )
    return f"{spec.render(data)}\n*Data: {sources}.*\n"
