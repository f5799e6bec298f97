"""ResourceSampler: memory and CPU of the run's whole process tree, sampled by a background thread.

The driver's own ``ru_maxrss`` misses the Ray processes, and adding every actor's peak overstates a total
that never happened at one instant. Sampling the tree (the driver and its descendants: an embedded Ray's
raylet, GCS and worker processes) once a second gives the total resident memory at each instant (its peak
and mean) and the CPU time the run used, as a share of the cores. Processes of a remote cluster are not
on this machine and are not counted (the per-actor peaks in benchmark_metrics.json still are). Memory is
the sum of resident set sizes, so pages shared between processes (Ray's object store) count once per
process that touched them: an upper bound on physical use.
"""

from __future__ import annotations

import math
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import psutil


def available_cores() -> int:
    """Cores this process may use: its CPU affinity, capped by a cgroup v2 CPU quota (docker --cpus, Slurm),
    not the host's count (``os.cpu_count``), so threads and utilization match what the run really gets."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
        if quota != "max":
            cores = min(cores, max(1, math.ceil(int(quota) / int(period))))
    except (OSError, ValueError):
        pass
    return cores


@dataclass
class ResourceUsage:
    peak_memory_gb: float
    average_memory_gb: float
    cpu_percent: float
    """Mean CPU use of the tree over the sampled span, in percent of one core (200 = two cores busy)."""
    cpu_utilization: float
    """The same as a share of this machine's cores (0..1)."""
    cores: int
    samples: int


class ResourceSampler:
    def __init__(self, interval_s: float = 1.0, pid: int | None = None):
        self.interval_s = interval_s
        self.root = psutil.Process(pid or os.getpid())
        self.cores = available_cores()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._cpu_seen: dict[tuple[int, float], float] = {}
        """CPU seconds last read per process, keyed by (pid, create time) so a reused pid is a new process."""
        self._cpu_total = 0.0
        self._memory: list[float] = []
        self._start = 0.0
        self._end = 0.0
        self.last_memory_gb = 0.0
        self.last_cpu_percent = 0.0
        self._last_sample_time: float | None = None

    def start(self) -> None:
        self._start = time.perf_counter()
        self._sample(baseline=True)
        self._thread = threading.Thread(target=self._loop, name="raylab-resources", daemon=True)
        self._thread.start()

    def stop(self) -> ResourceUsage:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        if not self._end:
            self._sample()
            self._end = time.perf_counter()
        return self.usage()

    def usage(self) -> ResourceUsage:
        with self._lock:
            memory = list(self._memory)
            span = max((self._end or time.perf_counter()) - self._start, 1e-9)
            cpu = 100.0 * self._cpu_total / span
        return ResourceUsage(
            peak_memory_gb=max(memory, default=0.0),
            average_memory_gb=sum(memory) / len(memory) if memory else 0.0,
            cpu_percent=cpu,
            cpu_utilization=cpu / 100.0 / self.cores,
            cores=self.cores,
            samples=len(memory),
        )

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._sample()

    def _tree(self) -> list[psutil.Process]:
        try:
            return [self.root, *self.root.children(recursive=True)]
        except psutil.Error:
            return []

    def _sample(self, baseline: bool = False) -> None:
        rss = 0
        cpu_delta = 0.0
        for proc in self._tree():
            try:
                with proc.oneshot():
                    rss += proc.memory_info().rss
                    times = proc.cpu_times()
                    key = (proc.pid, proc.create_time())
            except psutil.Error:
                continue  # exited between listing and reading
            total = times.user + times.system
            previous = self._cpu_seen.get(key)
            # Processes alive at start() count from there; one first seen later counts all its CPU time
            # (it started after the sampler did).
            base = previous if previous is not None else (total if baseline else 0.0)
            cpu_delta += max(total - base, 0.0)
            self._cpu_seen[key] = total
        now = time.perf_counter()
        with self._lock:
            self._cpu_total += cpu_delta
            self._memory.append(rss / 2**30)
            self.last_memory_gb = rss / 2**30
            if self._last_sample_time is not None:
                self.last_cpu_percent = 100.0 * cpu_delta / max(now - self._last_sample_time, 1e-9)
            self._last_sample_time = now
