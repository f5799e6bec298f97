"""raylab: a Ray-based distributed actor/learner framework for deep RL.

Entry points: ``python -m raylab.train`` (Hydra), ``python -m raylab.bench`` (benchmarks). The plain classes
(RolloutWorker, ReplayBuffer, Learner, ...) run without Ray; only ``raylab.remote`` and ``raylab.topology``
import it.
"""

__version__ = "0.1.0"
