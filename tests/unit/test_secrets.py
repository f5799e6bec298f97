"""Secrets never reach what a run writes (issue 8's security item; the W&B run test checks a real run)."""

from raylab.secrets import REDACTED, redact, redact_text, secret_env_values
from tests.conftest import make_config


def test_keys_named_like_secrets_are_redacted():
    out = redact({"env": {"options": {"api_key": "abc", "hf_token": "t0k", "level": 3}}, "token": None})
    assert out == {"env": {"options": {"api_key": REDACTED, "hf_token": REDACTED, "level": 3}}, "token": None}


def test_values_of_secret_environment_variables_are_redacted_anywhere():
    env = {"WANDB_API_KEY": "local-0123456789abcdef", "HOME": "/root", "MY_SECRET": "short"}
    secrets = secret_env_values(env)
    assert secrets == ["local-0123456789abcdef"]  # values shorter than 6 characters and non-secret names: no
    text = "wandb login local-0123456789abcdef && echo /root"
    assert redact_text(text, secrets) == f"wandb login {REDACTED} && echo /root"
    assert redact(["x", {"name": "run-local-0123456789abcdef"}], secrets) == ["x", {"name": f"run-{REDACTED}"}]


def test_url_passwords_are_redacted():
    assert redact_text("ray://alice:hunter22@head:10001", []) == f"ray://alice:{REDACTED}@head:10001"
    assert redact_text("ray://head:10001", []) == "ray://head:10001"


def test_run_config_to_dict_redacts(tmp_path, monkeypatch):
    monkeypatch.setenv("RAYLAB_TEST_TOKEN", "fake-token-value-42")
    cfg = make_config(tmp_path, "env=fake", "logger=wandb", "logger.wandb.group=fake-token-value-42")
    out = cfg.to_dict()
    assert out["logger"]["wandb"]["group"] == REDACTED
    assert "fake-token-value-42" not in str(out)
    assert cfg.logger.wandb.group == "fake-token-value-42"  # the run itself still sees the real value
