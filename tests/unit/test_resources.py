"""ResourceSampler counts the whole process tree: a child's memory and the CPU the tree burns."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil

from raylab.driver.resources import ResourceSampler

CHILD = "import time; block = bytearray(400 * 2**20); block[::4096] = b'x' * len(block[::4096]); time.sleep(30)"


def test_a_child_process_memory_is_counted():
    sampler = ResourceSampler(interval_s=0.1)
    sampler.start()
    child = subprocess.Popen([sys.executable, "-c", CHILD])
    try:
        deadline = time.monotonic() + 20
        while sampler.last_memory_gb < 0.4 and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        child.kill()
        child.wait()
    usage = sampler.stop()
    assert usage.peak_memory_gb >= 0.4  # the child's 400 MiB plus this process
    assert usage.average_memory_gb <= usage.peak_memory_gb and usage.samples >= 2


def _tree_cpu_seconds() -> float:
    """CPU seconds the kernel charged this process and its live children (the tree the sampler reads)."""
    total = 0.0
    me = psutil.Process()
    for proc in [me, *me.children(recursive=True)]:
        try:
            times = proc.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


def test_busy_cpu_is_measured_and_idle_time_is_not():
    """The sampler's CPU share equals the CPU time the kernel charged this process tree over the same span: one
    CPU second burnt here (however long a busy machine takes to grant it), then idle. A fixed busy *wall* time
    would give the loop a machine-dependent share; the CPU time it really got is the ground truth. A whole CPU
    second, not half: the sampler's window starts and ends up to one interval (0.1 s) off the truth's, which on
    a one-second span was 10 points on a busy machine (62.8 against 52.7). The truth counts the children too,
    as the sampler does: in a test session that has started Ray, its raylet and workers are this process's
    children, and their CPU once put the sampler 10.4 points over a truth of this process alone (39.9 against
    29.5)."""
    tree0, cpu0, wall0 = _tree_cpu_seconds(), time.process_time(), time.perf_counter()
    sampler = ResourceSampler(interval_s=0.1)
    sampler.start()
    while time.process_time() - cpu0 < 1.0:
        pass  # one thread busy until it has had 1 CPU second
    busy_wall = time.perf_counter() - wall0
    time.sleep(max(busy_wall, 1.0))  # then idle at least as long: idle time must not count
    usage = sampler.stop()
    wall = time.perf_counter() - wall0
    own = 100.0 * (time.process_time() - cpu0) / wall
    truth = 100.0 * (_tree_cpu_seconds() - tree0) / wall
    assert own < 60  # at most half the span was busy here (the sampler's own thread adds a little)
    assert abs(usage.cpu_percent - truth) <= 10, (usage.cpu_percent, truth, own)
    assert usage.cpu_utilization == usage.cpu_percent / 100 / usage.cores
