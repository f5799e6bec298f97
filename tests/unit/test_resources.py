"""ResourceSampler counts the whole process tree: a child's memory and the CPU the tree burns."""

from __future__ import annotations

import subprocess
import sys
import time

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


def test_busy_cpu_is_measured_and_idle_time_is_not():
    """The sampler's CPU share equals the CPU time the kernel charged this process over the same span: one
    CPU second burnt (however long a busy machine takes to grant it), then idle. A fixed busy *wall* time
    would give the loop a machine-dependent share; the CPU time it really got is the ground truth. A whole CPU
    second, not half: the sampler's window starts and ends up to one interval (0.1 s) off the truth's, which on
    a one-second span was 10 points on a busy machine (62.8 against 52.7)."""
    cpu0, wall0 = time.process_time(), time.perf_counter()
    sampler = ResourceSampler(interval_s=0.1)
    sampler.start()
    while time.process_time() - cpu0 < 1.0:
        pass  # one thread busy until it has had 1 CPU second
    busy_wall = time.perf_counter() - wall0
    time.sleep(max(busy_wall, 1.0))  # then idle at least as long: idle time must not count
    usage = sampler.stop()
    truth = 100.0 * (time.process_time() - cpu0) / (time.perf_counter() - wall0)
    assert truth < 60  # at most half the span was busy (the sampler's own thread adds a little)
    assert abs(usage.cpu_percent - truth) <= 10, (usage.cpu_percent, truth)
    assert usage.cpu_utilization == usage.cpu_percent / 100 / usage.cores
