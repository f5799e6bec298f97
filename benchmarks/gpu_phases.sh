# Sourced by the one-call GPU scripts (gpu_learner_ab.sh, gpu_atari.sh, gpu_mario.sh): a deadline, nvidia-smi sampled every
# second with each phase's start and end marked beside it, the machine's facts, and everything packed into $pack
# (a .tgz) after every phase, so a call cut short still brings back what it measured.
# Needs: out (an existing directory), pack (a .tgz path or empty), DEADLINE_S (default 540 here; the callers set theirs).
export WANDB_MODE=disabled PYTHONUNBUFFERED=1
t0=$(date +%s); deadline=$((t0 + ${DEADLINE_S:-540}))
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader,nounits -lms 1000 > "$out/smi.csv" &
  smi=$!
  nvidia-smi -L > "$out/gpu.txt"
else
  smi=
fi
mark() { echo "$(date +%s.%N) $1" >> "$out/marks.txt"; }
save() { [ -n "$pack" ] && tar -czf "$pack.tmp" --exclude='*.pt' --exclude='checkpoints' -C "$out" . && mv "$pack.tmp" "$pack"; }
# phase NAME MIN_S MAX_S CMD...: run CMD under a timeout of MAX_S, cut to the deadline; skipped under MIN_S left
phase() {
  local name=$1 min=$2 max=$3; shift 3
  local left=$((deadline - $(date +%s)))
  if [ "$left" -lt "$min" ]; then echo "$name skipped: ${left}s left" | tee -a "$out/skipped.txt"; return; fi
  [ "$left" -lt "$max" ] && max=$left
  mark "${name}_start"; echo "== $name (<= ${max}s) $(date -u +%T)"
  timeout -k 5 "$max" bash -c '"$@"' _ "$@" > "$out/$name.log" 2>&1; echo "$name exit $?" >> "$out/exits.txt"
  mark "${name}_end"; tail -n 4 "$out/$name.log"; save
}
finish() { [ -n "$smi" ] && kill "$smi"; save; echo "done in $(( $(date +%s) - t0 ))s"; ls -la "$out"; }
nproc > "$out/nproc.txt"; lscpu > "$out/lscpu.txt" 2>&1
python3 -c "import torch, sys; print(sys.version, torch.__version__, torch.version.cuda)" > "$out/versions.txt" 2>&1
git rev-parse HEAD > "$out/new_commit.txt" 2>/dev/null || cat .commit > "$out/new_commit.txt" 2>/dev/null
export RAYLAB_COMMIT=${RAYLAB_COMMIT:-$(cat "$out/new_commit.txt")}  # the JSONs' stamp where the tree has no git
