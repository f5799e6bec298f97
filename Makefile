# raylab developer commands. `make help` lists them. Every target that needs the environment builds it first.
#
# torch: TORCH_SPEC=auto installs a CPU build before anything else asks for torch, from wherever one is
# (scripts/torch_choice.py: the pin torch==2.13.0 where pip finds a CPU build, else PyTorch's CPU index, and
# one line saying which); an unpinned `torch` would pull several GB of CUDA wheels from PyPI. GPU users choose
# their build (cu130 is the one the GPU benchmarks ran with; docs/index.md, "Installing torch"):
#   make install TORCH_SPEC="torch --index-url https://download.pytorch.org/whl/cu130"
#   make install TORCH_SPEC=            # keep the torch already installed in $(VENV)
# A TORCH_SPEC or EXTRAS other than the last install's installs again ($(REQUEST)), torch replaced.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
TORCH_SPEC ?= auto
EXTRAS ?= dev,bench,mario,procgen
PY := $(VENV)/bin/python
STAMP := $(VENV)/.raylab-installed
REQUEST := $(VENV)/.raylab-request
INSTALL_SCRIPT ?= scripts/install.sh
ARGS ?=

.DEFAULT_GOAL := help
.PHONY: FORCE help system-deps install train train-local test test-all test-learning lint format docs docs-serve bench-learning bench-core sweep-demo bench-a3c bench-scaling bench-rllib bench-memory bench-peers bench-ppo bench-appo bench-coinrun bench-learner bench-gpu bench-gpu-ab bench-gpu-atari bench-gpu-mario install-image-tools image image-cuda bench-multiagent bench-sampling bench-snake bench-replay bench-e2e bench-timing bench-faults bench-soak bench-snapshot bench-atari bench-frame-path-ab bench-atari-table bench-atari-fifth bench-mario-learning bench-atari-peers bench-central bench-pong-learning bench-autosize bench-recurrent clean

help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  make %-16s %s\n", $$1, $$2}'

system-deps: ## Debian packages: Qt5 runtime for EnvPool's Procgen, g++ for nes-py (skipped when present)
	@bash scripts/install.sh --system-deps-only

install: system-deps $(STAMP) ## system packages, then $(VENV) with raylab, its dev/bench/mario/procgen extras (a CPU torch unless TORCH_SPEC says otherwise)

# scripts/install.sh is the one install procedure (the Docker images run it too)
$(STAMP): pyproject.toml scripts/install.sh scripts/torch_choice.py $(REQUEST)
	SKIP_SYSTEM_DEPS=1 VENV="$(VENV)" PYTHON="$(PYTHON)" TORCH_SPEC="$(TORCH_SPEC)" EXTRAS="$(EXTRAS)" bash $(INSTALL_SCRIPT)
	@$(PY) -c 'import importlib.metadata as m, sys; print(*sys.argv[1:], "torch=" + m.version("torch"), sep="\n")' \
		"TORCH_SPEC=$(TORCH_SPEC)" "EXTRAS=$(EXTRAS)" > $(STAMP)

# what the install is asked for; rewritten (and so newer than $(STAMP)) only when that changes
$(REQUEST): FORCE
	@mkdir -p $(VENV)
	@printf '%s\n' "TORCH_SPEC=$(TORCH_SPEC)" "EXTRAS=$(EXTRAS)" > $(REQUEST).new
	@if cmp -s $(REQUEST).new $(REQUEST); then rm $(REQUEST).new; else mv $(REQUEST).new $(REQUEST); fi

FORCE:

train: install ## the main job: Ape-X DQN on CartPole with 2 rollout actors on an embedded local Ray
	$(PY) -m raylab.train +experiment=cartpole_dqn $(ARGS)

train-local: install ## the same job in serial mode (one process, no Ray)
	$(PY) -m raylab.train +experiment=cartpole_dqn topology=local $(ARGS)

# the default tier runs in TEST_WORKERS pytest processes (pytest-xdist), whole files to a process (a file's
# fixtures, a module's Ray cluster included, are made once); TEST_WORKERS=0 runs it in this one process
TEST_WORKERS ?= 2
test: install ## the default tier: unit, configs, integration, distributed, one real CartPole learning run
	WANDB_MODE=disabled $(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile -m "not slow and not gpu" --durations=15 $(ARGS)

test-all: install ## every tier, including the slow learning runs (3 seeds, both topologies)
	WANDB_MODE=disabled $(PY) -m pytest $(ARGS)

test-learning: install ## only the learning tier (slow runs included)
	WANDB_MODE=disabled $(PY) -m pytest tests/learning $(ARGS)

LINT_PATHS := raylab tests benchmarks scripts examples docs/hooks.py docs/tables
# mkdocs-material prints a banner about its successor on every build; the build itself is unaffected
MKDOCS := NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs

lint: install ## ruff (lint + format check), mypy, hadolint, the docs pages rendering as written (scripts/check_docs.py), and the docs site building cleanly
	$(PY) -m ruff check $(LINT_PATHS)
	$(PY) -m ruff format --check $(LINT_PATHS)
	$(PY) -m mypy
	$(VENV)/bin/hadolint --config .hadolint.yaml docker/Dockerfile.cpu docker/Dockerfile.cuda
	$(PY) scripts/check_docs.py
	$(MKDOCS) build --strict --quiet -d site

format: install ## apply ruff's fixes and formatting
	$(PY) -m ruff check --fix $(LINT_PATHS)
	$(PY) -m ruff format $(LINT_PATHS)

docs: install ## the documentation site into site/ (mkdocs build --strict; its tables generated from code and data)
	$(MKDOCS) build --strict -d site

docs-serve: install ## serve the documentation site at http://127.0.0.1:8000, rebuilt on every change
	$(MKDOCS) serve

bench-learning: install ## time-to-475 on CartPole, 3 seeds, apex_dqn vs serial -> benchmarks/cartpole_dqn_learning.json
	$(PY) -m raylab.bench learn --seeds 0 1 2 --output benchmarks/cartpole_dqn_learning.json \
		--variant apex_dqn= --variant local=topology=local +experiment=cartpole_dqn $(ARGS)

OLD ?= /tmp/raylab-83337f6
CORE_OUT ?= core_before_after
FRAME_AB_OUT ?= frame_path_ab
bench-core: install ## before/after a change of the core: cartpole_{dqn,ppo,appo,a3c}, 3 seeds (a3c 5), OLD checkout vs this one -> benchmarks/$(CORE_OUT)_*.json
	@test -d $(OLD)/raylab/conf || { echo "OLD=$(OLD) needs a raylab checkout with raylab/conf: git worktree add $(OLD) 83337f6 && ln -s ../conf $(OLD)/raylab/conf"; exit 2; }
	for x in dqn ppo appo a3c; do seeds="0 1 2"; [ $$x = a3c ] && seeds="0 1 2 3 4"; \
		$(PY) -m raylab.bench learn --seeds $$seeds --variant old= --variant new= --source old=$(OLD) \
		--output benchmarks/$(CORE_OUT)_$$x.json +experiment=cartpole_$$x $(ARGS) || exit 1; done

sweep-demo: install ## an 8-trial Optuna sweep of cartpole_ppo (lr, epochs, minibatches) by the time to a training return of 475 -> benchmarks/sweep_cartpole_ppo.json
	rm -rf outputs/sweeps/cartpole_ppo
	$(PY) -m raylab.train -m +experiment=cartpole_ppo hydra/sweeper=optuna \
		hydra.sweeper.n_trials=8 hydra.sweeper.direction=minimize hydra.sweeper.sampler.seed=0 \
		sweep.objective=time_to_target stop.mean_return=null stop.train_return=475 stop.seconds=60 \
		eval.every_seconds=null 'learner.lr=interval(0.0003,0.003)' 'algo.epochs=choice(2,4,8)' \
		'algo.minibatches=choice(2,4,8)' logger.console=false hydra.sweep.dir=outputs/sweeps/cartpole_ppo $(ARGS)
	cp outputs/sweeps/cartpole_ppo/sweep_summary.json benchmarks/sweep_cartpole_ppo.json

bench-a3c: install ## time-to-475 on CartPole with A3C, 3 seeds, a3c vs serial -> benchmarks/cartpole_a3c_learning.json
	$(PY) -m raylab.bench learn --seeds 0 1 2 --output benchmarks/cartpole_a3c_learning.json \
		--variant a3c= --variant local=topology=local +experiment=cartpole_a3c $(ARGS)

bench-scaling: install ## A3C worker scaling on Snake (1..16 workers, wall time and wait share) -> benchmarks/a3c_scaling.json
	$(PY) -m raylab.bench scaling +experiment=snake_a3c --output benchmarks/a3c_scaling.json $(ARGS)

bench-ppo: install ## time-to-475 on CartPole with PPO, 3 seeds, ppo vs serial -> benchmarks/cartpole_ppo_learning.json
	$(PY) -m raylab.bench learn --seeds 0 1 2 --output benchmarks/cartpole_ppo_learning.json \
		--variant ppo= --variant local=topology=local +experiment=cartpole_ppo $(ARGS)

bench-appo: install ## time-to-475 on CartPole with APPO, 3 seeds -> benchmarks/cartpole_appo_learning.json
	$(PY) -m raylab.bench learn --seeds 0 1 2 --output benchmarks/cartpole_appo_learning.json \
		--variant appo= +experiment=cartpole_appo $(ARGS)

RLLIB_VENV ?= .venv-rllib
$(RLLIB_VENV)/bin/python:
	$(PYTHON) -m venv $(RLLIB_VENV)
	$(RLLIB_VENV)/bin/pip install --quiet $(TORCH_SPEC) "ray[rllib]==$$($(PY) -c 'import importlib.metadata as m; print(m.version("ray"))')" \
		ale-py "gymnasium[atari]" opencv-python-headless

TASK ?= cartpole
bench-rllib: install $(RLLIB_VENV)/bin/python ## raylab PPO vs RLlib PPO side by side, TASK=cartpole|pendulum -> benchmarks/$(TASK)_ppo_vs_rllib.json
	$(PY) benchmarks/ppo_vs_rllib.py --task $(TASK) --rllib-python $(RLLIB_VENV)/bin/python $(ARGS)

bench-memory: install $(RLLIB_VENV)/bin/python ## tasks that need memory: recurrent policies beside feed-forward controls, RLlib's PPO-LSTM, frame-stacked Ape-X; ARGS="--groups stateless r2d2 popgym minigrid --seeds 0 1 2" (~6 h for all) -> benchmarks/memory_tasks_<group>.json
	WANDB_MODE=disabled $(PY) benchmarks/memory_tasks.py --rllib-python $(RLLIB_VENV)/bin/python $(ARGS)

SF_VENV ?= .venv-sf
$(SF_VENV)/bin/python:
	$(PYTHON) -m venv $(SF_VENV)
	$(SF_VENV)/bin/pip install --quiet $(TORCH_SPEC) "sample-factory==2.1.1" "numpy<2" "gymnasium==0.29.1" "envpool==1.2.5"

bench-peers: install $(RLLIB_VENV)/bin/python $(SF_VENV)/bin/python ## raylab APPO vs Sample Factory APPO vs RLlib PPO on CartPole, side by side (~15 min) -> benchmarks/cartpole_appo_vs_peers.json
	$(PY) benchmarks/appo_vs_peers.py --sf-python $(SF_VENV)/bin/python --rllib-python $(RLLIB_VENV)/bin/python $(ARGS)

bench-learner: install ## learner updates/s on the CPU: eager fp32, AMP, compile, AMP+compile; DQN batch 32/512, PPO (IMPALA CNN) 32/64; the fused MLP updates (DQN, PPO/APPO) -> benchmarks/learner_{,ppo_}cpu.json, {dqn,ppo}_fused_update.json
	$(PY) -m raylab.bench learner --device cpu --output benchmarks/learner_cpu.json $(ARGS)
	$(PY) -m raylab.bench learner --device cpu --algo ppo --batch-sizes 32 64 --epochs 2 --minibatches 4 --rounds 3 --seconds 2 --output benchmarks/learner_ppo_cpu.json $(ARGS)
	$(PY) benchmarks/learner_overheads.py benchmarks/learner_overheads.json
	$(PY) benchmarks/dqn_fused_update.py benchmarks/dqn_fused_update.json
	$(PY) benchmarks/ppo_fused_update.py benchmarks/ppo_fused_update.json

bench-gpu: install ## on a CUDA machine with 16 cores (~20 min): gpu tests, learner variants, 16-core A3C scaling, cartpole_appo and mario_dqn with 14 actors (benchmarks/gpu_session.sh)
	PY=$(PY) bash benchmarks/gpu_session.sh

GPU_OLD ?= fefcb63
# the old tree goes outside the checkout: inside it, git would stamp the old tree's runs with this commit
GPU_AB_OLD ?= /tmp/raylab-gpu-ab-old
GPU_GAME ?= BeamRider
bench-gpu-ab: install ## on a CUDA machine with 16 cores (< 9 min): commit GPU_OLD's learner (default fefcb63) against this one, alone and in pong_appo with 14 actors, central inference and the env-only limit (benchmarks/gpu_learner_ab.sh) -> benchmarks/gpu_learner_ab.json
	@case '$(GPU_AB_OLD)' in /tmp/?*|/var/tmp/?*) ;; *) echo 'GPU_AB_OLD=$(GPU_AB_OLD): name a folder under /tmp for the old tree (it is deleted first)' >&2; exit 2;; esac
	rm -rf '$(GPU_AB_OLD)' outputs/gpu_ab && mkdir -p '$(GPU_AB_OLD)' outputs/gpu_ab
	git archive $(GPU_OLD) raylab conf | tar -x -C $(GPU_AB_OLD) && ln -sfn ../conf $(GPU_AB_OLD)/raylab/conf
	git rev-parse $(GPU_OLD) > $(GPU_AB_OLD)/.commit
	PATH=$(VENV)/bin:$$PATH bash benchmarks/gpu_learner_ab.sh $(GPU_AB_OLD) outputs/gpu_ab/out
	$(PY) benchmarks/gpu_learner_ab.py outputs/gpu_ab/out --output benchmarks/gpu_learner_ab.json

bench-gpu-atari: install ## on a CUDA machine with 16 cores (< 9 min): the Atari recipe with 14 actors toward 40M frames on GPU_GAME (default BeamRider), the env-only limit, the compiled learner alone (benchmarks/gpu_atari.sh) -> outputs/gpu_atari/<time>/atari_gpu.json
	PATH=$(VENV)/bin:$$PATH GAME=$(GPU_GAME) bash benchmarks/gpu_atari.sh outputs/gpu_atari/$$(date +%Y%m%d-%H%M%S)
bench-gpu-mario: install ## on a CUDA machine with 16 cores (< 9 min): mario_dqn with 14 actors and the GPU learner toward the first greedy flag, and the env-only limit (benchmarks/gpu_mario.sh) -> outputs/gpu_mario/<time>/mario_gpu.json
	PATH=$(VENV)/bin:$$PATH bash benchmarks/gpu_mario.sh outputs/gpu_mario/$$(date +%Y%m%d-%H%M%S)

bench-multiagent: install ## the snake arena's agent steps/s with 1/4/16 snakes, and 3 seeds of snake_arena_ppo/dqn, two rival policies against one shared, mpe2 simple_spread and simple_adversary (two teams) on a fixed budget (~45 min) -> benchmarks/{snake_arena_*,spread_learning,simple_adversary_learning}.json
	$(PY) -m raylab.bench arena --snakes 1 4 16 --output benchmarks/snake_arena_throughput.json
	$(PY) -m raylab.bench learn --seeds 0 1 2 --output benchmarks/snake_arena_learning.json \
		--variant ppo=+experiment=snake_arena_ppo --variant dqn=+experiment=snake_arena_dqn \
		stop.seconds=120 eval.every_seconds=20 logger.console=false $(ARGS)
	$(PY) -m raylab.bench learn --seeds 0 1 2 --output benchmarks/spread_learning.json --variant ppo= --random-episodes 300 \
		env=pettingzoo env.id=mpe2.simple_spread_v3 algo=ppo topology=ppo model.hidden_sizes=[64,64] \
		topology.envs_per_worker=4 topology.rollout_length=64 learner.lr=0.001 stop.seconds=60 \
		stop.env_steps=null stop.mean_return=null eval.every_seconds=10 eval.episodes=30 eval.final_episodes=90 \
		logger.console=false $(ARGS)
	$(PY) -m raylab.bench learn --seeds 0 1 2 --output benchmarks/snake_arena_policies.json --random-episodes 300 \
		--variant shared=+experiment=snake_arena_ppo --variant rivals=+experiment=snake_arena_rivals_ppo \
		stop.seconds=120 eval.every_seconds=20 logger.console=false $(ARGS)
	$(PY) -m raylab.bench learn --seeds 0 1 2 --output benchmarks/simple_adversary_learning.json --random-episodes 600 \
		--against-random --variant teams=+experiment=simple_adversary_ppo stop.seconds=90 eval.every_seconds=15 \
		logger.console=false $(ARGS)

bench-sampling: install ## the rollout path alone (a sink for the learner) against the env-only rate, 1 and 2 workers: CartPole, Snake, Mario, CoinRun (~10 min) -> benchmarks/sampling_*.json
	$(PY) -m raylab.bench sampling +experiment=cartpole_appo --workers 1 2 --output benchmarks/sampling_cartpole.json $(ARGS)
	$(PY) -m raylab.bench sampling +experiment=snake_dqn --workers 1 2 --output benchmarks/sampling_snake.json $(ARGS)
	$(PY) -m raylab.bench sampling +experiment=mario_dqn --workers 1 2 --output benchmarks/sampling_mario.json $(ARGS)
	$(PY) -m raylab.bench sampling +experiment=coinrun_appo --workers 1 2 --output benchmarks/sampling_coinrun.json $(ARGS)

bench-snake: install ## a single-process Snake DQN loop (one update every 4 env steps), env steps/s -> benchmarks/snake_dqn_loop.json
	$(PY) -m raylab.bench snake_dqn_loop --rounds 5 --output benchmarks/snake_dqn_loop.json $(ARGS)

bench-replay: install ## replay memory per transition with and without frame dedup, on Mario frames -> benchmarks/replay_memory.json
	$(PY) benchmarks/replay_memory.py benchmarks/replay_memory.json

bench-e2e: install $(RLLIB_VENV)/bin/python ## apex_dqn end to end with its stage breakdown: CartPole beside RLlib DQN, and Mario
	WANDB_MODE=disabled $(PY) -m raylab.bench e2e --experiment cartpole_dqn --seconds 120 --seeds 0 1 2 \
		--rllib-python $(RLLIB_VENV)/bin/python --output benchmarks/e2e_cartpole.json $(ARGS)
	WANDB_MODE=disabled $(PY) -m raylab.bench e2e --experiment mario_dqn --seconds 300 --seeds 0 --eval-every 0 \
		--output benchmarks/e2e_mario.json $(ARGS)
	WANDB_MODE=disabled $(PY) -m raylab.bench e2e --experiment mario_dqn --seconds 300 --seeds 0 --eval-every 0 \
		--output benchmarks/e2e_mario_free.json replay.samples_per_insert=0 $(ARGS)

bench-timing: install ## cost of per-stage timing: ns per stage, and the same run with logger.timing on vs off
	WANDB_MODE=disabled $(PY) -m raylab.bench timer_overhead --rounds 6 --seconds 20 --output benchmarks/timer_overhead.json $(ARGS)

bench-snapshot: install ## cost of checkpoint.replay: write/load seconds and MiB per replay shard, and a run with vs without
	WANDB_MODE=disabled $(PY) -m raylab.bench replay_snapshot --rounds 4 --seconds 30 --output benchmarks/replay_snapshot.json $(ARGS)

bench-faults: install ## cartpole_dqn with a rollout actor SIGKILLed every 30 s, the learner and the replay once, beside a clean run
	$(PY) benchmarks/fault_run.py --kill-every 30 --learner-at 45 --replay-at 75 --seconds 150 --output benchmarks/fault_run.json $(ARGS)

bench-recurrent: install ## what a recurrent core costs a rollout worker (NumPy and torch acting) and a PPO learner (packed and looped unrolls), ~4 min -> benchmarks/recurrent_cost.json
	$(PY) benchmarks/recurrent_cost.py --output benchmarks/recurrent_cost.json $(ARGS)

bench-atari: install ## the frame path on Pong and CoinRun (env only, env + inference in one process, 1-2 rollout actors; fp32 vs bf16 rollouts) and CNN inference variants (~35 min) -> benchmarks/frame_path.json, cnn_inference.json
	$(PY) benchmarks/cnn_inference.py --output benchmarks/cnn_inference.json $(ARGS)
	$(PY) benchmarks/frame_path.py --output benchmarks/frame_path.json $(ARGS)

bench-frame-path-ab: install ## the Pong frame path of OLD (a raylab checkout) against this tree, alternating, 3 pairs (~15 min) -> benchmarks/$(FRAME_AB_OUT).json
	$(PY) benchmarks/frame_path_ab.py --old $(OLD) --new . --pairs 3 --workloads pong --output benchmarks/$(FRAME_AB_OUT).json $(ARGS)

bench-central: install ## central inference against per-actor on this machine: the transport (Ray calls vs shared memory), the frame path (Pong, CartPole; 1-2 rollout actors), the rollout loop against OLD, a node lost mid-run, learning at equal frames (CartPole 3 seeds to 475, Pong 1 seed at 400k agent steps) (~60 min) -> benchmarks/{inference_transport,central_inference,rollout_loop,node_lost,cartpole_appo_central,pong_appo_central}.json
	$(PY) benchmarks/inference_transport.py --output benchmarks/inference_transport.json
	$(PY) benchmarks/central_inference.py --output benchmarks/central_inference.json
	@if [ -n "$(OLD)" ]; then $(PY) benchmarks/rollout_loop.py --old $(OLD) --output benchmarks/rollout_loop.json; fi
	WANDB_MODE=disabled $(PY) benchmarks/node_lost.py --output benchmarks/node_lost.json
	WANDB_MODE=disabled $(PY) -m raylab.bench learn --seeds 0 1 2 --variant local= --variant central=topology.inference=central --output benchmarks/cartpole_appo_central.json +experiment=cartpole_appo
	WANDB_MODE=disabled $(PY) -m raylab.bench learn --seeds 0 --variant local= --variant central=topology.inference=central --output benchmarks/pong_appo_central.json +experiment=pong_appo stop.env_steps=400000 stop.seconds=null stop.mean_return=null eval.every_seconds=120

bench-atari-peers: install $(RLLIB_VENV)/bin/python $(SF_VENV)/bin/python ## raylab vs Sample Factory vs RLlib on Atari Pong, 2 x 16 envs, Nature CNN: frames/s, CPU per frame by role, memory (~25 min) -> benchmarks/atari_vs_peers.json
	$(PY) benchmarks/atari_vs_peers.py --sf-python $(SF_VENV)/bin/python --rllib-python $(RLLIB_VENV)/bin/python $(ARGS)

bench-pong-learning: install $(SF_VENV)/bin/python ## Pong learned on this machine, timed: pong_appo per seed to a greedy 18 (60-min budget each), Sample Factory's Atari example beside it; ARGS="--frameworks raylab sf --seeds 0 1" (~1 h per run) -> benchmarks/pong_learning.json
	WANDB_MODE=disabled $(PY) benchmarks/pong_learning.py --sf-python $(SF_VENV)/bin/python $(ARGS)

ATARI_GAMES ?= Pong Breakout BeamRider SpaceInvaders
bench-atari-table: install ## one recipe, several games: +experiment=atari_appo per game in ATARI_GAMES to 10M frames, one seed each (1-2.5 h a game on 2 cores); stopped, it resumes (a finished game is read back, a stopped one continues from its last checkpoint, 10 minutes apart) -> benchmarks/atari_table.json, atari_table_curves.png
	WANDB_MODE=disabled $(PY) -m raylab.bench learn --seeds 0 --reuse --resume-unfinished \
		$(foreach g,$(ATARI_GAMES),--variant $(g)=env.id=$(g)-v5) --output benchmarks/atari_table.json +experiment=atari_appo $(ARGS)
	$(PY) benchmarks/atari_table_plot.py benchmarks/atari_table.json

ATARI_FIFTH ?= Qbert
bench-atari-fifth: install ## the Atari table's command on a game no experiment or test names (ATARI_FIFTH, default Qbert) for 30 minutes of training, one seed -> benchmarks/atari_fifth_game.json, atari_fifth_game_curves.png
	WANDB_MODE=disabled $(PY) -m raylab.bench learn --seeds 0 --reuse --restart-unfinished \
		--variant $(ATARI_FIFTH)=env.id=$(ATARI_FIFTH)-v5 --output benchmarks/atari_fifth_game.json +experiment=atari_appo stop.seconds=1800 $(ARGS)
	$(PY) benchmarks/atari_table_plot.py benchmarks/atari_fifth_game.json

MARIO_SEEDS ?= 0 1
bench-mario-learning: install ## +experiment=mario_dqn as committed, seeds MARIO_SEEDS (its stop: a confirmed greedy flag rate of 0.8, 2M agent steps or 2.5 h; ~2.5 h a seed on 2 cores); stopped, it resumes seed by seed -> benchmarks/mario_dqn_learning.json, mario_dqn_learning_curves.png
	WANDB_MODE=disabled $(PY) -m raylab.bench learn --seeds $(MARIO_SEEDS) --reuse --restart-unfinished \
		--output benchmarks/mario_dqn_learning.json +experiment=mario_dqn $(ARGS)
	$(PY) benchmarks/mario_learning_plot.py benchmarks/mario_dqn_learning.json

bench-autosize: install ## topology.num_workers=auto against a sweep of 1-4 workers on pong_appo, cartpole_appo, cartpole_ppo (~20 min) -> benchmarks/autosize_sweep.json
	WANDB_MODE=disabled $(PY) benchmarks/autosize_sweep.py $(ARGS)

bench-soak: install ## a soak (~65 min): 30-min cartpole_dqn then cartpole_appo, a rollout actor SIGKILLed every 2 min, the learner at 15 min; RSS/fds per process, object store, run dir sampled -> benchmarks/soak.json
	$(PY) benchmarks/soak.py --minutes 30 --kill-every 2 --learner-at 15 --sample-every 10 --runs-dir outputs/bench/soak --output benchmarks/soak.json $(ARGS)

COINRUN_DIR ?= benchmarks/coinrun_ppo_timed
COINRUN_HOURS ?= 0.16667
COINRUN_SEEDS ?= 0 1
bench-coinrun: install ## coinrun_ppo for COINRUN_HOURS sequential and parallel, alternating, COINRUN_SEEDS; then compare
	@for seed in $(COINRUN_SEEDS); do for mode in sequential parallel; do \
		WANDB_MODE=disabled $(PY) -m raylab.bench timed --duration-hours $(COINRUN_HOURS) --mode $$mode \
			--output-dir $(COINRUN_DIR)/$${mode}_seed$$seed +experiment=coinrun_ppo seed=$$seed $(ARGS) || exit 1; \
	done; done
	$(PY) -m raylab.bench compare --sequential $(COINRUN_DIR)/sequential_seed* --parallel $(COINRUN_DIR)/parallel_seed* \
		--output $(COINRUN_DIR)/comparison.png

install-image-tools: ## Debian packages buildah and debootstrap, for `make image` (as root)
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends buildah debootstrap

image: ## build docker/Dockerfile.cpu daemonlessly (buildah) from a local Debian base, then a smoke run and a two-container Ray cluster in it (as root; scripts/image.sh)
	bash scripts/image.sh all

image-cuda: ## build docker/Dockerfile.cuda the same way (PyPI's CUDA torch, no CUDA base image), then its smoke run on the CPU (as root; KIND=cuda scripts/image.sh)
	KIND=cuda bash scripts/image.sh all

clean: ## remove run outputs, the built docs site and caches (keeps $(VENV))
	rm -rf outputs multirun site .pytest_cache .mypy_cache .ruff_cache
