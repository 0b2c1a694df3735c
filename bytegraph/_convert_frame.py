"""The seam between the frame hook and the compiler: what runs on a cache miss.

`make_callback(...)` builds the callback that `bytegraph.compile`/`optimize` install as the
thread's frame callback. The hook calls it as `callback(frame_info)` when a frame's code has
no cache entry whose guards pass, and reads the answer:

- `None`: run the frame unmodified;
- a code object, or `(code, guard_fn)`: add a cache entry and run that code instead.

Until the tracer is wired in, `FrameConverter.convert` declines every frame, so compiled
functions behave exactly like the originals. The tracer plugs in at `convert`.
"""

import logging
import os

from bytegraph import config
from bytegraph.eval_frame import frame_hook, is_skipped_code

log = logging.getLogger("bytegraph")

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))

# bytegraph's own machinery: frames of these files are never captured (they run between the
# user's frames, e.g. a compiled wrapper called inside another compiled region). Modules
# that hold user-style example code (the demo) are not listed, so they can be compiled.
_INTERNAL_MODULES = (
    "__init__",
    "_convert_frame",
    "_extension",
    "_frame",
    "api",
    "backends",
    "config",
    "eval_frame",
    "exc",
    "optimized_module",
    "testing",
)
_INTERNAL_FILES = frozenset(os.path.join(_PACKAGE_DIR, name + ".py") for name in _INTERNAL_MODULES)


def is_internal_code(code):
    """True for code objects of bytegraph's own machinery."""
    return code.co_filename in _INTERNAL_FILES


def _never_offer_again(code):
    """Tell the hook to run this code's frames unmodified without asking (until a reset)."""
    hook = frame_hook()
    if hook is not None and hasattr(hook, "mark_skip"):
        hook.mark_skip(code)


class FrameConverter:
    """The frame callback for one `compile`/`optimize` call: what to capture and with what.

    compiler_fn: the resolved backend `(GraphModule, example_inputs) -> callable`.
    fullgraph: a graph break is an error instead of a split.
    dynamic: None (automatic), True (sizes symbolic from the start) or False (static).
    guard_export_fn / guard_fail_fn: called with the guards of a new entry / a failed guard.
    """

    def __init__(
        self, compiler_fn, *, fullgraph=False, dynamic=None, guard_export_fn=None, guard_fail_fn=None
    ):
        self.compiler_fn = compiler_fn
        self.fullgraph = fullgraph
        self.dynamic = dynamic
        self.guard_export_fn = guard_export_fn
        self.guard_fail_fn = guard_fail_fn

    def __call__(self, frame_info):
        code = frame_info.f_code
        if is_internal_code(code):
            _never_offer_again(code)
            return None
        if is_skipped_code(code):
            return None
        try:
            return self.convert(frame_info)
        except Exception:
            if not config.suppress_errors:
                raise
            log.warning("bytegraph: compiling %s failed; running it eagerly", code.co_name, exc_info=True)
            return None

    def convert(self, frame_info):
        """Capture this frame: return replacement code (and guards), or None to run it as is.

        Nothing is captured yet: the symbolic interpreter is wired in here.
        """
        return None

    def __repr__(self):
        return (
            f"FrameConverter(backend={self.compiler_fn!r}, fullgraph={self.fullgraph}, "
            f"dynamic={self.dynamic})"
        )


def make_callback(compiler_fn, *, fullgraph=False, dynamic=None, guard_export_fn=None, guard_fail_fn=None):
    """The frame callback that compiles cache misses with `compiler_fn`."""
    return FrameConverter(
        compiler_fn,
        fullgraph=fullgraph,
        dynamic=dynamic,
        guard_export_fn=guard_export_fn,
        guard_fail_fn=guard_fail_fn,
    )


def reset():
    """Forget compile-time state kept by this layer (resume-function caches, counters)."""
    # Nothing is kept yet; the tracer's caches are cleared from here.
