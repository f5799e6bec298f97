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
    sampler = ResourceSampler(interval_s=0.1)
    sampler.start()
    end = time.perf_counter() + 1.0
    while time.perf_counter() < end:
        pass  # one core busy
    time.sleep(1.0)  # then idle
    usage = sampler.stop()
    # one busy second in two: about 50 % of a core (a loaded CI host may give the loop less)
    assert 20 <= usage.cpu_percent <= 80
    assert usage.cpu_utilization == usage.cpu_percent / 100 / usage.cores
