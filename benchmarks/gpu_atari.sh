#!/usr/bin/env bash
# One GPU call (under 9 minutes): the Atari recipe toward CleanRL's 40M-frame budget with 14 rollout actors, for
# docs/benchmarks/learning.md ("On a GPU machine"). In order, each phase skipped when the deadline (DEADLINE_S
# seconds from the start, default 530) leaves it too little time:
#   1. the machine's env-only limit on the game: 14 processes stepping atari_appo's vector env (env_limit.py);
#   2. +experiment=atari_appo env.id=$GAME with 14 rollout actors and the GPU learner (bf16 + compile, the fastest
#      variant measured on an H200), stop.env_steps=$ENV_STEPS (10M: 40M frames) or stop.seconds=$SECONDS_S
#      (270; 290 on 2026-11-30), whichever first;
#      a greedy evaluation of 10 whole games every 60 s and 10 at the end; run by raylab.bench learn, so its JSON
#      is the Atari table's kind;
#   3. the learner alone on pong_appo's network, compiled, fp32 and bf16 (learner_step_cost.py --real), the
#      clip and Adam step's buffers marked static since the last GPU measurement, if time is left.
# Run from the checkout, with raylab's dependencies importable (the offline bundle's run-on-gpu.sh):
#   bash BUNDLE/run-on-gpu.sh bash benchmarks/gpu_atari.sh OUT_DIR [PACK]
# GAME=SpaceInvaders ENV_STEPS=2500000 SECONDS_S=200: the recipe's own 10M frames on another game.
# DEVICE=cpu WORKERS=1 SECONDS_S=20: a rehearsal of the mechanics on a machine without a GPU.
set -uo pipefail
[ $# -ge 1 ] || { echo "usage: bash benchmarks/gpu_atari.sh OUT_DIR [PACK.tgz]: name a directory to write to" >&2; exit 2; }
out=$(mkdir -p "$1" && cd "$1" && pwd) && [ -n "$out" ] ||
  { echo "cannot write to $1: pass an OUT_DIR this user can create (e.g. under /tmp or outputs/)" >&2; exit 2; }
pack=${2:-}
DEADLINE_S=${DEADLINE_S:-530}
. "$(dirname "$0")/gpu_phases.sh"
dev=${DEVICE:-cuda}; gpus=$([ "$dev" = cuda ] && echo 1 || echo 0); workers=${WORKERS:-14}
game=${GAME:-BeamRider}; seconds=${SECONDS_S:-270}; steps=${ENV_STEPS:-10000000}
prec=$([ "$dev" = cuda ] && echo bf16 || echo auto)
phase env_limit 20 30 python3 benchmarks/env_limit.py +experiment=atari_appo "env.id=$game-v5" --processes "$workers" \
  --seconds 6 --output "$out/env_limit.json"
phase atari 120 440 python3 -m raylab.bench learn --seeds 0 --runs-dir "$out/runs" --output "$out/atari_gpu.json" \
  --variant "${game}_${workers}w=env.id=$game-v5 topology.num_workers=$workers learner.device=$dev learner.num_gpus=$gpus \
learner.precision=$prec learner.compile=true ray.num_cpus=$((workers + 4)) stop.env_steps=$steps stop.seconds=$seconds \
eval.every_seconds=60" +experiment=atari_appo
phase learner_appo 70 110 python3 benchmarks/learner_step_cost.py --real --repeats 1 --warmup 3 --calls 8 --obs frames \
  --workloads appo --variant "compile=.,learner.device=$dev,learner.compile=true" \
  --variant "bf16_compile=.,learner.device=$dev,learner.precision=$prec,learner.compile=true" \
  --output "$out/learner_step_cost_appo.json"
finish
