"""bytegraph's Python modules import in one direction: each belongs to a layer, and imports
only modules of its own layer or lower ones, with no cycle, counting imports inside functions
(a function-level import is still a dependency). docs/architecture.md describes the layers."""

import ast
import pathlib

import bytegraph

PACKAGE = pathlib.Path(bytegraph.__file__).parent

# Lowest first. A new module must be placed here: the test names any that is not.
LAYERS = {
    "foundation": {  # no knowledge of tracing: the extension, settings, errors, logs
        "_extension", "config", "exc", "_logging", "_lazy_dynamo", "_compile_metrics", "_shape_spec", "bytecode",
    },
    "runtime": {  # the frame hook and what it reads on each call
        "eval_frame", "stance", "_verify", "_frame",
    },
    "bridge": {  # torch knowledge the C++ core calls while tracing
        "_bridge", "_bridge_shapes", "_classify", "_fx_graph", "_plans", "_fake_cache", "_input_aliasing", "_numpy_interop",
        "_torch_function", "_dynamic", "_graph_failure", "graph_rules",
    },
    "observability": {  # logs, traces and the step viewer, fed by the compile path
        "_structured_trace", "_readable_code", "_stack_names", "report", "viewer.model", "viewer.recorder",
        "viewer.events", "viewer.listing", "viewer.html", "viewer.beamer", "viewer.org", "viewer.__init__",
    },
    "compile": {  # from a frame to its compiled entry: backends, the frame converter
        "backends", "_distributed", "_portable", "_warm_start", "_convert_frame",
    },
    "public": {  # what users import and run
        "optimized_module", "api", "tracing", "explain", "comptime", "testing", "examples", "demo", "run",
        "viewer.cli", "__main__", "__init__",
    },
}


def _module_names():
    names = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        names[".".join(parts)] = path
    return names


def _imports(path, known):
    """The bytegraph modules `path` imports, anywhere in it; `import bytegraph` is __init__."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "bytegraph":
                    found.add("__init__")
                elif alias.name.startswith("bytegraph."):
                    found.add(alias.name[len("bytegraph."):])
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "bytegraph":
            base = node.module[len("bytegraph"):].lstrip(".")
            for alias in node.names:
                candidate = f"{base}.{alias.name}" if base else alias.name
                if candidate in known:
                    found.add(candidate)
                elif base:
                    found.add(base if base in known else f"{base}.__init__")
                else:
                    found.add("__init__")  # a name bytegraph/__init__.py defines
    return found & set(known)


def _graph():
    known = _module_names()
    return {name: _imports(path, known) - {name} for name, path in known.items()}


def test_every_module_has_a_layer():
    placed = set().union(*LAYERS.values())
    assert sorted(set(_module_names()) - placed) == []
    assert sorted(placed - set(_module_names())) == []


def test_imports_point_down_the_layers():
    rank = {module: i for i, members in enumerate(LAYERS.values()) for module in members}
    names = list(LAYERS)
    upward = [
        f"{module} ({names[rank[module]]}) imports {target} ({names[rank[target]]})"
        for module, targets in _graph().items() for target in sorted(targets) if rank[target] > rank[module]
    ]
    assert upward == []


def test_no_import_cycles():
    graph = _graph()
    cycles, state = [], {}

    def visit(module, path):
        state[module] = "open"
        for target in sorted(graph[module]):
            if state.get(target) == "open":
                cycles.append(" -> ".join(path[path.index(target):] + [target]))
            elif target not in state:
                visit(target, path + [target])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert cycles == []
