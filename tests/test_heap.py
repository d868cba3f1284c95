"""anchordiv.heap: the thresholds a process started with are read back, and inside
reused_heap a process started with Dask's fixed malloc thresholds reuses its heap (no page
faults for a repeated 16 MB buffer), also between tasks, while before the first task and once
idle (thresholds restored) it does not."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from anchordiv import heap

pytestmark = pytest.mark.skipif(
    heap.glibc() is None or not os.path.exists("/proc/self/environ"), reason="needs glibc and /proc"
)


def test_fixed_thresholds_from_the_environment():
    assert heap.fixed_thresholds({"PATH": "/bin"}) is None
    assert heap.fixed_thresholds({"MALLOC_TRIM_THRESHOLD_": "65536"}) == (
        65536,
        heap.DEFAULT_THRESHOLD,
    )
    assert heap.fixed_thresholds({"MALLOC_MMAP_THRESHOLD_": "0x100000"}) == (
        heap.DEFAULT_THRESHOLD,
        1 << 20,
    )
    tunables = {
        "GLIBC_TUNABLES": "glibc.malloc.trim_threshold=4096:glibc.cpu.x=1",
        "MALLOC_TRIM_THRESHOLD_": "65536",
    }
    assert heap.fixed_thresholds(tunables) == (4096, heap.DEFAULT_THRESHOLD)


def test_startup_environ_is_what_the_process_started_with(monkeypatch):
    monkeypatch.setenv("ANCHORDIV_TEST_LATE_VARIABLE", "1")
    env = heap.startup_environ()
    assert "PATH" in env and "ANCHORDIV_TEST_LATE_VARIABLE" not in env


FAULTS = textwrap.dedent("""
    import ctypes, json, resource, time
    from anchordiv import heap
    from anchordiv.heap import reused_heap
    libc, size = ctypes.CDLL(None), 16 << 20
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]

    def faults(rounds=4):
        out = []
        for _ in range(rounds):
            before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            p = libc.malloc(size)
            ctypes.memset(p, 1, size)
            libc.free(p)
            out.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
        return out[1:]

    report = {"before": faults()}
    with reused_heap():
        with reused_heap():
            report["nested"] = faults()
        report["inside"] = faults()
    report["between_tasks"] = faults()
    with reused_heap():
        pass
    report["lifted_then"] = heap.heap_lifted()
    deadline = time.monotonic() + 30
    while heap.heap_lifted() and time.monotonic() < deadline:
        time.sleep(0.1)
    report["after"] = faults()
    print(json.dumps(report))
""")


def test_reused_heap_lifts_and_restores_dask_thresholds():
    env = {**os.environ, "MALLOC_TRIM_THRESHOLD_": "65536"}
    out = subprocess.run(
        [sys.executable, "-c", FAULTS],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    report = json.loads(out.stdout.strip().splitlines()[-1])
    pages = (16 << 20) // os.sysconf("SC_PAGE_SIZE")
    assert min(report["before"]) > pages // 2 and min(report["after"]) > pages // 2
    assert max(report["nested"] + report["inside"] + report["between_tasks"]) < pages // 10
    assert report["lifted_then"]
