"""DistributedDataParallel under bytegraph: graphs split at gradient-bucket boundaries.

DDP all-reduces gradients in buckets: autograd hooks launch a bucket's all-reduce as soon as
the last of its parameters has its gradient, so communication overlaps the rest of the
backward. A graph compiled by an AOT backend (aot_eager, inductor) has one backward that
produces every gradient at once, and no all-reduce could start before it ends.

As torch.compile does, a graph compiled while a DDP module runs its wrapped module (DDP marks
itself active around that call; this covers both `DDP(bytegraph.compile(model))` and
`bytegraph.compile(DDP(model))`) goes to torch's own DDPOptimizer, which splits it where the
buckets end, counting parameter sizes from the graph's end as the backward will, and compiles
each piece with the frame's backend. `config.optimize_ddp = False` compiles the graph whole.

torch._dynamo (where DDPOptimizer lives) is imported only here, only when DDP is active: the
rest of bytegraph keeps it unloaded (see _lazy_dynamo).
"""

import logging
import sys

from bytegraph import backends, config

ddp_log = logging.getLogger("bytegraph.ddp")


def active_ddp_module():
    """The DistributedDataParallel module whose forward is running, or None."""
    parallel = sys.modules.get("torch.nn.parallel.distributed")
    if parallel is None:
        return None
    return parallel.DistributedDataParallel._get_active_ddp_module()


def backend_for_graph(compiler_fn, graph_name):
    """The backend for one graph: a DDPSplitter around `compiler_fn` while a DDP module is
    active and config.optimize_ddp is on, `compiler_fn` itself otherwise."""
    if not config.optimize_ddp:
        return compiler_fn
    ddp_module = active_ddp_module()
    if ddp_module is None:
        return compiler_fn
    return DDPSplitter(compiler_fn, ddp_module, graph_name)


def piece_count(backend):
    """How many separately compiled pieces the graph compiled by `backend` became."""
    return backend.pieces if isinstance(backend, DDPSplitter) and backend.pieces else 1


def _first_bucket_cap(ddp_module):
    """The size DDP gives its first bucket (smaller by default, so the first all-reduce starts
    early); never above the other buckets' size, which DDPOptimizer requires."""
    bucket_config = getattr(ddp_module, "_bucket_config", None)
    cap = getattr(bucket_config, "first_bucket_bytes_cap", None)
    if cap is None:
        import torch.distributed

        cap = getattr(torch.distributed, "_DEFAULT_FIRST_BUCKET_BYTES", ddp_module.bucket_bytes_cap)
    return min(cap, ddp_module.bucket_bytes_cap)


class DDPSplitter:
    """A backend handing each graph to torch's DDPOptimizer, which compiles the piece of each
    gradient bucket with `compiler_fn`. `pieces` is how many pieces the graph became."""

    def __init__(self, compiler_fn, ddp_module, graph_name):
        self.inner_backend = compiler_fn
        self.compiler_name = backends.backend_name(compiler_fn)
        self.bucket_bytes_cap = ddp_module.bucket_bytes_cap
        self.first_bucket_cap = _first_bucket_cap(ddp_module)
        self.graph_name = graph_name
        self.pieces = None

    def __call__(self, gm, example_inputs):
        from torch._dynamo.backends.distributed import DDPOptimizer

        _add_dynamo_metadata(gm)
        optimizer = DDPOptimizer(bucket_bytes_cap=self.bucket_bytes_cap, backend_compile_fn=self.inner_backend,
                                 first_bucket_cap=self.first_bucket_cap)
        compiled = optimizer.compile_fn(gm, example_inputs)
        self.pieces = len(optimizer.buckets)
        _log_split(self.graph_name, optimizer.buckets, self.bucket_bytes_cap, compiled if self.pieces > 1 else None)
        return compiled

    def __repr__(self):
        return f"DDPSplitter({self.compiler_name!r}, bucket_bytes_cap={self.bucket_bytes_cap})"


def _add_dynamo_metadata(gm):
    """DDPOptimizer copies two records of Dynamo's graphs into each piece: the source of each
    placeholder and a parameter-name table. bytegraph's graphs keep neither (their guards
    live elsewhere): empty ones stand in."""
    for node in gm.graph.find_nodes(op="placeholder"):
        if not hasattr(node, "_dynamo_source"):
            node._dynamo_source = None
    if not hasattr(gm, "_param_name_to_source"):
        gm._param_name_to_source = {}


def _log_split(graph_name, buckets, bucket_bytes_cap, split_gm):
    """The `ddp` artifact: each bucket's parameters and size; the split graph at DEBUG."""
    if not ddp_log.isEnabledFor(logging.INFO):
        return
    rows = [("piece", "bytes", "nodes", "parameters")]
    for index, bucket in enumerate(buckets):
        rows.append((str(index), str(bucket.size), str(len(bucket.nodes)), ", ".join(bucket.params) or "-"))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    table = "\n".join("  ".join(cell.rjust(width) for cell, width in zip(row[:3], widths)) + "  " + row[3]
                      for row in rows)
    outcome = (f"split into {len(buckets)} pieces" if len(buckets) > 1
               else "not split (its parameters fit one bucket)")
    ddp_log.info("DDP SPLIT %s: %s, buckets of at most %d bytes, pieces in forward order\n%s",
                 graph_name, outcome, bucket_bytes_cap, table)
    if split_gm is not None and ddp_log.isEnabledFor(logging.DEBUG):
        ddp_log.debug("DDP SPLIT GRAPH %s\n%s", graph_name, split_gm.print_readable(print_output=False).rstrip())
