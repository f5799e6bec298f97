"""raylab.metrics.wandb_offline.wait_for_exit: a run file without its exit record (W&B's service still writing it,
or a run that never finished) is read again until the deadline, then named in one TimeoutError."""

from __future__ import annotations

import pytest

from raylab.metrics import wandb_offline


def test_a_run_file_without_its_exit_record_times_out(tmp_path):
    path = tmp_path / "run-x.wandb"
    path.write_bytes(wandb_offline.HEADER.pack(b":W&B", 0xBEE1, 0))  # a run file with no record yet
    with pytest.raises(TimeoutError, match=r"has no exit record after 0\.3 s"):
        wandb_offline.wait_for_exit(path, timeout_s=0.3)


def test_a_torn_tail_is_read_again_not_raised(tmp_path):
    path = tmp_path / "run-x.wandb"
    header = wandb_offline.HEADER.pack(b":W&B", 0xBEE1, 0)
    path.write_bytes(header + wandb_offline.RECORD.pack(0, 50, wandb_offline.FULL) + b"\x01\x02")  # half a record
    with pytest.raises(TimeoutError):
        wandb_offline.wait_for_exit(path, timeout_s=0.3)
