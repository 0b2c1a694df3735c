"""Clocks and the machine description shared by the benchmarks."""

import os
import platform
import statistics
import sys
import time

clock = time.perf_counter


def median(values):
    return statistics.median(values) if values else float("nan")


def per_call_seconds(fn, args, *, calls, batches):
    """Median over `batches` of the mean time per call in a loop of `calls` calls of fn(*args)."""
    results = []
    for _ in range(batches):
        start = clock()
        for _ in range(calls):
            fn(*args)
        results.append((clock() - start) / calls)
    return median(results)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def load_average():
    try:
        return [round(x, 2) for x in os.getloadavg()]  # a list, as it reads back from JSON
    except OSError:
        return None


def machine_info():
    import torch

    info = {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "torch_threads": int(os.environ.get("BYTEGRAPH_BENCH_THREADS", "1")),
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "platform": platform.platform(),
        "load_average": load_average(),
    }
    try:
        import transformers

        info["transformers"] = transformers.__version__
    except ImportError:
        info["transformers"] = None
    return info
