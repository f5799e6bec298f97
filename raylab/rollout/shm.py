"""A shared-memory channel between a rollout worker and an inference server on the same node: the other
transport ``benchmarks/inference_transport.py`` measures against Ray actor calls.

One channel per worker split: a shared-memory block holding one request (the observations) and one reply
(actions, log-probabilities, version), and two named pipes that carry one byte each way to say "request
written" and "reply written". The server side is a thread per channel that waits on its pipe and hands the
observations, copied out of the block, to ``InferenceServer.infer`` (the same batching as Ray calls get). No
serialization and no object store: a request costs two copies of the observations and two pipe round trips.
"""

from __future__ import annotations

import os
import select
import tempfile
import threading
from multiprocessing import shared_memory

import numpy as np

from raylab.rollout.inference import InferenceServer

HEADER = 16
"""Bytes before the reply's arrays: the rows of the request (int64) and the version that acted (int64)."""


class ShmChannel:
    """The worker's end (``create=True``) or the server's end of one channel of ``rows`` observations of
    ``obs_shape``/``obs_dtype`` at most; ``name`` names the block and the pipes."""

    def __init__(self, name: str, rows: int, obs_shape: tuple[int, ...], obs_dtype: np.dtype, create: bool = False):
        self.name, self.rows = name, rows
        obs_bytes = int(np.prod(obs_shape)) * np.dtype(obs_dtype).itemsize * rows
        size = HEADER + obs_bytes + rows * (8 + 4)
        self.block = shared_memory.SharedMemory(name=name, create=create, size=size if create else 0)
        buf = self.block.buf
        self.header = np.ndarray((2,), np.int64, buf, 0)
        self.obs = np.ndarray((rows, *obs_shape), obs_dtype, buf, HEADER)
        self.actions = np.ndarray((rows,), np.int64, buf, HEADER + obs_bytes)
        self.log_probs = np.ndarray((rows,), np.float32, buf, HEADER + obs_bytes + 8 * rows)
        folder = os.path.join(tempfile.gettempdir(), "raylab-shm")
        self.request_pipe, self.reply_pipe = (os.path.join(folder, f"{name}.{k}") for k in ("req", "rep"))
        if create:
            os.makedirs(folder, exist_ok=True)
            for pipe in (self.request_pipe, self.reply_pipe):
                os.mkfifo(pipe)
        self._out: int | None = None
        self._in: int | None = None
        self.creator = create

    def _open(self, send: str, receive: str) -> None:
        if self._in is None:  # O_RDWR: opening never blocks for the other end (Linux)
            self._in = os.open(receive, os.O_RDWR)
            self._out = os.open(send, os.O_RDWR)

    # -- the worker's end ------------------------------------------------------------------------------------
    def send(self, obs: np.ndarray) -> None:
        self._open(self.request_pipe, self.reply_pipe)
        n = len(obs)
        self.header[0] = n
        self.obs[:n] = obs
        assert self._out is not None
        os.write(self._out, b"r")

    def receive(self, timeout: float | None = None) -> tuple[np.ndarray, np.ndarray, int] | None:
        """(actions, log-probabilities, version), copied out; None when ``timeout`` passed first."""
        assert self._in is not None
        if timeout is not None and not select.select([self._in], [], [], timeout)[0]:
            return None
        os.read(self._in, 1)
        n = int(self.header[0])
        return self.actions[:n].copy(), self.log_probs[:n].copy(), int(self.header[1])

    # -- the server's end ------------------------------------------------------------------------------------
    def serve(self, server: InferenceServer, stop: threading.Event) -> None:
        """Answer requests until ``stop`` is set (checked every 0.2 s while idle)."""
        self._open(self.reply_pipe, self.request_pipe)
        assert self._in is not None and self._out is not None
        while not stop.is_set():
            if not select.select([self._in], [], [], 0.2)[0]:
                continue
            os.read(self._in, 1)
            n = int(self.header[0])
            actions, log_probs, version = server.infer(self.obs[:n].copy())
            self.actions[:n] = actions
            if log_probs is not None:
                self.log_probs[:n] = log_probs
            self.header[1] = version
            os.write(self._out, b"a")

    def close(self) -> None:
        for fd in (self._in, self._out):
            if fd is not None:
                os.close(fd)
        self._in = self._out = None
        del self.header, self.obs, self.actions, self.log_probs
        self.block.close()
        if self.creator:
            self.block.unlink()
            for pipe in (self.request_pipe, self.reply_pipe):
                os.unlink(pipe)
