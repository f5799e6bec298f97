"""``bench learn --reuse`` reads a finished run back only if it ran with the settings its overrides resolve to now
(raylab/bench/same_settings.py): a run's own config, through JSON as benchmark_metrics.json keeps it, is the same
run; a changed default, a key in a free-form mapping, a reordered policy mapping or another seed is not; a field
added to the schema since the run is taken at its default, and a topology size left to the machine is not
compared."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from raylab.bench.same_settings import difference, settings_for


def as_recorded(values: dict[str, Any]) -> dict[str, Any]:
    """A resolved config as a finished run keeps it: through JSON, with keys the comparison leaves out."""
    return json.loads(json.dumps({**values, "run_dir": "/elsewhere", "logger": {"console": False}}))


@pytest.mark.parametrize(
    "overrides",
    [
        ["+experiment=atari_appo", "env.id=BeamRider-v5", "stop.seconds=null"],
        ["+experiment=simple_tag_mixed_ppo"],
        ["+experiment=snake_arena_rivals_ppo"],
    ],
)
def test_a_runs_own_config_through_json_is_the_same_run(overrides):
    asked = settings_for(overrides, seed=0)
    assert difference(as_recorded(asked.values), asked) is None


def test_a_changed_default_another_seed_and_a_new_key_in_a_free_form_mapping_are_differences():
    asked = settings_for(["+experiment=atari_appo"], seed=0)
    ran = as_recorded(asked.values)
    ran["algo"]["vtrace_lambda"] = 0.5  # the recipe said otherwise when it ran
    assert difference(ran, asked) == f"algo.vtrace_lambda was 0.5, now {asked.values['algo']['vtrace_lambda']!r}"
    assert difference(as_recorded(asked.values), settings_for(["+experiment=atari_appo"], seed=1)) == (
        "seed was 0, now 1"
    )
    ran = as_recorded(asked.values)
    del ran["env"]["options"]["episodic_life"]  # a key of the env's own: the run did not set it
    assert difference(ran, asked) == "env.options.episodic_life was None, now True"
    ran = as_recorded(asked.values)
    ran["eval"]["env_options"] = {"repeat_action_probability": 0.25}
    assert difference(ran, asked) is not None and difference(ran, asked).startswith("eval.env_options")


def test_a_field_added_since_is_taken_at_its_default_and_one_removed_since_is_a_difference():
    asked = settings_for(["+experiment=atari_appo"], seed=0)
    ran = as_recorded(asked.values)
    del ran["learner"]["lr_schedule"], ran["model"]["conv_channels"]  # fields the schema did not have then ...
    assert difference(ran, asked) is None  # ... which the recipe leaves at their defaults: what the run did
    del ran["algo"]["vtrace_lambda"]  # one the recipe sets off its default (1): the run cannot have had 0.95
    assert difference(ran, asked) == "algo.vtrace_lambda was 1.0, now 0.95"
    ran = as_recorded(asked.values)
    ran["algo"]["retired"] = 3  # a setting the schema no longer has
    assert difference(ran, asked) == "algo.retired was 3, now None"
    del ran["algo"]["vtrace_lambda"]  # a config that no longer builds: a field it lacks is taken to match
    assert difference(ran, asked) == "algo.retired was 3, now None"


def test_the_policy_mapping_is_compared_in_order_and_no_mapping_is_an_empty_one():
    asked = settings_for(["+experiment=simple_tag_mixed_ppo"], seed=0)
    mapping = asked.values["policy_mapping"]
    assert len(mapping) >= 2
    ran = as_recorded(asked.values)
    ran["policy_mapping"] = dict(reversed(list(mapping.items())))  # the first pattern that matches wins
    assert difference(ran, asked) is not None and difference(ran, asked).startswith("policy_mapping")
    single = settings_for(["+experiment=cartpole_ppo"], seed=0)
    ran = as_recorded(single.values)
    ran["policies"], ran["policy_mapping"] = None, None
    assert difference(ran, single) is None
    ran["policies"] = copy.deepcopy(asked.values["policies"])  # a per-policy override the recipe no longer has
    assert difference(ran, single) is not None and difference(ran, single).startswith("policies")


def test_a_topology_size_left_to_the_machine_is_not_compared():
    asked = settings_for(["+experiment=cartpole_ppo", "topology.num_workers=auto"], seed=0)
    ran = as_recorded(asked.values)
    ran["topology"]["num_workers"] = 7  # what the machine that ran it sized
    assert difference(ran, asked) is None
    ran["topology"]["rollout_length"] += 1
    assert difference(ran, asked) is not None
