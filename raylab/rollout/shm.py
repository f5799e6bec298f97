"""A shared-memory channel between a rollout worker and an inference actor on the same machine: central
inference's transport there (topology.inference_transport=auto), Ray actor calls being the one between
machines. ``benchmarks/inference_transport.py`` measured both: a Pong split's request costs the inference
actor ~1.3 ms of CPU as a Ray call and ~0.13 ms through a channel, and its round trip 3.1 ms against 0.2 ms.

One channel per worker split: a shared-memory block holding one request (the observations) and one reply
(actions, log-probabilities, version), and two named pipes that carry one byte each way to say "request
written" and "reply written". The inference actor makes the channel (``ShmChannel(create=True)``) when a worker
asks for it, and answers it from a thread of its own that waits on the request pipe and hands the
observations, in the block, to ``InferenceServer.infer`` (the same batching Ray calls get). No
serialization and no object store: a request costs the worker's copy of its observations into the block (and
the server's into a batch of several requests) and one pipe byte each way.
A request the server fails on is answered with rows = -1 (the worker raises; the actor's log has the error).
"""

from __future__ import annotations

import _posixshmem  # CPython's, behind multiprocessing.shared_memory
import contextlib
import os
import select
import socket
import tempfile
import threading
from multiprocessing import resource_tracker, shared_memory
from pathlib import Path
from typing import Any

import numpy as np

from raylab.rollout.inference import InferenceServer

HEADER = 24
"""Bytes before the reply's arrays (int64 each): the rows of the request, the version that acted, and whether
the policy gave log-probabilities."""
FAILED = -1
"""The rows a reply carries when the server failed on the request."""


def this_machine() -> str:
    """What tells machines apart: the host name and this boot's id (two Ray nodes started on one machine, as
    ray.cluster_utils does, share memory and are one machine here)."""
    boot = Path("/proc/sys/kernel/random/boot_id")
    return f"{socket.gethostname()}/{boot.read_text().strip() if boot.exists() else ''}"


class ChannelError(RuntimeError):
    """The inference actor failed on a request sent through a channel."""


def pipe_folder() -> str:
    """Where channels' pipes are made: a folder of this user's (another user's would refuse the pipes)."""
    return os.path.join(tempfile.gettempdir(), f"raylab-shm-{os.getuid()}")


class ShmChannel:
    """The server's end (``create=True``) or the worker's end of one channel of ``rows`` observations of
    ``obs_shape``/``obs_dtype`` at most, answered by actions of ``action_shape``/``action_dtype`` each (a
    discrete action: (), int64; a Box action: (D,), float32); ``name`` names the block and the pipes."""

    def __init__(
        self,
        name: str,
        rows: int,
        obs_shape: tuple[int, ...],
        obs_dtype: np.dtype,
        create: bool = False,
        action_shape: tuple[int, ...] = (),
        action_dtype: Any = np.int64,
    ):
        self.name, self.rows = name, rows
        obs_bytes = int(np.prod(obs_shape)) * np.dtype(obs_dtype).itemsize * rows
        action_bytes = int(np.prod(action_shape)) * np.dtype(action_dtype).itemsize * rows
        size = HEADER + obs_bytes + action_bytes + rows * 4
        self.block = shared_memory.SharedMemory(name=name, create=create, size=size if create else 0)
        # No process's resource tracker owns the block (Python < 3.13 registers it on attach too, and warns or
        # unlinks it when that process exits): the worker unlinks its name and the pipes' once it has them
        # open, so a crash on either side leaves nothing behind (``_forget``).
        self._key: str = self.block._name  # type: ignore[attr-defined]  # "/<name>": what the tracker and unlink take
        resource_tracker.unregister(self._key, "shared_memory")
        buf = self.block.buf
        self.header = np.ndarray((3,), np.int64, buf, 0)
        self.obs = np.ndarray((rows, *obs_shape), obs_dtype, buf, HEADER)
        self.actions = np.ndarray((rows, *action_shape), action_dtype, buf, HEADER + obs_bytes)
        self.log_probs = np.ndarray((rows,), np.float32, buf, HEADER + obs_bytes + action_bytes)
        folder = pipe_folder()
        self.request_pipe, self.reply_pipe = (os.path.join(folder, f"{name}.{k}") for k in ("req", "rep"))
        self._out: int | None = None
        self._in: int | None = None
        self.creator = create
        try:
            if create:  # the server's ends, open before the worker is told the name
                os.makedirs(folder, mode=0o700, exist_ok=True)
                for pipe in (self.request_pipe, self.reply_pipe):
                    os.mkfifo(pipe)
                self._open(self.reply_pipe, self.request_pipe)
            else:
                self._open(self.request_pipe, self.reply_pipe)
        except OSError:
            self.close()
            raise
        if not create:
            self._forget()

    def _forget(self) -> None:
        """Unlink the block's and the pipes' names (both ends hold them open; they go when both close)."""
        with contextlib.suppress(FileNotFoundError):
            _posixshmem.shm_unlink(self._key)
        for pipe in (self.request_pipe, self.reply_pipe):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(pipe)

    def _open(self, send: str, receive: str) -> None:
        if self._in is None:  # O_RDWR: opening never blocks for the other end (Linux)
            self._in = os.open(receive, os.O_RDWR)
            self._out = os.open(send, os.O_RDWR)

    # -- the worker's end ------------------------------------------------------------------------------------
    def send(self, obs: np.ndarray) -> None:
        n = len(obs)
        self.header[0] = n
        self.obs[:n] = obs
        assert self._out is not None
        os.write(self._out, b"r")

    def receive(self, timeout: float | None = None) -> tuple[np.ndarray, np.ndarray | None, int] | None:
        """(actions, log-probabilities or None, version), copied out; None when ``timeout`` passed first."""
        assert self._in is not None
        if timeout is not None and not _readable(self._in, timeout):
            return None
        os.read(self._in, 1)
        n = int(self.header[0])
        if n == FAILED:
            raise ChannelError("the inference actor failed on this request: its log under /tmp/ray/session_latest/logs")
        log_probs = self.log_probs[:n].copy() if self.header[2] else None
        return self.actions[:n].copy(), log_probs, int(self.header[1])

    # -- the server's end ------------------------------------------------------------------------------------
    def serve(self, server: InferenceServer, stop: threading.Event) -> None:
        """Answer requests until ``stop`` is set (checked every 0.2 s while idle). Any error on a request is
        answered (rows = FAILED: the worker raises it); an error of the pipes themselves ends the thread, which
        the worker finds out by asking (``Channels.alive``)."""
        assert self._in is not None and self._out is not None
        while not stop.is_set():
            if not _readable(self._in, 0.2):
                continue
            os.read(self._in, 1)
            try:
                n = int(self.header[0])  # the block's rows, not copied: the worker writes its next request
                actions, log_probs, version = server.infer(self.obs[:n])  # only after this one's reply
                self.actions[:n] = actions
                if log_probs is not None:
                    self.log_probs[:n] = log_probs
                self.header[1], self.header[2] = version, log_probs is not None
            except Exception as err:  # the worker raises; the error goes to this actor's log
                print(f"raylab: inference failed on a channel's request: {err!r}", flush=True)
                self.header[0] = FAILED
            os.write(self._out, b"a")

    def close(self) -> None:
        """Close this end (the server's only once its thread has ended)."""
        for fd in (self._in, self._out):
            if fd is not None:
                os.close(fd)
        self._in = self._out = None
        del self.header, self.obs, self.actions, self.log_probs
        self.block.close()
        if self.creator:  # a worker that never attached left the names
            self._forget()


def _readable(fd: int, timeout: float) -> bool:
    """Whether ``fd`` has data within ``timeout`` seconds (poll: no limit on the descriptor's number)."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(timeout * 1000))


class Channels:
    """The inference actor's channels, one per worker split (``key``), each answered by a thread of its own; a
    worker asking again for its key (it was restarted) gets a fresh channel and the old one is closed."""

    def __init__(self, server: InferenceServer):
        self.server = server
        self.machine = this_machine()
        self._open: dict[str, tuple[ShmChannel, threading.Event, threading.Thread]] = {}
        self._lock = threading.Lock()

    def open(
        self, key: str, rows: int, shape: tuple[int, ...], dtype: str, machine: str, action: tuple[tuple[int, ...], str]
    ) -> str | None:
        """A channel's name for the worker split ``key`` on ``machine`` (its actions: ``action``'s shape and
        dtype); None when that is another machine, or the channel cannot be made (the worker then sends Ray
        calls). A worker asking again for its key (restarted, or moved) ends its old channel first."""
        with self._lock:
            self._close(key)
            if machine != self.machine:
                return None
            name = f"raylab-{os.getpid()}-{key}-{os.urandom(3).hex()}"
            try:
                channel = ShmChannel(
                    name, rows, tuple(shape), np.dtype(dtype), create=True, action_shape=tuple(action[0]),
                    action_dtype=np.dtype(action[1]),
                )  # fmt: skip
            except OSError as err:
                print(f"raylab: no shared-memory channel for {key} ({err}): Ray calls instead", flush=True)
                return None
            stop = threading.Event()
            thread = threading.Thread(target=channel.serve, args=(self.server, stop), daemon=True, name=name)
            thread.start()
            self._open[key] = (channel, stop, thread)
        return name

    def alive(self, key: str) -> bool:
        """Whether worker split ``key``'s channel is still answered."""
        found = self._open.get(key)
        return found is not None and found[2].is_alive()

    def _close(self, key: str) -> None:
        old = self._open.pop(key, None)
        if old is not None:
            channel, stop, thread = old
            stop.set()
            thread.join(timeout=30)  # a request in flight is answered first
            if not thread.is_alive():
                channel.close()

    def close(self) -> None:
        with self._lock:
            for key in list(self._open):
                self._close(key)
