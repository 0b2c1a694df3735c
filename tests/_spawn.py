"""Launching gloo ranks for the multi-process tests (distributed training, pipelining).

One launch runs every scenario of a group in the same processes (starting processes that import
torch is most of the cost). Each rank joins a gloo group on 127.0.0.1, runs the named scenarios
of a scenario module in order and writes what each observed to `<out_dir>/rank<r>.json`; a
scenario that raises records its traceback instead, so one failure does not hide the others'
results. The test process asserts on those files.
"""

import datetime
import importlib
import json
import os
import socket
import time
import traceback

LAUNCH_TIMEOUT_S = 240


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def results_of(tmp_path_factory, module_name, names, world_size):
    """Per scenario, the list of each rank's result."""
    out_dir = tmp_path_factory.mktemp(module_name.rsplit(".", 1)[-1].strip("_"))
    _launch(module_name, out_dir, list(names), world_size)
    per_rank = [json.loads((out_dir / f"rank{rank}.json").read_text()) for rank in range(world_size)]
    return {name: [ranks[name] for ranks in per_rank] for name in names}


def ranks(results, name):
    """Each rank's result of scenario `name`, failing with the rank's traceback if it raised."""
    per_rank = results[name]
    for rank, result in enumerate(per_rank):
        assert "error" not in result, f"rank {rank}:\n{result['error']}"
    return per_rank


def _launch(module_name, out_dir, names, world_size):
    import torch.multiprocessing as mp

    context = mp.start_processes(run_rank, args=(world_size, free_port(), str(out_dir), module_name, names),
                                 nprocs=world_size, join=False, start_method="spawn")
    deadline = time.monotonic() + LAUNCH_TIMEOUT_S
    try:
        # join() returns when one more rank has ended (True once all have): wait for each.
        while not context.join(timeout=max(deadline - time.monotonic(), 0)):
            if time.monotonic() >= deadline:
                raise TimeoutError(f"the {world_size} ranks did not finish within {LAUNCH_TIMEOUT_S} s")
    finally:
        for process in context.processes:
            if process.is_alive():
                process.terminate()


def run_rank(rank, world_size, port, out_dir, module_name, names):
    import torch
    import torch.distributed as dist

    from bytegraph import _frame

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world_size, timeout=datetime.timedelta(seconds=60))
    scenarios = importlib.import_module(module_name).SCENARIOS
    results = {}
    try:
        # As in the test process (tests/conftest.py): a compile error fails, never runs eagerly.
        with _frame.raise_on_compile_error(True):
            for name in names:
                try:
                    results[name] = scenarios[name]()
                except Exception:
                    results[name] = {"error": traceback.format_exc()}
                dist.barrier()
    finally:
        with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as file:
            json.dump(results, file)
        dist.destroy_process_group()
