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

import torch
import torch.fx

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

        bound = _bind_size_symbols(gm, example_inputs)
        if bound is None:
            ddp_log.info("DDP SPLIT %s: not split (a size symbol of this dynamic graph is not an input size)",
                         self.graph_name)
            self.pieces = 1
            return self.inner_backend(gm, example_inputs)
        split_input, split_example_inputs, size_sources = bound
        _add_dynamo_metadata(split_input)
        optimizer = DDPOptimizer(bucket_bytes_cap=self.bucket_bytes_cap, backend_compile_fn=self.inner_backend,
                                 first_bucket_cap=self.first_bucket_cap)
        compiled = optimizer.compile_fn(split_input, split_example_inputs)
        self.pieces = len(optimizer.buckets)
        _log_split(self.graph_name, optimizer.buckets, self.bucket_bytes_cap, compiled if self.pieces > 1 else None)
        return _passing_sizes(compiled, size_sources) if size_sources else compiled

    def __repr__(self):
        return f"DDPSplitter({self.compiler_name!r}, bucket_bytes_cap={self.bucket_bytes_cap})"


def _bind_size_symbols(gm, example_inputs):
    """(graph, example inputs, size sources) for DDPOptimizer, or None if it cannot split gm.

    Where a piece of the split takes a tensor whose sizes are symbolic, the splitter makes
    each symbol an input of that piece, read from the placeholder that binds it: Dynamo's
    graphs have one (`s0: Sym(s0)`), a dynamic bytegraph graph reads a size from its tensor
    only where it uses it. For each symbol without one, a copy of the graph takes it as an
    extra trailing input, with the symbol (a SymInt) as its example; size_sources lists where
    each is read at run time: (input index, dimension). A static graph is returned as is."""
    import sympy

    placeholders = list(gm.graph.find_nodes(op="placeholder"))
    bound = set()
    for node in placeholders:
        value = node.meta.get("example_value")
        if isinstance(value, torch.SymInt) and isinstance(value.node.expr, sympy.Symbol):
            bound.add(value.node.expr)
    needed = set()
    for node in gm.graph.nodes:
        needed |= _free_symbols(node.meta.get("example_value"))
    missing = needed - bound
    if not missing:
        return gm, list(example_inputs), []
    readable = {}  # symbol -> (input index, dimension, SymInt)
    for index, node in enumerate(placeholders):
        value = node.meta.get("example_value")
        if isinstance(value, torch.Tensor):
            for dim, size in enumerate(value.shape):
                if isinstance(size, torch.SymInt) and size.node.expr in missing:
                    readable.setdefault(size.node.expr, (index, dim, size))
    if missing - readable.keys() or not placeholders:
        return None
    graph = torch.fx.Graph()
    copies = {}
    result = graph.graph_copy(gm.graph, copies)
    last = copies[placeholders[-1]]
    sources, extra_inputs = [], []
    for symbol in sorted(missing, key=str):
        index, dim, size = readable[symbol]
        with graph.inserting_after(last):
            last = graph.placeholder(str(symbol))
        last.meta["example_value"] = size
        sources.append((index, dim))
        extra_inputs.append(size)
    graph.output(result)
    split_input = torch.fx.GraphModule(gm, graph, class_name=type(gm).__name__)
    return split_input, list(example_inputs) + extra_inputs, sources


def _free_symbols(value):
    if isinstance(value, (torch.Tensor, torch.SymInt, torch.SymFloat, torch.SymBool)):
        from torch.fx.experimental.symbolic_shapes import free_symbols

        return set(free_symbols(value))
    return set()


def _passing_sizes(compiled, size_sources):
    """Calls the split graph with the sizes it takes as extra inputs, read from its tensors."""

    def compiled_with_sizes(*args):
        return compiled(*args, *(args[index].size(dim) for index, dim in size_sources))

    return compiled_with_sizes


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
