#!/usr/bin/env bash
# The learner on a GPU machine, an older raylab tree against this one in one run (under 9 minutes), for the
# GPU table of docs/benchmarks/throughput.md ("The learner on a GPU"):
#   1. the learner alone on pong_appo's and mario_dqn's real networks (benchmarks/learner_step_cost.py --real),
#      OLD and NEW alternating, NEW also compiled with CUDA graphs (compile_mode=reduce-overhead), in fp32 (what
#      precision=auto picks on a GPU) and in bf16 (AMP + compile);
#   2. 90 s of pong_appo with 14 rollout actors each, OLD then NEW then OLD then NEW;
#   nvidia-smi sampled every second throughout, each phase's start and end marked beside it.
# Run from the checkout of NEW, with raylab's dependencies importable (the offline bundle's run-on-gpu.sh):
#   bash BUNDLE/run-on-gpu.sh bash benchmarks/gpu_learner_ab.sh OLD_TREE OUT_DIR
# OLD_TREE: an older checkout (git archive <commit> raylab conf | tar -x, with raylab/conf -> ../conf).
# Afterwards, here: python benchmarks/gpu_learner_ab.py OUT_DIR (the table, with the GPU's busy share per run).
set -uo pipefail
old=$(cd "$1" && pwd); out=$(mkdir -p "$2" && cd "$2" && pwd)
export WANDB_MODE=disabled PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader,nounits -lms 1000 > "$out/smi.csv" &
smi=$!
mark() { echo "$(date +%s.%N) $1" >> "$out/marks.txt"; }
nproc > "$out/nproc.txt"; nvidia-smi -L > "$out/gpu.txt"; git rev-parse HEAD > "$out/new_commit.txt" 2>/dev/null
mark learner_start
timeout 260 python3 benchmarks/learner_step_cost.py --real --repeats 2 --warmup 3 --calls 8 --obs frames \
  --workloads appo dqn --variant "old=$old,learner.device=cuda" --variant "new=.,learner.device=cuda" \
  --variant "new_compile=.,learner.device=cuda,learner.compile=true,learner.compile_mode=reduce-overhead" \
  --variant "new_bf16_compile=.,learner.device=cuda,learner.precision=bf16,learner.compile=true,learner.compile_mode=reduce-overhead" \
  --output "$out/learner_step_cost_cuda.json" > "$out/learner.log" 2>&1
mark learner_end
for name in old new old new; do
  tree=$([ "$name" = old ] && echo "$old" || pwd)
  mark "pong_${name}_start"
  (cd "$tree" && PYTHONPATH="$tree:${PYTHONPATH:-}" timeout 130 python3 -m raylab.train +experiment=pong_appo \
    topology.num_workers=14 learner.device=cuda learner.num_gpus=1 ray.num_cpus=16 stop.seconds=90 \
    stop.mean_return=null eval.every_seconds=null "hydra.run.dir=$out/pong_${name}_$(date +%s)") \
    > "$out/pong_${name}.log" 2>&1
  mark "pong_${name}_end"
done
kill $smi
ls -la "$out"
