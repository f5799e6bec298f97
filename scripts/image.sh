#!/usr/bin/env bash
# Build and run raylab's CPU or CUDA image without a Docker engine: buildah with chroot isolation and vfs storage,
# from a base made here (debootstrap of Debian bookworm from this machine's apt mirror). Every step is timed.
#
#   bash scripts/image.sh [all|base|build|smoke|cluster|clean|pip-config]      (`make image` runs all)
#   KIND=cuda bash scripts/image.sh [all|...]                                    (`make image-cuda` runs all)
#
# KIND     cpu (default): docker/Dockerfile.cpu -> localhost/raylab:cpu, outputs in outputs/image.
#          cuda: docker/Dockerfile.cuda -> localhost/raylab:cuda, outputs in outputs/image-cuda; the same base,
#          PyPI's CUDA build of torch (its CUDA libraries come as wheels); pip's find-links folder is left out
#          of the build (a CPU torch there would win); `all` is base, build and smoke (the smoke test runs on
#          the CPU, as a CUDA torch does without a GPU); the cluster step is the CPU image's.
# base     localhost/raylab-base:bookworm: Debian bookworm (minbase) + its python3 (3.11, as the public
#          python:3.11-slim-bookworm base) with pip and venv; `python` on the PATH as in that image.
#          Made once; kept until `clean`.
# build    docker/Dockerfile.cpu with BASE_IMAGE=<that base> -> localhost/raylab:cpu. pip inside the build
#          uses this machine's pip configuration: its find-links folder (the local CPU torch wheel), extra
#          indexes, constraints and CA bundle are bind-mounted read-only and named through build arguments,
#          so nothing of them is left in the image. `pip-config` prints those arguments and mounts.
# smoke    a short `+experiment=cartpole_dqn` inside the image, its outputs in $OUT/smoke (a bind mount).
# cluster  a Ray head in one `buildah run` and a worker node in another (host network, loopback addresses,
#          token authentication), `ray job submit` from this machine, the job's outputs in $OUT/cluster:
#          it must finish with rollout actors on both nodes.
# Needs root (buildah's chroot isolation and vfs storage as root), buildah and debootstrap
# (`make install-image-tools`). Outputs: $OUT (default outputs/image), timings in $OUT/timings.json.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KIND="${KIND:-cpu}"
case $KIND in
  cpu) DEFAULT_OUT="$ROOT/outputs/image" ;;
  cuda) DEFAULT_OUT="$ROOT/outputs/image-cuda" ;;
  *) echo "raylab image: unknown KIND '$KIND': use KIND=cpu or KIND=cuda" >&2; exit 2 ;;
esac
OUT="$(mkdir -p "${OUT:-$DEFAULT_OUT}" && cd "${OUT:-$DEFAULT_OUT}" && pwd)"
BASE="${BASE:-localhost/raylab-base:bookworm}"
IMAGE="${IMAGE:-localhost/raylab:$KIND}"
DOCKERFILE="$ROOT/docker/Dockerfile.$KIND"
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

# pip_setting KEY: the value `pip install` takes for KEY from pip's configuration files, all of them merged
# (`pip config list`: the global /etc/xdg/pip/pip.conf and /etc/pip.conf, the site file, the user file,
# $PIP_CONFIG_FILE; `pip config get` reads only the user file), [install] over [global]. The PIP_* environment
# variables, which override every file, are read by the caller.
PIP_SETTINGS=""  # `pip config list`, read once by pip_passthrough
pip_setting() {
  python3 -c '
import ast, sys
settings = dict(line.rstrip("\n").partition("=")[::2] for line in sys.stdin)
for section in ("install", "global"):
    if f"{section}.{sys.argv[1]}" in settings:
        print(" ".join(ast.literal_eval(settings[f"{section}.{sys.argv[1]}"]).split()))  # one line, as pip splits it
        break
' "$1" <<<"$PIP_SETTINGS"
}

pip_mounts=()
pip_args=()
pip_passthrough() {  # this machine's pip configuration, read-only, for the build's RUN steps
  local value
  PIP_SETTINGS=$(python3 -m pip config list 2>/dev/null || true)
  value=${PIP_FIND_LINKS:-$(pip_setting find-links)}
  if [ -n "$value" ] && [ "$KIND" = cuda ]; then
    echo "raylab image: the CUDA build leaves out pip's find-links folder $value (a CPU torch there would win over PyPI's CUDA build)" >&2
  elif [ -n "$value" ] && [ -d "$value" ]; then
    pip_mounts+=(-v "$value:$value:ro")
    pip_args+=(--build-arg "PIP_FIND_LINKS=$value")
  fi
  value=${PIP_EXTRA_INDEX_URL:-$(pip_setting extra-index-url)}
  if [ -n "$value" ]; then
    for url in $value; do
      # a file:// index is its simple/ folder plus the files it links to beside it: mount its parent
      case $url in file://*) local dir; dir=$(dirname "${url#file://}"); pip_mounts+=(-v "$dir:$dir:ro") ;; esac
    done
    pip_args+=(--build-arg "PIP_EXTRA_INDEX_URL=$value")
  fi
  value=${PIP_CONSTRAINT:-$(pip_setting constraint)}
  if [ -n "$value" ] && [ -f "$value" ]; then
    pip_mounts+=(-v "$value:$value:ro")
    pip_args+=(--build-arg "PIP_CONSTRAINT=$value")
  fi
  value=${PIP_CERT:-$(pip_setting cert)}
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
    -f "$DOCKERFILE" -t "$IMAGE" "$ROOT" > "$OUT/build.log" 2>&1 && status=0 || status=$?
  grep -E '^STEP|raylab|Error|error:' "$OUT/build.log" || true
  # buildah's own status: an image left by an earlier build must not pass for this one
  [ "$status" = 0 ] || die "the build failed (exit $status): see $OUT/build.log"
  local size
  size=$("${BUILDAH[@]}" images --format '{{.Size}}' "$IMAGE")
  printf '{"image": "%s", "dockerfile": "docker/%s", "size": "%s"}\n' "$IMAGE" "$(basename "$DOCKERFILE")" "$size" \
    > "$OUT/image.json"
  echo "raylab image: built $IMAGE ($size)"
}

CTR=""
container() {  # a working container of $IMAGE into $CTR, removed at exit (not in a $(...) subshell: it records it)
  CTR=$("${BUILDAH[@]}" from -q --ulimit "nofile=$NOFILE:$NOFILE" "$IMAGE")
  CONTAINERS+=("$CTR")
}
CONTAINERS=()
NODE_PIDS=()
NODE_NAMES=()
cleanup() {
  local i pid
  # the Ray nodes first, the last started first (the worker, then the head): see NODE_WRAPPER
  for (( i = ${#NODE_PIDS[@]} - 1; i >= 0; i-- )); do
    pid=${NODE_PIDS[i]}
    touch "$OUT/cluster/.stop-${NODE_NAMES[i]}"
    exited "$pid" 90 || kill -- -"$pid" 2>/dev/null || true  # a node that does not stop: its process group
  done
  rm -f "$OUT"/cluster/.stop-*
  for ctr in "${CONTAINERS[@]:-}"; do [ -n "$ctr" ] && "${BUILDAH[@]}" rm "$ctr" >/dev/null 2>&1 || true; done
}
exited() {  # exited PID SECONDS: whether PID ends within SECONDS
  local _
  for _ in $(seq "$2"); do kill -0 "$1" 2>/dev/null || return 0; sleep 1; done
  return 1
}
trap cleanup EXIT

data_dir() {  # a host folder the image's user (uid 1000) can write, mounted at /data
  rm -rf "$1" && mkdir -p "$1" && chown 1000:1000 "$1"
}

smoke() {
  container
  data_dir "$OUT/smoke"
  # which torch the image holds: a CUDA build in the CUDA image (it runs on the CPU where there is no GPU)
  "${RUN[@]}" "$CTR" -- python -c 'import sys, torch
cuda = torch.version.cuda
print(f"raylab image: torch {torch.__version__}, CUDA {cuda}, a GPU here: {torch.cuda.is_available()}")
sys.exit(0 if (cuda is not None) == (sys.argv[1] == "cuda") else 1)' "$KIND" 2>&1 | tee "$OUT/torch.log" \
    || die "the image's torch is not the $KIND build: $OUT/torch.log"
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

# What a Ray node container runs: `ray start --block ARGS`, until the host creates /data/.stop-NAME (cleanup).
# Then only `ray start` gets SIGTERM: it stops its own node's processes (never another node's, as a `ray stop`
# would on a machine whose containers share its process table) and exits 1, as it always does on SIGTERM; the
# wrapper, which asked for that stop, exits 0. A node that dies by itself ends the wrapper with its own status.
# shellcheck disable=SC2016  # expanded by the container's sh
NODE_WRAPPER='name=$1; shift
ray start --block "$@" &
pid=$!
while kill -0 "$pid" 2>/dev/null; do
  if [ -e "/data/.stop-$name" ]; then
    kill -TERM "$pid"
    wait "$pid" || true
    echo "raylab image: the $name node stopped"
    exit 0
  fi
  sleep 1
done
wait "$pid"'

# ray_cli VERSION: a `ray` command on this machine with the image's Ray version, for `ray job submit` and
# `ray status`: the checkout's .venv or the PATH's when their version matches, else a venv with only
# ray[default]==VERSION ($RAY_CLI_VENV, default .venv-ray; a few hundred MB, not the whole .venv).
ray_cli() {
  local version=$1 candidate venv=${RAY_CLI_VENV:-$ROOT/.venv-ray}
  for candidate in "$ROOT/.venv/bin/ray" "$(command -v ray || true)" "$venv/bin/ray"; do
    if [ -x "$candidate" ] && [ "$("$candidate" --version 2>/dev/null | awk '{print $NF}')" = "$version" ]; then
      echo "$candidate"
      return
    fi
  done
  echo "raylab image: installing ray[default]==$version into $venv for the job submission" >&2
  python3 -m venv "$venv" >&2
  "$venv/bin/python" -m pip install --quiet "ray[default]==$version" >&2
  echo "$venv/bin/ray"
}

cluster() {
  local head worker gcs dashboard token env_args ray ports version
  container
  head=$CTR
  container
  worker=$CTR
  version=$("${RUN[@]}" "$head" -- python -c 'import importlib.metadata as m; print(m.version("ray"))')
  ray=$(ray_cli "$version")
  data_dir "$OUT/cluster"
  mapfile -t ports < <(free_ports 11)
  gcs=${ports[0]}
  dashboard=${ports[1]}
  token=$(python3 -c 'import secrets; print(secrets.token_hex(32))')
  env_args=(-e RAY_AUTH_MODE=token -e "RAY_AUTH_TOKEN=$token" -e RAY_USAGE_STATS_ENABLED=0 -e WANDB_MODE=disabled)
  # shellcheck disable=SC2046  # node_ports is a list of flags
  setsid "${RUN[@]}" -v "$OUT/cluster:/data" "${env_args[@]}" "$head" -- sh -c "$NODE_WRAPPER" node head --head \
    --node-ip-address=127.0.0.1 --port="$gcs" --num-cpus=2 --include-dashboard=true --dashboard-host=127.0.0.1 \
    --dashboard-port="$dashboard" --ray-client-server-port="${ports[2]}" $(node_ports "${ports[@]:3:4}") > "$OUT/head.log" 2>&1 &
  NODE_PIDS+=($!)
  NODE_NAMES+=(head)
  wait_for "the head's dashboard" 300 \
    "RAY_AUTH_MODE=token RAY_AUTH_TOKEN=$token $ray job list --address=http://127.0.0.1:$dashboard"
  # shellcheck disable=SC2046
  setsid "${RUN[@]}" -v "$OUT/cluster:/data" "${env_args[@]}" "$worker" -- sh -c "$NODE_WRAPPER" node worker \
    --address="127.0.0.1:$gcs" --node-ip-address=127.0.0.1 --num-cpus=2 $(node_ports "${ports[@]:7:4}") > "$OUT/worker.log" 2>&1 &
  NODE_PIDS+=($!)
  NODE_NAMES+=(worker)
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
    if [ "$KIND" = cpu ]; then timed cluster cluster; fi
    echo "raylab image: done; timings in $TIMINGS"
    cat "$TIMINGS"
    ;;
  clean) need buildah; clean ;;
  pip-config)  # what the build takes from this machine's pip configuration (needs neither root nor buildah)
    pip_passthrough
    if [ ${#pip_args[@]} -gt 0 ]; then printf '%s %s\n' "${pip_args[@]}" "${pip_mounts[@]}"; fi
    ;;
  *) die "unknown step '$1': use all, base, build, smoke, cluster, clean or pip-config" ;;
esac
