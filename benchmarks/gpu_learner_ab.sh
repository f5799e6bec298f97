#!/usr/bin/env bash
# One GPU call (under 9 minutes): an older raylab tree against this one, the learner alone and end to end, with
# central inference beside them, for docs/benchmarks/gpu.md. In order, each phase skipped when the deadline
# (DEADLINE_S seconds from the start, default 540) leaves it too little time:
#   1. the machine's env-only limit: 1, 14 and 16 processes stepping pong_appo's vector env (env_limit.py);
#   2. the learner alone on pong_appo's real network (learner_step_cost.py --real): OLD eager fp32, NEW eager
#      fp32, NEW compiled with CUDA graphs (learner.compile=true: compile_mode auto), NEW bf16 + compile;
#   3. pong_appo with 14 runners and one central inference actor on the GPU (topology.inference=central, learner
#      compiled), a greedy evaluation of 10 games every 15 s, stopping at a mean of 18 (or at 100 s);
#   4. pong_appo with 14 rollout actors acting themselves, NEW (learner compiled) then OLD (the OLD tree's own
#      command), 50 s each, no evaluation;
#   (each run's time limit leaves ~45 s beyond its stop.seconds for Ray's start, a cold compile and the exit)
#   5. the learner alone on mario_dqn's network, as 2 (needs nes-py: keep its sdist in the offline bundle);
#   6. the frame path table at 1, 2 and 14 workers, local against central (central_inference.py), if time is left.
# nvidia-smi is sampled every second throughout, each phase's start and end marked beside it; everything is
# packed into $PACK (a .tgz) after every phase, so a call cut short still brings back what it measured.
# Run from the checkout of NEW, with raylab's dependencies importable (the offline bundle's run-on-gpu.sh):
#   bash BUNDLE/run-on-gpu.sh bash benchmarks/gpu_learner_ab.sh OLD_TREE OUT_DIR [PACK]
# OLD_TREE: an older checkout outside any git work tree (git archive <commit> raylab conf | tar -x, with
# raylab/conf -> ../conf), its commit in OLD_TREE/.commit, which learner_step_cost.py stamps its rows with: inside
# this checkout git would name this checkout's commit instead.
# Afterwards, here: python benchmarks/gpu_learner_ab.py OUT_DIR (one JSON, with the GPU's busy share per phase).
set -uo pipefail
old=$(cd "$1" && pwd); out=$(mkdir -p "$2" && cd "$2" && pwd); pack=${3:-}
. "$(dirname "$0")/gpu_phases.sh"
# DEVICE=cpu WORKERS=1: a rehearsal of the mechanics on a machine without a GPU
dev=${DEVICE:-cuda}; gpus=$([ "$dev" = cuda ] && echo 1 || echo 0)
pong="+experiment=pong_appo topology.num_workers=${WORKERS:-14}"
train() {  # train TREE RUN_NAME OVERRIDES...: raylab.train in TREE, its run directory under OUT_DIR
  local tree=$1 name=$2; shift 2
  local commit; commit=$([ "$tree" = . ] && echo "${RAYLAB_COMMIT:-}")  # the old tree's stamp is not this one's
  (cd "$tree" && RAYLAB_COMMIT=$commit PYTHONPATH="$tree:${PYTHONPATH:-}" python3 -m raylab.train "$@" "hydra.run.dir=$out/run_$name")
}
step_cost() {  # step_cost WORKLOAD
  python3 benchmarks/learner_step_cost.py --real --repeats 1 --warmup 3 --calls 8 --obs frames --workloads "$1" \
    --variant "old=$old,learner.device=$dev" --variant "new=.,learner.device=$dev" \
    --variant "new_compile=.,learner.device=$dev,learner.compile=true" \
    --variant "new_bf16_compile=.,learner.device=$dev,learner.precision=bf16,learner.compile=true" \
    --output "$out/learner_step_cost_$1.json"
}
export -f train step_cost; export old out dev
phase env_limit 30 75 python3 benchmarks/env_limit.py +experiment=pong_appo --processes 1 14 16 --seconds 8 \
  --output "$out/env_limit.json"
phase learner_appo 60 110 step_cost appo
phase pong_central 60 150 train . central $pong topology.inference=central learner.compile=true ray.num_cpus=$((${WORKERS:-14} + 4)) \
  stop.seconds=100 stop.mean_return=18 eval.every_seconds=15 eval.episodes=10 eval.final_episodes=10
phase pong_new 45 95 train . new $pong learner.device=$dev learner.num_gpus=$gpus learner.compile=true ray.num_cpus=$((${WORKERS:-14} + 2)) \
  stop.seconds=50 stop.mean_return=null eval.every_seconds=null eval.final_episodes=0
phase pong_old 45 95 train "$old" old $pong learner.device=$dev learner.num_gpus=$gpus ray.num_cpus=$((${WORKERS:-14} + 2)) \
  stop.seconds=50 stop.mean_return=null eval.every_seconds=null eval.final_episodes=0
phase learner_dqn 45 90 step_cost dqn
phase frame_path 40 90 python3 benchmarks/central_inference.py --workloads pong --workers 1 2 ${WORKERS:-14} --seconds 5 \
  --rounds 1 --output "$out/central_inference.json"
finish
