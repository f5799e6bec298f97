#!/usr/bin/env bash
# Build and run raylab's CPU image without a Docker engine: buildah with chroot isolation and vfs storage,
# from a base made here (debootstrap of Debian bookworm from this machine's apt mirror). Every step is timed.
#
#   bash scripts/image.sh [all|base|build|smoke|cluster|clean]      (`make image` runs all)
#
# base     localhost/raylab-base:bookworm: Debian bookworm (minbase) + its python3 (3.11, as the public
#          python:3.11-slim-bookworm base) with pip and venv; `python` on the PATH as in that image.
#          Made once; kept until `clean`.
# build    docker/Dockerfile.cpu with BASE_IMAGE=<that base> -> localhost/raylab:cpu. pip inside the build
#          uses this machine's pip configuration: its find-links folder (the local CPU torch wheel), extra
#          indexes, constraints and CA bundle are bind-mounted read-only and named through build arguments,
#          so nothing of them is left in the image.
# smoke    a short `+experiment=cartpole_dqn` inside the image, its outputs in $OUT/smoke (a bind mount).
# cluster  a Ray head in one `buildah run` and a worker node in another (host network, loopback addresses,
#          token authentication), `ray job submit` from this machine, the job's outputs in $OUT/cluster:
#          it must finish with rollout actors on both nodes.
# Needs root (buildah's chroot isolation and vfs storage as root), buildah and debootstrap
# (`make install-image-tools`). Outputs: $OUT (default outputs/image), timings in $OUT/timings.json.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$(mkdir -p "${OUT:-$ROOT/outputs/image}" && cd "${OUT:-$ROOT/outputs/image}" && pwd)"
BASE="${BASE:-localhost/raylab-base:bookworm}"
IMAGE="${IMAGE:-localhost/raylab:cpu}"
SUITE="${SUITE:-bookworm}"
BUILDAH=(buildah --storage-driver vfs)
RUN=("${BUILDAH[@]}" run --isolation chroot --network host)
TIMINGS="$OUT/timings.json"
# open files in the working containers: this machine's hard limit (buildah's default is 1024; Ray asks for 8192)
NOFILE="$(ulimit -Hn)"
[ "$NOFILE" = unlimited ] && NOFILE=1048576

die() { echo "raylab image: $*" >&2; exit 2; }

need() {
  [ "$(id -u)" = 0 ] || die "needs root (buildah chroot isolation with vfs storage); run it as root"
  for tool in "$@"; do
    command -v "$tool" >/dev/null || die "$tool is not installed: run \`make install-image-tools\`"
  done
}

timed() {  # timed NAME CMD...: runs CMD, records its seconds under NAME in $TIMINGS
  local name=$1 start end
  shift
  start=$(date +%s.%N)
  "$@"
  end=$(date +%s.%N)
  python3 - "$TIMINGS" "$name" "$start" "$end" <<'EOF'
import json, sys
from pathlib import Path
path, name, start, end = Path(sys.argv[1]), sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
data = json.loads(path.read_text()) if path.exists() else {}
data[name] = round(end - start, 1)
path.write_text(json.dumps(data, indent=2) + "\n")
print(f"raylab image: {name} took {end - start:.0f} s", flush=True)
EOF
}

mirror() {  # the Debian mirror this machine's apt uses (deb822 or one-line sources), else deb.debian.org
  local uri
  uri=$(grep -hoE '^URIs: *[^ ]+|^deb +(\[[^]]*\] +)?[^ ]+' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list \
    2>/dev/null | grep -v security | head -1 | awk '{print $NF}')
  echo "${uri:-http://deb.debian.org/debian}"
}

make_base() {
  if "${BUILDAH[@]}" inspect --type image "$BASE" >/dev/null 2>&1; then
    echo "raylab image: $BASE exists (\`bash scripts/image.sh clean\` to remake it)"
    return
  fi
  local rootfs ctr mnt
  rootfs=$(mktemp -d /tmp/raylab-rootfs.XXXXXX)
  debootstrap --variant=minbase --include=python3,python3-pip,python3-venv,ca-certificates \
    "$SUITE" "$rootfs" "$(mirror)" > "$OUT/debootstrap.log" 2>&1 || { tail -20 "$OUT/debootstrap.log"; exit 1; }
  # as in python:3.11-slim: pip may install into the interpreter (no PEP 668 marker), `python` exists
  rm -f "$rootfs"/usr/lib/python3*/EXTERNALLY-MANAGED
  ln -sf /usr/bin/python3 "$rootfs/usr/local/bin/python"
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/archives/*.deb
  ctr=$("${BUILDAH[@]}" from scratch)
  mnt=$("${BUILDAH[@]}" mount "$ctr")
  tar -C "$rootfs" --exclude=./dev/* --exclude=./proc/* --exclude=./sys/* -cf - . | tar -C "$mnt" -xf -
  "${BUILDAH[@]}" umount "$ctr" >/dev/null
  "${BUILDAH[@]}" config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env LANG=C.UTF-8 --cmd python3 "$ctr"
  "${BUILDAH[@]}" commit --quiet "$ctr" "$BASE" >/dev/null
  "${BUILDAH[@]}" rm "$ctr" >/dev/null
  rm -rf "$rootfs"
  ctr=$("${BUILDAH[@]}" from -q "$BASE")
  echo "raylab image: made $BASE ($("${BUILDAH[@]}" run --isolation chroot "$ctr" python --version 2>&1))"
  "${BUILDAH[@]}" rm "$ctr" >/dev/null
}

pip_mounts=()
pip_args=()
pip_passthrough() {  # this machine's pip configuration, read-only, for the build's RUN steps
  local value
  value=$(python3 -m pip config get global.find-links 2>/dev/null || true)
  value=${PIP_FIND_LINKS:-$value}
  if [ -n "$value" ] && [ -d "$value" ]; then
    pip_mounts+=(-v "$value:$value:ro")
    pip_args+=(--build-arg "PIP_FIND_LINKS=$value")
  fi
  value=$(python3 -m pip config get global.extra-index-url 2>/dev/null || true)
  value=${PIP_EXTRA_INDEX_URL:-$value}
  if [ -n "$value" ]; then
    for url in $value; do
      # a file:// index is its simple/ folder plus the files it links to beside it: mount its parent
      case $url in file://*) local dir; dir=$(dirname "${url#file://}"); pip_mounts+=(-v "$dir:$dir:ro") ;; esac
    done
    pip_args+=(--build-arg "PIP_EXTRA_INDEX_URL=$value")
  fi
  value=$(python3 -m pip config get global.constraint 2>/dev/null || true)
  value=${PIP_CONSTRAINT:-$value}
  if [ -n "$value" ] && [ -f "$value" ]; then
    pip_mounts+=(-v "$value:$value:ro")
    pip_args+=(--build-arg "PIP_CONSTRAINT=$value")
  fi
  value=${PIP_CERT:-$(python3 -m pip config get global.cert 2>/dev/null || true)}
  if [ -n "$value" ] && [ -f "$value" ]; then
    pip_mounts+=(-v "$value:/etc/raylab-build-ca.crt:ro")
    pip_args+=(--build-arg "PIP_CERT=/etc/raylab-build-ca.crt")
  fi
}

build() {
  case $BASE in localhost/*)
    "${BUILDAH[@]}" inspect --type image "$BASE" >/dev/null 2>&1 \
      || die "no base image $BASE: run \`bash scripts/image.sh base\` first (or \`make image\`)" ;;
  esac
  pip_passthrough
  local status
  "${BUILDAH[@]}" build --isolation chroot --network host --layers=false \
    --build-arg "BASE_IMAGE=$BASE" "${pip_args[@]}" "${pip_mounts[@]}" \
    -f "$ROOT/docker/Dockerfile.cpu" -t "$IMAGE" "$ROOT" > "$OUT/build.log" 2>&1 && status=0 || status=$?
  grep -E '^STEP|raylab|Error|error:' "$OUT/build.log" || true
  # buildah's own status: an image left by an earlier build must not pass for this one
  [ "$status" = 0 ] || die "the build failed (exit $status): see $OUT/build.log"
  echo "raylab image: built $IMAGE ($("${BUILDAH[@]}" images --format '{{.Size}}' "$IMAGE"))"
}

CTR=""
container() {  # a working container of $IMAGE into $CTR, removed at exit (not in a $(...) subshell: it records it)
  CTR=$("${BUILDAH[@]}" from -q --ulimit "nofile=$NOFILE:$NOFILE" "$IMAGE")
  CONTAINERS+=("$CTR")
}
CONTAINERS=()
PIDS=()
cleanup() {
  for pid in "${PIDS[@]:-}"; do [ -n "$pid" ] && kill -- -"$pid" 2>/dev/null || true; done
  for ctr in "${CONTAINERS[@]:-}"; do [ -n "$ctr" ] && "${BUILDAH[@]}" rm "$ctr" >/dev/null 2>&1 || true; done
}
trap cleanup EXIT

data_dir() {  # a host folder the image's user (uid 1000) can write, mounted at /data
  rm -rf "$1" && mkdir -p "$1" && chown 1000:1000 "$1"
}

smoke() {
  container
  data_dir "$OUT/smoke"
  "${RUN[@]}" -v "$OUT/smoke:/data" -e WANDB_MODE=disabled "$CTR" -- \
    python -m raylab.train +experiment=cartpole_dqn stop.seconds=30 stop.mean_return=null \
    eval.every_seconds=null eval.final_episodes=5 hydra.run.dir=/data/run 2>&1 | tee "$OUT/smoke.log"
  [ -f "$OUT/smoke/run/benchmark_metrics.json" ] || die "the smoke run wrote no benchmark_metrics.json: $OUT/smoke.log"
}

# free_ports N: N distinct free loopback ports, one per line. Every socket stays bound until all are picked, so
# no port is handed out twice (picking them one at a time did: Ray refused a head whose dashboard agent's grpc
# and http ports were the same).
free_ports() {
  python3 -c 'import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks: s.bind(("127.0.0.1", 0))
print("\n".join(str(s.getsockname()[1]) for s in socks))' "$1"
}

node_ports() {  # node_ports LISTEN GRPC METRICS RUNTIME_ENV
  echo "--dashboard-agent-listen-port=$1 --dashboard-agent-grpc-port=$2 --metrics-export-port=$3" \
    "--runtime-env-agent-port=$4"
}

cluster() {
  local head worker gcs dashboard token env_args ray ports
  ray="$ROOT/.venv/bin/ray"
  [ -x "$ray" ] || ray=$(command -v ray) || die "ray is not installed here: run \`make install\` first"
  container
  head=$CTR
  container
  worker=$CTR
  data_dir "$OUT/cluster"
  mapfile -t ports < <(free_ports 11)
  gcs=${ports[0]}
  dashboard=${ports[1]}
  token=$(python3 -c 'import secrets; print(secrets.token_hex(32))')
  env_args=(-e RAY_AUTH_MODE=token -e "RAY_AUTH_TOKEN=$token" -e RAY_USAGE_STATS_ENABLED=0 -e WANDB_MODE=disabled)
  # shellcheck disable=SC2046  # node_ports is a list of flags
  setsid "${RUN[@]}" -v "$OUT/cluster:/data" "${env_args[@]}" "$head" -- ray start --head --block \
    --node-ip-address=127.0.0.1 --port="$gcs" --num-cpus=2 --include-dashboard=true --dashboard-host=127.0.0.1 \
    --dashboard-port="$dashboard" --ray-client-server-port="${ports[2]}" $(node_ports "${ports[@]:3:4}") > "$OUT/head.log" 2>&1 &
  PIDS+=($!)
  wait_for "the head's dashboard" 300 \
    "RAY_AUTH_MODE=token RAY_AUTH_TOKEN=$token $ray job list --address=http://127.0.0.1:$dashboard"
  # shellcheck disable=SC2046
  setsid "${RUN[@]}" -v "$OUT/cluster:/data" "${env_args[@]}" "$worker" -- ray start --block \
    --address="127.0.0.1:$gcs" --node-ip-address=127.0.0.1 --num-cpus=2 $(node_ports "${ports[@]:7:4}") > "$OUT/worker.log" 2>&1 &
  PIDS+=($!)
  wait_for "the worker node" 300 \
    "RAY_AUTH_MODE=token RAY_AUTH_TOKEN=$token $ray status --address=127.0.0.1:$gcs | grep -c ' node_' | grep -qx 2"
  RAY_AUTH_MODE=token RAY_AUTH_TOKEN=$token "$ray" job submit --address="http://127.0.0.1:$dashboard" -- \
    python -m raylab.train +experiment=cartpole_dqn topology.num_workers=2 stop.seconds=20 stop.mean_return=null \
    eval.every_seconds=null eval.final_episodes=2 hydra.run.dir=/data/run 2>&1 | tee "$OUT/job.log"
  python3 - "$OUT/cluster/run/benchmark_metrics.json" <<'EOF'
import json, sys
placement = json.load(open(sys.argv[1]))["placement"]
rollout = {node for name, node in placement["actors"].items() if name.startswith("rollout_")}
print(f"raylab image: the job's actors on {placement['nodes']} nodes; rollout actors on {len(rollout)}:")
for name, node in sorted(placement["actors"].items()):
    print(f"  {name}: {node}")
sys.exit(0 if placement["nodes"] == 2 and len(rollout) == 2 else 1)
EOF
}

wait_for() {  # wait_for WHAT SECONDS SHELL-CONDITION
  local what=$1 limit=$2 cond=$3 start
  start=$(date +%s)
  until bash -c "$cond" >/dev/null 2>&1; do
    if [ $(( $(date +%s) - start )) -gt "$limit" ]; then
      die "$what did not come up in $limit s: see $OUT/head.log and $OUT/worker.log"
    fi
    sleep 2
  done
}

clean() {
  "${BUILDAH[@]}" rmi -f "$IMAGE" "$BASE" 2>/dev/null || true
  "${BUILDAH[@]}" rm --all >/dev/null 2>&1 || true
}

case "${1:-all}" in
  base) need buildah debootstrap; timed base make_base ;;
  build) need buildah; timed build build ;;
  smoke) need buildah; timed smoke smoke ;;
  cluster) need buildah; timed cluster cluster ;;
  all)
    need buildah debootstrap
    rm -f "$TIMINGS"
    timed base make_base
    timed build build
    timed smoke smoke
    timed cluster cluster
    echo "raylab image: done; timings in $TIMINGS"
    cat "$TIMINGS"
    ;;
  clean) need buildah; clean ;;
  *) die "unknown step '$1': use all, base, build, smoke, cluster or clean" ;;
esac
