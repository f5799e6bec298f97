"""The benchmark tables (docs/tables/, the docs site's benchmark pages): every table renders from
the committed JSON, every committed result of a kind they render is in one, every table is on a docs page, and the
short README quotes its table as generated."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from docs import tables
from docs.tables import BENCHMARKS, TABLES, module_bullets, table

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


@pytest.mark.parametrize("name", list(TABLES))
def test_every_table_renders_from_the_committed_json(name):
    text = table(name)
    blocks = re.findall(r"(?m)(?:^\|.*\n)+", text)  # each Markdown table in it
    assert blocks, f"table {name} rendered no table"
    for block in blocks:
        header, rule, *body = block.splitlines()
        columns = len(re.split(r"(?<!\\)\|", header.strip())) - 2
        assert rule == "|" + "---|" * columns
        assert body, f"table {name} has no rows"
        for row in body:
            cells = re.split(r"(?<!\\)\|", row.strip())[1:-1]
            assert len(cells) == columns, row
            assert all(cell.strip() for cell in cells), f"empty cell in {row}"
    assert not re.search(r"\b(None|nan|inf)\b", text), text
    for file in TABLES[name].files:
        assert f"benchmarks/{file}" in text
    assert ("cores" in text and "commit" in text) or "machine not recorded" in text  # each file's machine line


def test_every_committed_result_of_a_rendered_kind_has_a_table():
    """A new `make bench-*` result (learner_cuda.json, another *_learning.json) must not go unrendered."""
    claimed = {file for spec in TABLES.values() for file in spec.files}
    kinds = {json.loads((BENCHMARKS / file).read_text())["benchmark"] for file in claimed}
    unclaimed = [
        path.name
        for path in sorted(BENCHMARKS.glob("*.json"))
        if json.loads(path.read_text()).get("benchmark") in kinds and path.name not in claimed
    ]
    assert not unclaimed, f"benchmark results with no table in docs/tables/registry.py: {unclaimed}"


def test_every_table_is_on_a_docs_page():
    pages = "\n".join(path.read_text() for path in DOCS.rglob("*.md"))
    missing = [name for name in TABLES if f"<!-- raylab:bench {name} -->" not in pages]
    assert not missing, f"tables no docs page shows: {missing}"


def test_the_short_readme_quotes_its_table_as_generated():
    """README.md's headline table is pasted from `python -m docs.tables`: it must still be what
    the JSON says."""
    readme = (ROOT / "README.md").read_text()
    assert table("cartpole_ppo_vs_rllib", link=lambda file: f"benchmarks/{file}") in readme


def test_figures_match_their_json():
    text = table("cartpole_dqn_learning")
    data = json.loads((BENCHMARKS / "cartpole_dqn_learning.json").read_text())
    summary = data["summary"]["apex_dqn"]
    assert f"{round(summary['median_env_steps']):,}" in text
    assert f"{summary['median_train_seconds']:.1f} s" in text
    assert data["machine"]["date"][:10] in text


def test_links_point_where_the_caller_says(tmp_path):
    text = table("e2e_mario", link=lambda file: f"assets/benchmarks/{file}")
    assert "[`e2e_mario.json`](assets/benchmarks/e2e_mario.json)" in text
    assert "[`e2e_mario_free.json`](assets/benchmarks/e2e_mario_free.json)" in text


def test_the_command_line_prints_every_table(capsys):
    assert tables.main([]) == 0
    out = capsys.readouterr().out
    assert out.count("\n### ") + out.startswith("### ") == len(TABLES)
    with pytest.raises(SystemExit):
        tables.main(["no_such_table"])


def test_module_bullets_reads_a_docstrings_variants(tmp_path):
    module = tmp_path / "m.py"
    module.write_text('"""Title.\n\n- ``a``: first,\n  continued.\n- ``b``: uses ``a``.\n\nAfter.\n"""\n')
    assert module_bullets(module) == {"a": "first, continued.", "b": "uses `a`."}


def _mario_run(variant: str, seed: int, steps: int, curve: list, evals: list, final: dict | None = None) -> dict:
    fields = {"train_curve": curve, "eval_extras": evals, "final_eval_extras": final, "env_frames_per_s": 600.0 + seed}
    return {"variant": variant, "seed": seed, "ok": True, "env_steps": steps, "train_seconds": 2400.0, **fields}


STALL = ["env.options.flag_reward=50", "env.options.stall_steps=150"]
MARIO_TABLE = {
    "variants": {"default": [], "flag_reward": STALL[:1], "flag_stall": STALL},
    "runs": [
        _mario_run("flag_reward", 0, 900_000, [[1, 100, 400, 9.0], [2, 400_000, 1_600_000, 999.0]], []),
        *(_mario_run("flag_stall", seed, 900_000, [[1, 100, 400, 1.0], [2, 390_000, 1_560_000, value],
                                                   [3, 500_000, 2_000_000, 5000.0]],
                     [[300, 200_000, {"flag_get": 0.0, "x_pos": 500.0}],
                      [600, 400_000, {"flag_get": 0.1, "x_pos": 800.0 + seed}] if seed != 2 else [600, 400_000, {}],
                      [1200, 450_000, {"flag_get": 0.5, "x_pos": 3000.0}]])
          for seed, value in ((0, 1000.0), (1, 1400.0), (2, 3000.0))),
        {**_mario_run("flag_stall", 3, 0, [], []), "ok": False},
    ],
}  # fmt: skip


def _mario_rows(trials: dict) -> dict[str, list[str]]:
    from docs.tables.learning import mario_trials

    lines = [line for line in mario_trials([trials, MARIO_TABLE]).splitlines() if line.startswith("| `")]
    return {cells[0]: cells for cells in ([c.strip() for c in line.strip("|").split("|")] for line in lines)}


def test_a_mario_trial_is_set_beside_the_runs_of_the_variant_it_changes():
    final = {"flag_get": 0.2, "x_pos": 2100.0}
    trials = {
        "variants": {
            "right_only": [*STALL, "env.options.actions=right_only", "stop.seconds=2400"],
            "longer_stall": ["env.options.flag_reward=50", "env.options.stall_steps=300"],
            "broken": [*STALL, "algo.n_step=5"],
        },
        "runs": [
            _mario_run("right_only", 0, 400_000, [[1, 400_000, 1_600_000, 1800.0]], [], final),
            _mario_run("longer_stall", 0, 400_000, [[1, 400_000, 1_600_000, 700.0]], [], {"flag_get": 0.0}),
            {**_mario_run("broken", 0, 0, [], []), "ok": False},
        ],
    }  # fmt: skip
    rows = _mario_rows(trials)
    right_only = rows["`right_only`"]
    assert right_only[1:4] == ["`env.options.actions=right_only`", "`flag_stall`", "400,000 (40 min)"]
    # each seed's return at the last point by 1.6M frames; the ratio is to their median (1,400), not their mean
    assert right_only[4:7] == ["1800.0", "seed 0: 1000.0; seed 1: 1400.0; seed 2: 3000.0", "1.29×"]
    # the base's last evaluation at or before 400,000 steps, "—" where it holds no x-position; the failed seed left out
    assert right_only[7:9] == ["0.2, 2,100", "seed 0: 0.1, 800 (at 400,000); seed 1: 0.1, 801 (at 400,000); seed 2: —"]
    assert right_only[9:] == ["600", "seed 0: 600; seed 1: 601; seed 2: 602"]
    # a changed value of the base's is a change of that base, not a run of a variant without it
    assert rows["`longer_stall`"][1:3] == ["`env.options.stall_steps=300`", "`flag_stall`"]
    assert rows["`longer_stall`"][7] == "—"  # a final evaluation without its x-position
    assert rows["`broken`"][1:4] == ["`algo.n_step=5`", "`flag_stall`", "failed"]


def test_frames_per_second_name_their_cpu_only_when_the_runs_trained_on_different_ones():
    from docs.tables.format import fps_cells, run_cpu

    run = _mario_run("right_only", 0, 400_000, [[1, 400_000, 1_600_000, 1800.0]], [])
    trials = {"variants": {"right_only": [*STALL, "env.options.actions=right_only"]}, "runs": [run]}
    assert _mario_rows(trials)["`right_only`"][9:] == ["600", "seed 0: 600; seed 1: 601; seed 2: 602"]
    # a trial trained on another host than its bases: every rate says which, since a rate moves with the host
    base = {**MARIO_TABLE, "machine": {"cpu": "AMD EPYC"}}
    trials = {**trials, "machine": {"cpu": "Intel Xeon"}}
    from docs.tables.learning import mario_trials

    row = next(line for line in mario_trials([trials, base]).splitlines() if line.startswith("| `right_only`"))
    assert row.rstrip(" |").endswith(
        "600 (Intel Xeon) | seed 0: 600 (AMD EPYC); seed 1: 601 (AMD EPYC); seed 2: 602 (AMD EPYC)"
    )
    # a run read back from an earlier invocation keeps that invocation's stamp, not the file's newest one
    assert run_cpu({"recorded": {"cpu": "AMD EPYC"}}, {"machine": {"cpu": "Intel Xeon"}}) == "AMD EPYC"
    assert run_cpu({}, {}) == "not recorded"
    assert run_cpu({}, {"machine": {"cpu": "Intel(R) Xeon(R) Processor"}}) == "Intel Xeon"  # as /proc/cpuinfo says it
    assert run_cpu({"recorded": {"cpu": "AMD EPYC", "native_bf16": True}}, {}) == "AMD EPYC with native bf16"
    assert run_cpu({}, {"machine": {"cpu": "AMD EPYC", "native_bf16": False}}) == "AMD EPYC"
    assert fps_cells([(3970.4, "a"), (5330.0, "a")]) == ["3,970", "5,330"]


def test_a_mario_trial_equally_near_two_variants_is_refused():
    from docs.tables.learning import _base_variant

    variants = {"a": ["env.options.x=1"], "b": ["env.options.y=1"]}
    assert _base_variant(["env.options.x=1", "env.options.z=3"], variants) == "a"
    assert _base_variant(["algo.n_step=5"], {"x": ["env.options.x=1"]}) is None
    # a long run made with the trial's own settings is the trial again, not the variant it changes
    same = {"a": ["env.options.x=1"], "a_lr": ["env.options.x=1", "learner.lr=0.1"]}
    assert _base_variant(["env.options.x=1", "learner.lr=0.1"], same) == "a"
    with pytest.raises(ValueError, match="equally near the variants"):
        _base_variant(["env.options.x=2", "env.options.y=2"], variants)


def _atari_run(game: str, steps: int, curve: list, greedy: float, seconds: float, fps: float, ok: bool = True):
    return {
        "variant": game, "seed": 0, "ok": ok, "env_steps": steps, "train_curve": curve, "final_eval_return": greedy,
        "final_eval_std": 1.0, "train_seconds": seconds, "env_frames_per_s": fps,
    }  # fmt: skip


def test_a_recipe_change_sets_each_game_beside_its_earlier_run_at_the_frames_both_reached():
    """Each game of the later table beside the same game of the earlier one, the training return read at the
    frames both runs reached (not each run's own end), and a game the later table has not run again named."""
    from docs.tables.atari import atari_recipe_change

    old = {"runs": [
        _atari_run("Breakout", 2_500_000, [[0, 1e6, 4e6, 10.0], [0, 2.5e6, 10e6, 50.0]], 74.4, 1860, 5330),
        _atari_run("BeamRider", 2_500_000, [[0, 2.5e6, 10e6, 1600.0]], 2600.0, 2640, 3770),
    ]}  # fmt: skip
    new = {"runs": [
        # stopped at 1M agent steps: read both at 4M frames, where the earlier run's return was 10
        _atari_run("Breakout", 1_000_000, [[0, 5e5, 2e6, 5.0], [0, 1e6, 4e6, 30.0]], 244.3, 2520, 3970),
        _atari_run("BeamRider", 2_500_000, [], 0.0, 10, 10, ok=False),
    ]}  # fmt: skip
    text = atari_recipe_change([old, new], before="2 epochs", after="4 epochs")
    rows = [line.split(" | ") for line in text.splitlines() if line.startswith("| Breakout")]
    assert len(rows) == 1
    assert rows[0][1:5] == ["4.00M", "10.0", "30.0", "3.00×"]
    assert rows[0][5:7] == ["74.4 ± 1.00", "244.3 ± 1.00"]
    assert "| BeamRider" not in text and "Not run again yet: BeamRider." in text
    # the same games on two hosts: each frames/s names its CPU, since a rate moves with the host
    text = atari_recipe_change(
        [{**old, "machine": {"cpu": "AMD EPYC"}}, {**new, "machine": {"cpu": "Intel(R) Xeon(R) Processor"}}],
        before="2 epochs", after="4 epochs",
    )  # fmt: skip
    (row,) = [line.split(" | ") for line in text.splitlines() if line.startswith("| Breakout")]
    assert row[-2:] == ["5,330 (AMD EPYC)", "3,970 (Intel Xeon) |"]


def test_a_recipe_change_gives_no_ratio_against_a_negative_return_and_names_a_game_new_to_it():
    """Pong's training return starts near -21: a ratio to a negative return would read as its opposite."""
    from docs.tables.atari import atari_recipe_change

    old = {"runs": [_atari_run("Pong", 1_000_000, [[0, 1e6, 4e6, -20.0]], -21.0, 60, 4000)]}
    new = {"runs": [
        _atari_run("Pong", 1_000_000, [[0, 1e6, 4e6, -10.0]], 18.0, 60, 3000),
        _atari_run("Qbert", 1_000_000, [[0, 1e6, 4e6, 500.0]], 700.0, 60, 3000),
    ]}  # fmt: skip
    text = atari_recipe_change([old, new], before="a", after="b")
    (row,) = [line.split(" | ") for line in text.splitlines() if line.startswith("| Pong")]
    assert row[2:5] == ["-20.0", "-10.0", "—"]
    assert "| Qbert" not in text and "Not in the earlier table: Qbert." in text


def test_a_recipe_change_counts_the_greedy_games_that_ran_to_the_time_limit_where_their_lengths_were_kept():
    """A game that waited on a screen until its 27,000-step limit (or the run's own env.max_episode_steps) is
    counted; a record from before the lengths were kept says so, and tables with neither have no such column."""
    from docs.tables.atari import atari_recipe_change

    old = {"runs": [_atari_run("BeamRider", 2_500_000, [[0, 2.5e6, 10e6, 1600.0]], 2479.2, 4480, 2232)]}
    games = [[2000.0, 9000], [0.0, 27_000], [3000.0, 27_000], [500.0, 26_999]]
    new = {"runs": [
        {**_atari_run("BeamRider", 2_500_000, [[0, 2.5e6, 10e6, 1700.0]], 1375.0, 4400, 2300),
         "final_eval_games": games},
        {**_atari_run("Breakout", 2_500_000, [[0, 2.5e6, 10e6, 100.0]], 300.0, 4400, 2300),
         "final_eval_games": [[300.0, 2000], [250.0, 2000]], "config": {"env": {"max_episode_steps": 2000}}},
    ]}  # fmt: skip
    text = atari_recipe_change([old, new], before="a", after="b")
    assert "greedy games to the time limit: a | … b |" in text
    (row,) = [line.split(" | ") for line in text.splitlines() if line.startswith("| BeamRider")]
    assert row[-2:] == ["not kept", "2 of 4 |"]
    old["runs"].append(_atari_run("Breakout", 2_500_000, [[0, 2.5e6, 10e6, 90.0]], 310.0, 4400, 2300))
    text = atari_recipe_change([old, new], before="a", after="b")
    (row,) = [line.split(" | ") for line in text.splitlines() if line.startswith("| Breakout")]
    assert row[-2:] == ["not kept", "2 of 2 |"]
    assert "time limit" not in atari_recipe_change([old, {"runs": old["runs"]}], before="a", after="b")


def test_the_atari_tables_time_limit_is_the_envs_default():
    """docs/tables reads JSON only (no raylab import): its copy of the limit must follow raylab's."""
    from docs.tables.atari import ATARI_TIME_LIMIT
    from raylab.envs.atari import DEFAULT_MAX_EPISODE_STEPS

    assert ATARI_TIME_LIMIT == DEFAULT_MAX_EPISODE_STEPS


def test_an_atari_trial_run_to_the_recipes_end_sits_beside_the_recipes_final_greedy_score():
    """A trial stopped early is set beside the recipe's last periodic evaluation before its frames; one run to the
    recipe's own end, beside the recipe's final evaluation (its 10 games at the end), not a periodic one before."""
    from docs.tables.atari import atari_trials

    def curve(end: float) -> list:
        return [[0, s, 4 * s, s / 1e4] for s in (5e5, 1e6, 2e6, end)]

    recipe = _atari_run("SpaceInvaders", 2_500_000, curve(2.5e6), 604.0, 2900, 3823)
    recipe["evals"] = [[100, 1e6, 460.0], [200, 2.27e6, 564.0]]
    short = _atari_run("Short", 1_000_000, curve(1e6), 500.0, 1800, 3186)
    full = _atari_run("Full", 2_500_608, curve(2.5e6), 759.0, 3000, 3322)
    trials = {
        "variants": {"Short": ["env.id=SpaceInvaders-v5", "algo.minibatches=4"],
                     "Full": ["env.id=SpaceInvaders-v5", "learner.lr_schedule=linear", "stop.seconds=null"]},
        "runs": [short, full],
    }  # fmt: skip
    rows = {line.split(" | ")[0]: line.split(" | ") for line in atari_trials([trials, {"runs": [recipe]}]).splitlines()}
    assert rows["| Short"][2:9] == ["`algo.minibatches=4`", "4.00M", "100.0", "100.0", "1.00×", "500.0", "460.0"]
    full_row = ["`learner.lr_schedule=linear`", "10.00M", "250.0", "250.0", "1.00×", "759.0", "604.0"]
    assert rows["| Full"][2:9] == full_row  # the recipe's final score, not its periodic 564 at 2.27M steps
    # a trial stopped by the recipe's budget a rollout short of the recipe's overshoot still reached its end
    budget = "stop.env_steps=2500000"
    recipe = {**recipe, "env_steps": 2_500_608, "stop_reason": f"env steps 2500608 >= {budget}"}
    full = {**full, "env_steps": 2_500_352, "stop_reason": f"env steps 2500352 >= {budget}"}
    short = {**short, "stop_reason": "1800 s >= stop.seconds=1800"}
    text = atari_trials([{**trials, "runs": [short, full]}, {"runs": [recipe]}])
    rows = {line.split(" | ")[0]: line.split(" | ") for line in text.splitlines()}
    assert rows["| Full"][8] == "604.0" and rows["| Short"][8] == "460.0"


def test_timed_variants_quote_each_variants_median_and_its_ratio_to_the_first():
    from docs.tables.throughput import timed_variants

    ran = [  # (variant, repeat, frames/s, updates, CPU), in the order they ran: the variants alternate
        ("a", 0, 1000.0, 600, 0.90), ("b", 0, 1500.0, 600, 0.80), ("a", 1, 1200.0, 900, 0.95),
        ("b", 1, 1800.0, 660, 0.70), ("a", 2, 900.0, 300, 0.50),
    ]  # fmt: skip
    runs = [
        {"variant": v, "repeat": i, "average_fps": fps, "total_updates": n, "cpu_utilization": cpu}
        for v, i, fps, n, cpu in reversed(ran)  # the JSON's order is not the table's
    ]
    data = {
        "variants": {"a": ["x=1"], "b": ["x=2"]}, "overrides": ["+experiment=e"], "minutes": 1.0, "mode": "parallel",
        "median_average_fps": {"a": 1000.0, "b": 1650.0}, "runs": runs,
    }  # fmt: skip
    text = timed_variants([data])
    rows = [line.split(" | ") for line in text.splitlines()[2:4]]
    assert rows[0][1:] == ["`x=1`", "3", "1,000", "1.00×", "1,000, 1,200, 900", "10.0", "90% |"]
    assert rows[1][1:] == ["`x=2`", "2", "1,650", "1.65×", "1,500, 1,800", "10.5", "75% |"]  # even: the mean of two
    assert "`+experiment=e`, 1 minutes of training a run (parallel)" in text


def test_a_larger_machines_run_sits_beside_the_tables_run_of_its_game_read_at_10m_frames():
    """Each run of the larger machine beside the table's run of the same game: the greedy score by 10M frames is
    the final one for a run stopped by the 10M-frame budget, else the last periodic one by then; the training
    return is read at 10M frames, not at the run's end; the machine is the run's own stamp (a run read back keeps
    its record) and its own actors."""
    from docs.tables.atari import atari_machines

    big_curve = [[0, 1e6, 4e6, 100.0], [0, 2.44e6, 9.76e6, 1151.0], [0, 3.6e6, 14.4e6, 1400.0]]
    big = _atari_run("BeamRider_14w", 3_677_184, big_curve, 2559.0, 290, 50718)
    big.update(config={"topology": {"num_workers": 14}}, stop_reason="290 s >= stop.seconds=290",
               evals=[[87, 881_664, 794.8], [159, 1_884_160, 1410.4], [225, 2_761_728, 1787.2]])  # fmt: skip
    small_curve = [[0, 1e6, 4e6, 500.0], [0, 2.49e6, 9.95e6, 1636.0]]
    small = _atari_run("BeamRider", 2_500_608, small_curve, 2479.2, 4481, 2232)
    small.update(config={"topology": {"num_workers": 2}}, evals=[[4243, 2_342_912, 2505.8]],
                 stop_reason="env steps 2500608 >= stop.env_steps=2500000",
                 recorded={"cores": 2, "cpu": "Intel(R) Xeon(R) Processor"})  # fmt: skip
    larger = {"variants": {"BeamRider_14w": ["env.id=BeamRider-v5", "topology.num_workers=14"]}, "runs": [big],
              "machine": {"cuda": "NVIDIA H200", "cores": 16}}  # fmt: skip
    table = {"variants": {"BeamRider": ["env.id=BeamRider-v5"]}, "runs": [small], "machine": {"cores": 64}}
    rows = [line.split(" | ") for line in atari_machines([larger, table]).splitlines() if line.startswith("| Beam")]
    assert [r[1] for r in rows] == ["no GPU, 2 cores, 2 actors", "NVIDIA H200, 16 cores, 14 actors"]
    assert rows[0][2:10] == ["10.0M", "74.7 min", "2,232", "2479.2 ± 1.00", "2479.2", "1636.0", "2,501.85 ± 210.52",
                             "99 % |"]  # fmt: skip
    assert rows[1][2:10] == ["14.7M", "4.8 min", "50,718", "2559.0 ± 1.00", "1410.4", "1151.0", "2,501.85 ± 210.52",
                             "102 % |"]  # fmt: skip


def test_more_seeds_of_a_game_give_each_seeds_score_and_their_mean_against_cleanrl():
    """A game with a run in several JSONs: each seed's CPU, greedy score and training return, in seed order ("—" for a
    run that recorded none, left out of the mean), and the mean greedy score as a share of CleanRL's envpool
    figure (the JAX script's where there is none); a game with one seed is left to the table's own row."""
    from docs.tables.atari import atari_seeds

    def run(game: str, seed: int, greedy: float, train: float | None) -> dict:
        return {**_atari_run(game, 2_500_608, [], greedy, 4400, 2300), "seed": seed, "final_train_return": train}

    xeon, epyc = {"cpu": "Intel(R) Xeon(R) Processor"}, {"cpu": "AMD EPYC"}
    table = {"machine": xeon, "runs": [run("BeamRider", 0, 2479.2, 1690.9), run("Breakout", 0, 307.8, 121.7),
                                       run("SpaceInvaders", 0, 575.0, 611.2)]}  # fmt: skip
    # a run read back keeps the stamp of the machine it trained on, not the file's
    more = {"machine": epyc, "runs": [run("BeamRider", 1, 2560.8, 1800.0) | {"recorded": xeon},
                                      run("BeamRider", 2, 0.0, 0.0) | {"ok": False},
                                      run("SpaceInvaders", 1, 625.0, None)]}  # fmt: skip
    text = atari_seeds([more, table])
    rows = {line.split(" | ")[0]: line.split(" | ") for line in text.splitlines() if line.startswith("| ")}
    assert "| Breakout" not in rows
    # 2,520 is 101 % of the envpool figure 2,501.85 and 102 % of the JAX one 2,478.44
    assert rows["| BeamRider"][1:] == ["0, 1", "Intel Xeon, Intel Xeon", "2479.2 ± 1.00, 2560.8 ± 1.00", "2520.0",
                                       "1690.9, 1800.0", "1745.5", "2,501.85 ± 210.52", "101 % |"]  # fmt: skip
    assert rows["| SpaceInvaders"][1:] == ["0, 1", "Intel Xeon, AMD EPYC", "575.0 ± 1.00, 625.0 ± 1.00", "600.0",
                                           "611.2, —", "611.2", "1,188.82 ± 80.52 (JAX)", "50 % |"]  # fmt: skip


def test_the_mario_table_gives_each_final_flag_rate_its_interval_and_names_cpus_only_when_they_differ():
    from docs.tables.learning import mario_learning, wilson_interval

    low, high = wilson_interval(0.8, 10)
    assert (round(low, 2), round(high, 2)) == (0.49, 0.94)  # 8 of 10: the textbook Wilson interval
    assert wilson_interval(0.0, 10)[0] == 0.0 and wilson_interval(1.0, 10)[1] == 1.0
    assert wilson_interval(0.75, 20)[1] - wilson_interval(0.75, 20)[0] < high - low  # more episodes, narrower

    def run(variant: str, cpu: str | None, flag: float, episodes: int | None) -> dict:
        final = {"flag_get": flag, "x_pos": 3104.0}
        extra = {"final_eval_episodes": episodes, "stop_reason": "seconds", "recorded": cpu and {"cpu": cpu}}
        return {**_mario_run(variant, 0, 1_000_000, [], [], final), **extra}

    def rows(report: dict) -> dict[str, list[str]]:
        lines = [line for line in mario_learning([report]).splitlines() if line.startswith("| `")]
        return {cells[0]: cells for cells in ([c.strip() for c in line.strip("|").split("|")] for line in lines)}

    same = rows({"runs": [run("a", "AMD EPYC", 0.8, 10), run("b", "AMD EPYC", 0.7, None)]})
    assert same["`a`"][5] == "600" and same["`a`"][9] == "0.8 (0.49-0.94), 3,104"
    assert same["`b`"][9] == "0.7, 3,104"  # no episode count recorded: no interval made up
    # the newest run has no stamp of its own: the file's machine (its invocation's) names it
    mixed = rows({"machine": {"cpu": "Intel(R) Xeon(R) Processor"}, "runs": [run("a", "AMD EPYC", 0.8, 10),
                                                                            run("b", None, 0.7, 10)]})  # fmt: skip
    assert mixed["`a`"][5] == "600 (AMD EPYC)" and mixed["`b`"][5] == "600 (Intel Xeon)"
    assert mixed["`b`"][9] == "0.7 (0.40-0.89), 3,104"


def test_every_learner_bench_variant_has_a_column_label():
    """``raylab.bench learner``'s variants each get a label in the learner table: without one, rendering a JSON
    that has the variant fails with a KeyError and so does the docs build."""
    from docs.tables.components import LEARNER_LABELS
    from raylab.bench.learner_speed import VARIANTS

    assert set(VARIANTS) - {"eager_fp32", "amp", "amp_compile"} <= set(LEARNER_LABELS)
