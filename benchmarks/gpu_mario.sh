#!/usr/bin/env bash
# One GPU call (under 9 minutes): +experiment=mario_dqn with 14 rollout actors and the GPU learner toward the
# first greedy flag of World 1-1, for docs/benchmarks/learning.md (Mario) and issue 46's GPU goal (the flag in
# <= 10 minutes). In order, each phase skipped when the deadline (DEADLINE_S seconds from the start, default 530)
# leaves it too little time:
#   1. the machine's env-only limit on Mario: 14 processes stepping mario_dqn's vector env (env_limit.py);
#   2. +experiment=mario_dqn with 14 rollout actors, the learner on the GPU (fp32, compiled with CUDA graphs:
#      2.2x eager fp32's updates/s on an H100, benchmarks/learner_cuda_dqn.json) and 2 torch threads for its
#      host side, stop.seconds=$SECONDS_S (default 270) or the recipe's own stop rule (greedy flag rate >= 0.8,
#      confirmed), whichever first; a greedy evaluation of 10 episodes (and a filmed one) asked for every 60 s, each
#      starting when the last has ended (a policy stuck at a pipe plays out the clock: ~2,000 agent steps an
#      episode), and 10 at the end. The phase's 480 s leave 210 s beyond the training for Ray's start, the first
#      CUDA-graph capture, the final evaluation and the exit (the CPU runs of mario_learning.json took 70-223 s
#      beyond theirs): the JSON is written only when the run ends. Run by raylab.bench learn, so its JSON is the
#      Mario learning table's kind (the first greedy flag, the flag rate and x-position per evaluation).
#      MARIO_OVERRIDES adds space-free overrides (e.g. the flag_stall variant's env.options.*=...).
# Mario needs nes-py (and the old gym it imports). MARIO_WHEELS=/ABS/DIR (absolute: the bundle's run-on-gpu.sh
# changes directory first) names a folder of wheels unpacked first where it is missing: nes-py built for the
# machine's Python, which needs no compiler there
#   python3.12 -m pip wheel --no-deps -w DIR nes-py==8.2.1 gym==0.26.2 gym-notices cloudpickle
#   python3 -m pip download --no-deps -d DIR gym-super-mario-bros==7.4.0
# (the offline bundle instead builds nes-py's sdist where g++ exists). Without it this script stops at once.
# Run from the checkout, with raylab's dependencies importable (the offline bundle's run-on-gpu.sh):
#   bash BUNDLE/run-on-gpu.sh bash benchmarks/gpu_mario.sh OUT_DIR [PACK]
# DEVICE=cpu WORKERS=1 SECONDS_S=30: a rehearsal of the mechanics on a machine without a GPU.
set -uo pipefail
[ $# -ge 1 ] || { echo "usage: bash benchmarks/gpu_mario.sh OUT_DIR [PACK.tgz]: name a directory to write to" >&2; exit 2; }
out=$(mkdir -p "$1" && cd "$1" && pwd) && [ -n "$out" ] ||
  { echo "cannot write to $1: pass an OUT_DIR this user can create (e.g. under /tmp or outputs/)" >&2; exit 2; }
if ! python3 -c "import nes_py, gym_super_mario_bros" 2>/dev/null && [ -n "${MARIO_WHEELS:-}" ]; then
  wheels=$(ls "$MARIO_WHEELS"/*.whl 2>/dev/null)
  [ -n "$wheels" ] ||
    { echo "MARIO_WHEELS=$MARIO_WHEELS holds no .whl: name the absolute path of the folder the wheels are in" >&2; exit 2; }
  site=${TMPDIR:-/tmp}/raylab-mario-site-$$; mkdir -p "$site"  # outside OUT_DIR: the pack carries no wheels
  for w in $wheels; do python3 -m zipfile -e "$w" "$site" || exit 2; done
  export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
fi
python3 -c "import nes_py, gym_super_mario_bros" 2>/dev/null ||
  { echo "nes-py is not importable: install raylab's mario extra (make install), or set MARIO_WHEELS=/abs/dir to a folder of wheels (see this script's header)" >&2; exit 2; }
pack=${2:-}
DEADLINE_S=${DEADLINE_S:-530}
. "$(dirname "$0")/gpu_phases.sh"
dev=${DEVICE:-cuda}; gpus=$([ "$dev" = cuda ] && echo 1 || echo 0); workers=${WORKERS:-14}
seconds=${SECONDS_S:-270}
if [ "$dev" = cuda ]; then
  learner="learner.precision=fp32 learner.compile=true learner.compile_mode=reduce-overhead learner.num_threads=2"
else
  learner="learner.precision=auto"
fi
phase env_limit 20 30 python3 benchmarks/env_limit.py +experiment=mario_dqn --processes "$workers" --seconds 6 \
  --output "$out/env_limit.json"
phase mario 120 480 python3 -m raylab.bench learn --seeds 0 --runs-dir "$out/runs" --output "$out/mario_gpu.json" \
  --variant "mario_${workers}w=topology.num_workers=$workers learner.device=$dev learner.num_gpus=$gpus $learner \
ray.num_cpus=$((workers + 4)) stop.seconds=$seconds eval.every_seconds=60 ${MARIO_OVERRIDES:-}" +experiment=mario_dqn
finish
