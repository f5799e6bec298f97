#!/usr/bin/env bash
# The GPU-machine measurements on docs/benchmarks.md ("On a GPU machine"), in the order they were taken, on a
# machine with CUDA, 16 cores and raylab installed (make install, or the wheels of Ray, Hydra, gymnasium and
# nes-py for its Python). Outputs land in benchmarks/ (JSON + PNG) and in outputs/gpu/ (run folders).
#   bash benchmarks/gpu_session.sh        (about 20 minutes; `make bench-gpu`)
set -euo pipefail
mkdir -p outputs/gpu
export WANDB_MODE=disabled PYTHONUNBUFFERED=1
PY=${PY:-python3}
VARIANTS="eager_fp32 tf32 bf16 fp16 compile compile_ro bf16_compile bf16_compile_ro"
$PY -m pytest -m gpu -q -p no:cacheprovider tests/unit/test_learner_objectives.py
$PY -m raylab.bench learner --algo dqn --device cuda --batch-sizes 32 512 --threads 4 --variants $VARIANTS \
  --rounds 3 --seconds 1.5 --output benchmarks/learner_cuda_dqn.json
$PY -m raylab.bench learner --algo ppo --device cuda --batch-sizes 64 256 --threads 4 --variants $VARIANTS \
  --rounds 3 --seconds 1.5 --output benchmarks/learner_cuda_ppo.json
$PY -m raylab.bench scaling +experiment=snake_a3c --workers 1 2 4 8 16 --repeats 3 --train-seconds 30 \
  --output benchmarks/a3c_scaling_16core.json --runs-dir outputs/gpu/scaling
$PY -m raylab.train +experiment=cartpole_appo topology.num_workers=14 learner.device=cuda learner.num_gpus=1 \
  stop.seconds=90 stop.mean_return=null ray.num_cpus=16 hydra.run.dir=outputs/gpu/cartpole_appo_14w
nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader -l 5 \
  > outputs/gpu/mario_gpu_utilization.csv &
smi=$!
$PY -m raylab.train +experiment=mario_dqn topology.num_workers=14 learner.device=cuda learner.num_gpus=1 \
  learner.precision=fp32 learner.compile=true learner.compile_mode=reduce-overhead learner.num_threads=2 \
  stop.seconds=360 eval.every_seconds=120 eval.final_episodes=2 ray.num_cpus=16 hydra.run.dir=outputs/gpu/mario_dqn_14w
kill $smi
