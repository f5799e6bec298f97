"""The catalogue of bad inputs: what users mistype, and the one line each one gets (exit status 2, no
traceback, nothing written). It is data: tests/cli/test_catalogue.py runs every case through the CLI's
entry function, and the docs page "Bad inputs" (docs/catalogue.md) is generated from it by docs/hooks.py,
so the page and the tests cannot drift.

A case is (cli, arguments, a part of the expected line, the section it belongs to, new). ``cli`` is
``train`` (python -m raylab.train, Hydra overrides), ``evaluate`` or ``bench <command>``. ``new``: the
mistake has no row in docs/errors.md's table. Arguments may name paths the test makes:

    {file}      an existing plain file
    {run}       a run dir: config.yaml (env=fake) and a checkpoints/final.pt that is not a checkpoint
    {empty}     an existing empty directory
    {bad}       a run dir whose config.yaml does not parse
    {missing}   a path that does not exist
    {live}      a run dir like {run} that a run is training in now (the test holds it, as raylab.train does)
    {out}       a new path for outputs (train: hydra.run.dir is {out}/run unless the case sets it)
"""

# ruff: noqa: E501

from __future__ import annotations

from typing import NamedTuple


class Case(NamedTuple):
    cli: str
    args: str
    expected: str
    section: str
    new: bool = True


SHOWN = {
    "{file}": "notes.txt",
    "{run}": "outputs/run",
    "{empty}": "empty_dir",
    "{bad}": "broken_run",
    "{missing}": "no/such/dir",
    "{live}": "outputs/training_now",
    "{out}": "new_dir",
}
"""How the docs page writes each placeholder path."""

T, E = "train", "evaluate"
PPO, APPO, A3C = "+experiment=cartpole_ppo", "+experiment=cartpole_appo", "+experiment=cartpole_a3c"
RIVALS = "+experiment=snake_arena_rivals_ppo"

TRAIN_GROUPS = [
    Case(T, "+experiment=cartpole_dqm", "did you mean +experiment=cartpole_dqn?", "experiment", False),
    Case(T, "experiment=CartPole_DQN", "did you mean +experiment=cartpole_dqn?", "experiment"),
    Case(T, "cartpole_dqn", "'cartpole_dqn' is an experiment: write +experiment=cartpole_dqn", "experiment", False),
    Case(T, "+experiment=cartpole_dqn,cartpole_ppo", "lists several values, which only a sweep runs", "experiment", False),
    Case(T, "algo=dqnn", "unknown algo 'dqnn': did you mean algo=dqn?", "algo"),
    Case(T, "algo=PPO", "unknown algo 'PPO': did you mean algo=ppo?", "algo"),
    Case(T, "model=cnn", "unknown model 'cnn': choose one of custom, impala_cnn, mlp, nature_cnn", "model"),
    Case(T, "env=gym", "unknown env 'gym': did you mean env=gymnasium?", "env"),
    Case(T, "replay=per", "unknown replay 'per': choose one of prioritized, uniform", "replay"),
    Case(T, "logger=tensorboard", "unknown logger 'tensorboard': choose one of console, wandb", "logger"),
    Case(T, "debug=fast", "unknown debug 'fast': choose one of smoke (e.g. +debug=smoke)", "debug"),
    Case(T, "params=big", "unknown params 'big': choose one of default", "params"),
    Case(T, "learner=fast", "unknown learner 'fast': choose one of default", "learner"),
    Case(T, "topology=ring", "unknown topology 'ring': choose one of a3c, apex_dqn", "topology", False),
    Case(T, "nature_cnn", "'nature_cnn' is a model: write model=nature_cnn", "model"),
    Case(T, "learner.lr", "'learner.lr' is not key=value: e.g. +experiment=cartpole_dqn or learner.lr=0.001", "learner"),
]  # fmt: skip

TRAIN_KEYS = [
    Case(T, "learner.lrr=0.1", "unknown config key 'learner.lrr': did you mean 'learner.lr'?", "learner", False),
    Case(T, "lr=0.001", "unknown config key 'lr': did you mean learner.lr?", "learner", False),
    Case(T, "env.idd=CartPole-v1", "unknown config key 'env.idd': did you mean 'env.id'?", "env"),
    Case(T, "model.hidden_size=[64]", "did you mean 'model.hidden_sizes'?", "model"),
    Case(T, "env.id=minigrid:MiniGrid-DoorKey-5x5-v0 model=nature_cnn", "the image part 'image' is 7x7, smaller than model=nature_cnn's 36x36: use model=impala_cnn (3x3 convolutions) or model=mlp", "model"),
    Case(T, "+experiment=minigrid_doorkey_ppo model.normalize_obs=true", "model.normalize_obs standardizes a vector observation, and this one holds an image (image): set model.normalize_obs=false", "model"),
    Case(T, "algo.gama=0.9", "unknown config key 'algo.gama': did you mean 'algo.gamma'?", "algo"),
    Case(T, f"{PPO} algo.clip_eps=0.1", "unknown config key 'algo.clip_eps': did you mean 'algo.clip'?", "algo"),
    Case(T, "stop.mean_retrun=400", "did you mean 'stop.mean_return'?", "stop"),
    Case(T, "+stop.eval_extras.flag_get=0.8", "stop.eval_extras.flag_get can never trigger: env=gymnasium episodes have no value 'flag_get'; they report none: remove stop.eval_extras", "stop"),
    Case(T, "+experiment=mario_dqn eval.every_seconds=null", "stop.eval_extras.flag_get can never trigger: periodic evaluation is off; set eval.every_seconds=60 (or eval.every_env_steps=N), or stop.eval_extras=null", "stop"),
    Case(T, "+experiment=mario_dqn stop.eval_extras={x_pos:900}", "stop.eval_extras already holds {'flag_get': 0.8} and a dict given for it is merged in, so 'x_pos' cannot be added that way: write +stop.eval_extras.x_pos=900 to add it, or stop.eval_extras=null +stop.eval_extras.x_pos=900 to replace the dict", "stop"),
    Case(T, "+experiment=mario_dqn stop.eval_extras={flag_get:0.9,x_pos:900}", "so 'x_pos' cannot be added that way: write +stop.eval_extras.x_pos=900 to add it", "stop"),
    Case(T, "+experiment=mario_dqn stop={eval_extras:{x_pos:900}}", "stop.eval_extras already holds {'flag_get': 0.8} and a dict given for it is merged in, so 'x_pos' cannot be added that way: write +stop.eval_extras.x_pos=900 to add it", "stop"),
    Case(T, "ray.runtime_env={env_vars:{OMP_WAIT_POLICY:PASSIVE}}", "ray.runtime_env already holds {} and a dict given for it is merged in, so 'env_vars' cannot be added that way: write +ray.runtime_env.env_vars={OMP_WAIT_POLICY:PASSIVE} to add it, or ray.runtime_env=null +ray.runtime_env.env_vars={OMP_WAIT_POLICY:PASSIVE} to replace the dict", "ray"),
    Case(T, "+experiment=mario_dqn stop.eval_extras.x_pos=900", "unknown config key 'stop.eval_extras.x_pos': add it with +stop.eval_extras.x_pos=...", "stop"),
    Case(T, "checkpoint.every=60", "unknown config key 'checkpoint.every': check its spelling", "checkpoint"),
    Case(T, "run_dir={out}/x", "unknown config key 'run_dir': the run dir is Hydra's: write hydra.run.dir=<dir>", "run_dir"),
    Case(T, "policies.a.model.hidden_sizes=[64]", "add it with +policies.a.model.hidden_sizes=...", "policies"),
    Case(T, "learner.lr=1,2", "learner.lr=1,2 lists several values, which only a sweep runs: add -m", "learner"),
]  # fmt: skip

TRAIN_ENV = [
    Case(T, "env.id=CartPol-v1", "did you mean CartPole-v1", "env", False),
    Case(T, "env.id=cartpole-v1", "unknown env id 'cartpole-v1' for env=gymnasium: did you mean CartPole-v1", "env"),
    Case(T, "env.id=", "unknown env id '' for env=gymnasium: see gymnasium.pprint_registry()", "env"),
    Case(T, "env.id=Pendulum-v1", "algo=dqn needs discrete actions", "env", False),
    Case(T, "+experiment=cartpole_dqn env.id=tests.envs.spaces_envs:Space-v0 +env.options.action=multidiscrete", "algo=dqn acts in one Discrete action space but tests.envs.spaces_envs:Space-v0 has MultiDiscrete([3 2 4]) actions: use algo=ppo / appo / a3c (a categorical per entry)", "env"),
    Case(T, "env.id=tests.cli.odd_envs:TextObservation-v0", "tests.cli.odd_envs:TextObservation-v0's observation is a Text space (Text(1, 8, charset=0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz)): raylab encodes Box, Discrete, MultiDiscrete, MultiBinary, and Tuple and Dict of them (text inside them is dropped): wrap the env to drop or encode it", "env"),
    Case(T, "env.backend=envpol", "unknown env.backend 'envpol': choose gymnasium or envpool", "env"),
    Case(T, "env.backend=envpool env.id=LunarLander-v3", "has no port of LunarLander-v3", "env", False),
    Case(T, "env.frame_skip=0", "env.frame_skip must be >= 1 (got 0)", "env"),
    Case(T, "env.frame_skip=2.5", "env.frame_skip must be an integer (got 2.5)", "env"),
    Case(T, "env.resize=84", "env.resize must be a list (got 84)", "env"),
    Case(T, "env.resize=[84]", "env.resize must be [height, width] or null", "env"),
    Case(T, "env.reward_clip=-1", "env.reward_clip must be > 0 or null (got -1.0)", "env"),
    Case(T, "env.reward_scale=0", "env.reward_scale=0 makes every reward 0: set env.reward_scale=1", "env"),
    Case(T, "env.max_episode_steps=0", "env.max_episode_steps must be > 0 or null (got 0)", "env"),
    Case(T, "env.noop_max=-1", "env.noop_max must be >= 0 (got -1)", "env"),
    Case(T, "env.grayscale=maybe", "env.grayscale must be true or false (got 'maybe')", "env"),
    Case(T, "env.normalize_reward_gamma=1.5", "env.normalize_reward_gamma must be in [0, 1) or null", "env"),
    Case(T, "env.factory=mypkg.envs:make", "env.factory goes with env=custom, not env=gymnasium: add env=custom", "env"),
    Case(T, "env=custom", "env=custom needs env.factory=<package.module:function>", "env", False),
    Case(T, "env=custom env.factory=os.path", "env.factory must be 'package.module:name' (got 'os.path')", "env"),
    Case(T, "env=custom env.factory=json:nofunc", "env.factory: module 'json' has no attribute 'nofunc'", "env"),
    Case(T, "env=snake env.options.dim=2", "bad env.options for env=snake: snake needs", "env"),
    Case(T, "env=snake +env.options.size=12", "unknown env.options.size for env=snake: valid options are dim", "env"),
    Case(T, "env=mario env.id=SuperMarioBros-1-1-v9", "valid ids are SuperMarioBros-v0..v3", "env", False),
    Case(T, "+experiment=atari_appo +env.options.reset_actions=2", "env.options.reset_actions must be a list of action indices for env=atari (got 2; OpenAI baselines' FIRE reset: [2])", "env"),
    Case(T, "+experiment=atari_appo +env.options.reset_actions=[6]", "env.options.reset_actions [6] names an action Pong-v5 lacks: it has 6 (0-5); fix env.options.reset_actions", "env"),
    Case(T, "+experiment=mario_dqn env.options.stall_steps=0", "env.options.stall_steps must be a whole number of agent steps >= 1 or null (off), got 0", "env"),
    Case(T, "+experiment=mario_dqn env.options.stall_steps=null env.options.stall_penalty=15", "env.options.stall_penalty=15 needs env.options.stall_steps (the agent steps without progress that make a stall), e.g. env.options.stall_steps=150", "env"),
    Case(T, "+experiment=mario_dqn env.options.stall_steps=150 env.options.stall_penalty=-1", "env.options.stall_penalty must be a number >= 0 (the game's reward units; 15 is a death's) or null (a stall is truncated), got -1", "env"),
    Case(T, "+experiment=mario_dqn env.options.stall_steps=5", "env.options.stall_steps=5 is 20 frames, within the 30 no-op frames a start may take (env.noop_max): set it above 7, or null", "env"),
    Case(T, "+experiment=mario_dqn env.options.repress_jump=yes", "env.options.repress_jump must be true or false, got 'yes'", "env"),
    Case(T, "+experiment=mario_dqn env.options.flag_reward=big", "env.options.flag_reward must be a number (the game's reward units, before env.reward_scale; 0: the game's own reward), got 'big'", "env"),
    Case(T, "+experiment=mario_dqn +eval.env_options.stall_steps=0", "eval.env_options: env.options.stall_steps must be a whole number of agent steps >= 1 or null (off), got 0", "eval"),
    Case(T, "+experiment=mario_dqn +eval.env_options.stall=5", "eval.env_options: unknown env.options.stall for env=mario: valid options are actions, stall_steps, flag_reward, stall_penalty, repress_jump", "eval"),
    Case(T, "+experiment=mario_dqn +eval.env_options.actions=right_only", "eval.env_options={'actions': 'right_only'} change the env's observation or action space, which the trained policy acts in: set only options that keep them (e.g. Mario's stall_steps)", "eval"),
    Case(T, "env=pettingzoo env.id=mpe2.nope_v3", "env=pettingzoo: cannot import mpe2.nope_v3", "env"),
]  # fmt: skip

TRAIN_MODEL_ALGO = [
    Case(T, "model.hidden_sizes=256", "model.hidden_sizes must be a list (got 256)", "model"),
    Case(T, "model.hidden_sizes=[0]", "model.hidden_sizes must be positive layer widths (got [0])", "model"),
    Case(T, "model.hidden_sizes=[-64,64]", "must be positive layer widths (got [-64, 64])", "model"),
    Case(T, "model.hidden_sizes=[64.5]", "model.hidden_sizes[0] must be an integer (got 64.5)", "model"),
    Case(T, "model.encoder=transformer", "model.encoder must be one of mlp, nature_cnn, impala_cnn, custom", "model"),
    Case(T, "model.norm=layerr", "model.norm must be one of none, batch (got 'layerr')", "model"),
    Case(T, "+experiment=pong_ppo model.conv_channels=[16,32]", "model.conv_channels must be 3 positive widths, one per convolution of the Nature CNN (got [16, 32]): e.g. model.conv_channels=[32,64,64]", "model"),
    Case(T, "model.conv_channels=[16,32,32]", "model.conv_channels=[16, 32, 32] applies to model=nature_cnn (the widths of its three convolutions), not model=mlp: remove it", "model"),
    Case(T, "model.dueling=yes", "model.dueling must be true or false (got 'yes')", "model"),
    Case(T, "model=custom", "model=custom needs model.factory=<package.module:function>", "model"),
    Case(T, "model=custom model.factory=nomod.x:make", "model.factory: module 'nomod.x' is not importable", "model"),
    Case(T, "algo.gamma=1.5", "algo.gamma must be in [0, 1] (got 1.5)", "algo"),
    Case(T, "algo.n_step=0", "algo.n_step must be >= 1 (got 0)", "algo"),
    Case(T, "algo.n_step=2.5", "algo.n_step must be an integer (got 2.5)", "algo"),
    Case(T, "algo.loss=mse", "algo.loss must be one of huber, quantile (got 'mse')", "algo"),
    Case(T, "algo.epsilon.base=2", "algo.epsilon.base must be in [0, 1] (got 2.0)", "algo"),
    Case(T, "algo.target_tau=0", "algo.target_tau must be in (0, 1] (got 0.0)", "algo"),
    Case(T, "algo.num_quantiles=0", "algo.num_quantiles must be >= 1 (got 0)", "algo"),
    Case(T, f"{PPO} algo.epochs=0", "algo.epochs must be >= 1 (got 0)", "algo"),
    Case(T, f"{PPO} algo.gae_lambda=1.5", "algo.gae_lambda must be in [0, 1] (got 1.5)", "algo"),
    Case(T, f"{PPO} algo.entropy_coef=-1", "algo.entropy_coef must be >= 0 (got -1.0)", "algo"),
    Case(T, f"{APPO} algo.entropy_coef=-0.01", "algo.entropy_coef must be >= 0 (got -0.01)", "algo"),
    Case(T, f"{APPO} algo.vtrace_lambda=1.2", "algo.vtrace_lambda must be in [0, 1] (got 1.2)", "algo"),
    Case(T, "algo=ppo", "topology=apex_dqn runs dqn, not algo=ppo: add algo=dqn, or topology=ppo", "algo"),
    Case(T, "eval.greedy=false", "eval.greedy=false applies to algo=a3c/ppo/appo (sampling from their policy), not algo=dqn", "eval", False),
    Case(T, "eval.starts=all", "eval.starts", "eval"),
    Case(T, "eval.starts=every", "eval.starts=every plays each of env.noop_max + 1 no-op starts in turn, and env.noop_max=0 gives one: set eval.starts=random, or env.noop_max=30", "eval"),
    Case(T, "env=fake env.noop_max=6 eval.starts=every", "eval.starts=every plays each of the 7 no-op starts (env.noop_max=6) once per 7 episodes: set eval.episodes=7 (or a multiple; got 10)", "eval"),
]  # fmt: skip

TRAIN_LEARNER_REPLAY_TOPOLOGY = [
    Case(T, "learner.lr=-1", "learner.lr must be > 0 (got -1.0)", "learner"),
    Case(T, "learner.lr=abc", "learner.lr must be a number (got 'abc')", "learner"),
    Case(T, "learner.batch_size=0", "learner.batch_size must be >= 1 (got 0)", "learner"),
    Case(T, "learner.batch_size=64.5", "learner.batch_size must be an integer (got 64.5)", "learner"),
    Case(T, "learner.batch_size=1e9", "lower learner.batch_size (replay.capacity=100000 holds fewer)", "learner", False),
    Case(T, "learner.device=gpu", "learner.device must be one of auto, cpu, cuda (got 'gpu')", "learner"),
    Case(T, "learner.precision=fp8", "learner.precision must be one of fp32, bf16, fp16, auto (got 'fp8')", "learner"),
    Case(T, "learner.grad_accumulation=3", "must be >= 1 and divide learner.batch_size=64", "learner", False),
    Case(T, "learner.max_grad_norm=0", "learner.max_grad_norm must be > 0 or null (got 0.0)", "learner"),
    Case(T, "learner.adam_eps=0", "learner.adam_eps must be > 0 (got 0.0)", "learner"),
    Case(T, "learner.lr_schedule=cosine", "learner.lr_schedule must be one of constant, linear (got 'cosine')", "learner"),
    Case(T, "learner.lr_final=1e-5", "learner.lr_final=1e-05 is the end of a linear schedule: add learner.lr_schedule=linear or remove learner.lr_final", "learner"),
    Case(T, "learner.lr_schedule=linear stop.env_steps=null stop.seconds=60", "learner.lr_schedule=linear moves the lr over stop.env_steps, which is not set: set stop.env_steps=N", "learner"),
    Case(T, "learner.num_gpus=-1", "learner.num_gpus must be >= 0 (got -1.0)", "learner"),
    Case(T, "learner.num_threads=0", "learner.num_threads must be >= 1", "learner"),
    Case(T, "learner.compile_mode=fastest", "learner.compile_mode must be one of auto, default, reduce-overhead", "learner"),
    Case(T, "replay.capacity=0", "replay.capacity must be >= 1 (got 0)", "replay"),
    Case(T, "replay.kind=priority", "replay.kind must be one of uniform, prioritized (got 'priority')", "replay"),
    Case(T, "replay=prioritized replay.alpha=1.5", "replay.alpha must be in [0, 1] (got 1.5)", "replay"),
    Case(T, "replay.beta=2", "replay.beta and replay.beta_final must be in [0, 1] (got 2.0, 1.0)", "replay"),
    Case(T, "replay.min_size=0", "replay.min_size must be >= 1 (got 0)", "replay"),
    Case(T, "replay.num_shards=3", "set replay.num_shards <= 2", "replay", False),
    Case(T, "replay.frame_dedup=maybe", "replay.frame_dedup must be one of auto, true, false (got 'maybe')", "replay"),
    Case(T, "topology.num_workers=0", "set topology.num_workers=1 or more", "topology", False),
    Case(T, "topology.num_workers=two", "topology.num_workers must be an integer (got 'two')", "topology"),
    Case(T, "topology.num_workers=auto ray.address=10.0.0.1:6379", "topology.num_workers=auto probes this machine, not a cluster's nodes (ray.address is set): give topology.num_workers a number", "topology"),
    Case(T, "topology.envs_per_worker=0", "topology.envs_per_worker must be >= 1 (got 0)", "topology"),
    Case(T, "topology.rollout_length=0", "topology.rollout_length must be >= 1 (got 0)", "topology"),
    Case(T, "topology.worker_cpus=-1", "topology.worker_cpus must be >= 0", "topology"),
    Case(T, "topology.max_actor_restarts=-2", "topology.max_actor_restarts must be -1 (always), 0 or more", "topology"),
    Case(T, "topology=ppo", "topology=ppo runs ppo, not algo=dqn: add algo=ppo", "topology"),
    Case(T, "topology.chunks_in_flight=2", "chunks_in_flight=2 applies to topology=appo (its actors queue sample calls), not topology=apex_dqn", "topology", False),
    Case(T, "topology.inference=remote", "unknown topology.inference 'remote': choose local or central", "topology"),
    Case(T, f"{A3C} topology.inference=central", "topology.inference=central serves the rollout actors of topology=apex_dqn/ppo/appo; topology=a3c acts in its own workers", "topology"),
    Case(T, f"{APPO} topology.inference_actors=2", "topology.inference_actors=2 sets the inference actors of topology.inference=central: add topology.inference=central, or remove it", "topology"),
    Case(T, f"{APPO} topology.inference=central topology.env_splits=3", "topology.env_splits=3 must divide topology.envs_per_worker=32 (equal parts)", "topology"),
    Case(T, f"{RIVALS} topology.inference=central", "topology.inference=central serves one policy", "topology"),
    Case(T, "params.num_shards=0", "params.num_shards must be >= 1 (got 0)", "params"),
    Case(T, f"{A3C} params.pushes_in_flight=-1", "params.pushes_in_flight must be >= 0 (got -1)", "params"),
    Case(T, f"{A3C} params.shard_cpus=-1", "params.shard_cpus must be >= 0", "params"),
]  # fmt: skip

TRAIN_RUN = [
    Case(T, "stop.env_steps=0", "stop.env_steps must be > 0 or null (got 0)", "stop"),
    Case(T, "stop.seconds=10m", "stop.seconds must be a number (got '10m')", "stop"),
    Case(T, "stop.env_steps=null stop.seconds=null", "no stop condition", "stop", False),
    Case(T, "stop.train_return=1000", "stop.train_return=1000 can never trigger: CartPole-v1 returns at most 500", "stop"),
    Case(T, "eval.episodes=0", "eval.episodes must be >= 1", "eval"),
    Case(T, "eval.every_seconds=-5", "eval.every_seconds must be > 0 or null (got -5.0)", "eval"),
    Case(T, "eval.final_episodes=-1", "eval.final_episodes must be >= 0", "eval"),
    Case(T, "eval.greedy=maybe", "eval.greedy must be true or false (got 'maybe')", "eval"),
    Case(T, "env=fake topology=local eval.video=true", "env Fake-v0 cannot render frames and its observations are not images: set eval.video=false", "eval"),
    Case(T, f"{RIVALS} eval.video=true", "eval.video records one env's game, and env=snake_arena is a multi-agent env, which has no video yet: set eval.video=false", "eval"),
    Case(T, "checkpoint.every_seconds=0", "checkpoint.every_seconds must be > 0 or null (got 0.0)", "checkpoint"),
    Case(T, "checkpoint.keep=0", "checkpoint.keep must be >= 1", "checkpoint"),
    Case(T, "checkpoint.replay=maybe", "checkpoint.replay must be true or false (got 'maybe')", "checkpoint"),
    Case(T, f"{PPO} checkpoint.replay=true", "checkpoint.replay=true applies to algo=dqn (it snapshots the replay buffer), not algo=ppo", "checkpoint", False),
    Case(T, "logger.report_every_seconds=0", "logger.report_every_seconds must be > 0", "logger"),
    Case(T, "logger.console=loud", "logger.console must be true or false (got 'loud')", "logger"),
    Case(T, "logger.wandb=true", "logger.wandb must be a mapping (got True)", "logger"),
    Case(T, "ray.num_cpus=0", "ray.num_cpus must be > 0 or null (got 0)", "ray"),
    Case(T, "ray.connect_timeout_s=0", "ray.connect_timeout_s must be > 0", "ray"),
    Case(T, "ray.object_store_memory=10", "is below Ray's minimum of 78643200 bytes (75 MiB)", "ray"),
    Case(T, "ray.placement_wait_s=-1", "ray.placement_wait_s must be >= 0 (0: fail at once)", "ray"),
    Case(T, "ray.runtime_env=conda", "ray.runtime_env must be a mapping (got 'conda')", "ray"),
    Case(T, "seed=-1", "seed must be between 0 and 4294967295 (got -1)", "seed", False),
    Case(T, "seed=abc", "seed must be an integer (got 'abc')", "seed"),
    Case(T, "seed=[1,2]", "seed must be an integer (got [1, 2])", "seed"),
    Case(T, "overwrite=yes", "overwrite must be true or false (got 'yes')", "overwrite"),
    Case(T, "resume={missing}", "does not exist: pass the run dir of the run to continue", "resume"),
    Case(T, "resume={empty}", "pass a run dir that has checkpoints/*.pt", "resume", False),
    Case(T, "resume={file}", "is a file: resume takes the run dir", "resume", False),
    Case(T, "hydra.run.dir={file}/run", "which is a file, not a directory: choose another hydra.run.dir", "run_dir", False),
    Case(T, "hydra.run.dir={run}", "already holds a run (config.yaml), which this one would train over", "run_dir", False),
    Case(T, "resume={live}", "is in use: a run is training in it now: wait for it to end, or stop it, then resume it", "resume", False),
    Case(T, "hydra.run.dir={live} overwrite=true", "is in use: a run is training in it now: wait for it to end, or choose another hydra.run.dir", "run_dir", False),
    Case(T, "hydra.run.dir=/proc/raylab_run", "cannot write hydra.run.dir /proc/raylab_run (No such file or directory in /proc)", "run_dir"),
    Case(T, "+policies.a.model.hidden_sizes=[64]", "policies a need policy_mapping: set policy_mapping", "policies"),
    Case(T, f"{RIVALS} +policies.rival.lr=0.5", "unknown config key 'policies.rival.lr': valid keys: algo", "policies"),
    Case(T, "sweep.objective=loss", "sweep.objective must be one of eval_return, time_to_target", "sweep"),
]  # fmt: skip

EVALUATE = [
    Case(E, "", "run_dir is required: python -m raylab.evaluate run_dir=", "evaluate", False),
    Case(E, "{run}", "expected key=value, got", "evaluate"),
    Case(E, "--run_dir={run}", "options are key=value, without dashes: write run_dir=", "evaluate"),
    Case(E, "run_dir={missing}", "does not exist: pass a run directory", "evaluate", False),
    Case(E, "run_dir={file}", "is a file, not a run directory", "evaluate"),
    Case(E, "run_dir={run} env_options.=true", "'env_options.' names no env option: write env_options.<name>=<value>, e.g. env_options.repress_jump=true", "evaluate"),
    Case(E, "run_dir={run} env_options.episode_length=[5", "env_options.episode_length=[5 is not a value raylab.train would read: e.g. true, 150, null", "evaluate"),
    Case(E, "run_dir={run} env_options={repress_jump:true}", "env_options takes one option per argument: write env_options.<name>=<value>, e.g. env_options.repress_jump=true", "evaluate"),
    Case(E, "run_dir={empty}", "not found: run_dir must be a raylab run directory (it has config.yaml)", "evaluate"),
    Case(E, "run_dir={bad}", "does not parse as YAML at line 2", "evaluate", False),
    Case(E, "run_dir={run}/checkpoints/final.pt", "is a checkpoint file, not a run directory", "evaluate", False),
    Case(E, "run_dir={run} episodes=0", "episodes must be >= 1, got 0", "evaluate"),
    Case(E, "run_dir={run} episodes=ten", "episodes must be an integer, got 'ten'", "evaluate"),
    Case(E, "run_dir={run} episodes=2.5", "episodes must be an integer, got '2.5'", "evaluate"),
    Case(E, "run_dir={run} epsiodes=3", "unknown option 'epsiodes': valid options are run_dir", "evaluate", False),
    Case(E, "run_dir={run} --episodes 3", "options are key=value, without dashes: write episodes", "evaluate"),
    Case(E, "run_dir={run} video=yes2", "video must be true or false, got 'yes2'", "evaluate"),
    Case(E, "run_dir={run} video_format=avi", "unknown video_format 'avi': choose mp4 or gif", "evaluate"),
    Case(E, "run_dir={run} fps=0", "fps must be >= 1, got 0", "evaluate"),
    Case(E, "run_dir={run} max_video_steps=0", "max_video_steps must be >= 1, got 0", "evaluate"),
    Case(E, "run_dir={run} seed=x", "seed must be an integer, got 'x'", "evaluate"),
    Case(E, "run_dir={run} starts=all", "unknown starts 'all': choose random or every", "evaluate"),
    Case(E, "run_dir={run} starts=every", "starts=every plays each no-op start in turn, and this run's env.noop_max=0 gives one: pass starts=random", "evaluate"),
    Case(E, "run_dir={run} checkpoint=step_9.pt", "checkpoint 'step_9.pt' not found in", "evaluate", False),
    Case(E, "run_dir={run}", "is corrupt or not a raylab checkpoint (UnpicklingError)", "evaluate", False),
]  # fmt: skip

BENCH = [
    Case("bench", "nope", "argument command: invalid choice: 'nope' (choose from", "bench"),
    Case("bench timed", "", "the following arguments are required: --duration-hours, --mode, --output-dir", "bench"),
    Case("bench timed", "--duration-hours 0 --mode sequential --output-dir {out}", "--duration-hours must be > 0, got 0", "bench"),
    Case("bench timed", "--duration-hours x --mode sequential --output-dir {out}", "argument --duration-hours: invalid float value: 'x'", "bench"),
    Case("bench timed", "--duration-hours 0.1 --mode serial --output-dir {out}", "argument --mode: invalid choice: 'serial'", "bench"),
    Case("bench timed", "--duration-hours 0.1 --mode sequential --output-dir {file}", "is a file, not a directory: choose another --output-dir", "bench", False),
    Case("bench timed", "--duration-hours 0.1 --mode sequential --output-dir {run}", "already holds a run: choose a new directory", "bench", False),
    Case("bench timed", "--duration-hours 0.1 --mode parallel --output-dir {out} topology=local", "--mode parallel needs a Ray topology", "bench", False),
    Case("bench timed", "--duration-hours 0.1 --mode sequential --output-dir {out} learner.lrr=1", "unknown config key 'learner.lrr'", "bench"),
    Case("bench timed", "--duration-hours 0.1 --mode sequential --output-dir {out} --seed 3", "unrecognized arguments: --seed", "bench"),
    Case("bench timed", "--duration-hours 0.1 --mode sequential --output-dir {out} --checkpoint-every-minutes 0", "--checkpoint-every-minutes must be > 0", "bench"),
    Case("bench compare", "--sequential {empty} --parallel {empty}", "has no benchmark_metrics.json and metrics.jsonl", "bench", False),
    Case("bench compare", "--sequential --parallel {empty}", "argument --sequential: expected at least one argument", "bench"),
    Case("bench learn", "--output {out}/o.json --seeds", "argument --seeds: expected at least one argument", "bench"),
    Case("bench learn", "--seeds 0", "the following arguments are required: --output", "bench"),
    Case("bench learn", "--output {out}/o.json --variant =topology=local", "--variant needs NAME=OVERRIDES, got '=topology=local'", "bench"),
    Case("bench learn", "--output {out}/o.json --variant a=topology=local --source a={missing}", "--source needs NAME=DIR, a --variant NAME and DIR/raylab", "bench"),
    Case("bench learn", "--output {out}/o.json learner.lrr=1", "unknown config key 'learner.lrr': did you mean 'learner.lr'?", "bench"),
    Case("bench learn", "--output {file}/o.json", "which is a file: choose another path", "bench"),
    Case("bench scaling", "--workers 0 --output {out}/s.json", "--workers must be >= 1, --in-flight >= 0 and --repeats >= 1", "bench"),
    Case("bench e2e", "--output {out}/e.json --experiment nope", "unknown experiment 'nope': choose one of", "bench"),
    Case("bench e2e", "--output {out}/e.json --seconds 0", "argument --seconds: must be > 0 seconds, got 0", "bench"),
    Case("bench e2e", "--output {out}/e.json --seeds", "argument --seeds: expected at least one argument", "bench"),
    Case("bench e2e", "--output {out}/e.json --rllib-python {missing}", "is not a file: give a venv's python with ray[rllib]", "bench"),
    Case("bench sampling", "--output {out}/s.json --workers 0", "argument --workers: must be >= 1, got 0", "bench"),
    Case("bench sampling", "--output {out}/s.json --calls 0", "argument --calls: must be >= 1, got 0", "bench"),
    Case("bench sampling", "--output {out}/s.json --seconds 0", "argument --seconds: must be > 0 seconds, got 0", "bench"),
    Case("bench arena", "--output {out}/a.json --snakes 0", "argument --snakes: must be >= 1, got 0", "bench"),
    Case("bench arena", "--output {out}/a.json --slots 0", "argument --slots: must be >= 1, got 0", "bench"),
    Case("bench arena", "--snakes 4", "the following arguments are required: --output", "bench"),
    Case("bench envs", "--output {out}/e.json --families atari", "argument --families: invalid choice: 'atari'", "bench"),
    Case("bench envs", "--output {out}/e.json --seconds -1", "argument --seconds: must be > 0 seconds, got -1", "bench"),
    Case("bench envs", "--output {empty}", "is a directory: give a file path", "bench"),
    Case("bench learner", "--output {out}/l.json --algo sac", "argument --algo: invalid choice: 'sac'", "bench"),
    Case("bench learner", "--output {out}/l.json --device tpu", "argument --device: invalid choice: 'tpu'", "bench"),
    Case("bench snake_dqn_loop", "--output {out}/l.json --rounds 0", "argument --rounds: must be >= 1, got 0", "bench"),
    Case("bench timer_overhead", "--output {out}/l.json --seconds 0", "argument --seconds: must be > 0 seconds, got 0", "bench"),
    Case("bench replay_snapshot", "--output {out}/l.json --repeats 0", "argument --repeats: must be >= 1, got 0", "bench"),
]  # fmt: skip

CASES = [
    *TRAIN_GROUPS,
    *TRAIN_KEYS,
    *TRAIN_ENV,
    *TRAIN_MODEL_ALGO,
    *TRAIN_LEARNER_REPLAY_TOPOLOGY,
    *TRAIN_RUN,
    *EVALUATE,
    *BENCH,
]

SUBPROCESS = [CASES.index(c) for c in (TRAIN_GROUPS[0], TRAIN_RUN[-1], EVALUATE[3], BENCH[5])]
"""The cases also run as real ``python -m`` processes: the in-process path gives the same line and status."""


def command(case: Case) -> str:
    """The command line as a user types it, with the placeholder paths of SHOWN."""
    module = {"train": "raylab.train", "evaluate": "raylab.evaluate"}.get(case.cli, "raylab.bench")
    sub = case.cli.split()[1:] if case.cli.startswith("bench") else []
    text = " ".join(["python -m", module, *sub, case.args]).strip()
    for placeholder, shown in SHOWN.items():
        text = text.replace(placeholder, shown)
    return text


def markdown() -> str:
    """The docs page's table (docs/catalogue.md): each case's command and the part of its line it is tested for."""
    rows = ["| # | section | command | the line says | a row in the errors table |", "|---|---|---|---|---|"]
    for k, case in enumerate(CASES, 1):
        cells = [str(k), case.section, f"`{command(case)}`", f"`{case.expected}`", "" if case.new else "yes"]
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    listed = sum(not case.new for case in CASES)
    summary = (
        f"{len(CASES)} cases; {listed} of them also have a row in the table of [When something is wrong](errors.md)."
    )
    return summary + "\n\n" + "\n".join(rows) + "\n"
