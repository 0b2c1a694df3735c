"""comptime: run Python code while bytegraph traces a function, and look at what it sees.

    from bytegraph import comptime

    def f(x):
        y = x * 2
        comptime(lambda ctx: ctx.print_locals())   # runs at compile time, prints y's symbolic value
        comptime.print_graph()                      # the graph recorded so far
        return y + 1

`comptime(fn)` calls `fn(ctx)` when the tracer reaches the call, with a `ComptimeContext`
bound to the live trace; run eagerly it does nothing. The context reads the C++ tracer's
state through `bytegraph._C.introspect` and is valid only during that call.
"""

import traceback

import torch

from bytegraph._extension import _C

__all__ = ["ComptimeContext", "ComptimeVar", "comptime"]


class ComptimeVar:
    """A value of the traced program at one point of its symbolic evaluation.

    Tensors are known by their metadata only (a fake tensor), not their data.
    """

    def __init__(self, value, context):
        self.__value = value  # a _C.introspect.SymbolicValue
        self.__context = context

    def as_proxy(self):
        """The torch.fx.Proxy of this value's node in `ctx.graph()` (a tuple/list of proxies
        for a tuple/list of tensors). Raises TypeError for values not in the graph."""
        items = self.__value.items
        if items is not None:
            return type(items)(ComptimeVar(item, self.__context).as_proxy() for item in items)
        if not self.__value.is_tensor():
            raise TypeError(f"{self!r} is not in the graph (only tensors are); it has no proxy")
        position = self.__value.graph_position()
        if position < 0:
            raise TypeError(f"{self!r} has no node in the graph")
        node = list(self.__context.graph().nodes)[position]
        return torch.fx.Proxy(node)

    def is_proxy(self):
        """True if as_proxy() would succeed."""
        items = self.__value.items
        if items is not None:
            return all(ComptimeVar(item, self.__context).is_proxy() for item in items)
        return self.__value.is_tensor()

    def as_fake(self):
        """The fake tensor of a tensor value (query its metadata; do not mutate it). An int
        known at compile time is returned as is (shapes are static)."""
        if self.__value.is_tensor():
            return self.__value.fake
        if self.__value.is_constant() and isinstance(self.__value.as_constant(), int):
            return self.__value.as_constant()
        raise TypeError(f"{self!r} is neither a tensor nor an int; it has no fake value")

    def python_type(self):
        """type(v) of the value at run time."""
        result = self.__value.python_type()
        if result is None:
            raise TypeError(f"the run-time type of {self!r} is not known at compile time")
        return result

    def as_python_constant(self):
        """The value, if completely known at compile time (do not mutate it). Raises
        TypeError naming the value otherwise."""
        return self.__value.as_constant()

    def is_python_constant(self):
        """True if as_python_constant() would succeed."""
        return self.__value.is_constant()

    def _i_will_not_complain_if_bc_breaks_SymbolicValue(self):
        """The internal symbolic value; no compatibility promise."""
        return self.__value

    def __repr__(self):
        return repr(self.__value)


class ComptimeContext:
    """What a comptime function receives: read access to the trace in progress.

    `stacklevel` walks out through inlined frames: 0 is the frame that called comptime, 1
    the frame that called that one, and so on up to the compiled function.
    """

    def __init__(self, state):
        self.__state = state  # a _C.introspect.ComptimeState
        self.__graph_module = None

    def get_local(self, name: str, *, stacklevel=0) -> ComptimeVar:
        """The compile-time value of local `name` (NameError if unbound)."""
        return ComptimeVar(self.__state.local(name, stacklevel), self)

    def graph_break(self, msg="ComptimeContext.graph_break"):
        """End the graph before the comptime call; the rest of the function is captured
        after it (raises to unwind the comptime function)."""
        self.__state.graph_break(msg)

    def graph(self):
        """The torch.fx.Graph recorded so far (a copy; changing it changes nothing)."""
        return self._graph_module().graph

    def _graph_module(self):
        if self.__graph_module is None:
            self.__graph_module = self.__state.graph_module()
        return self.__graph_module

    def print_graph(self, *, verbose=True, file=None):
        """Print the graph recorded so far as Python code."""
        print(self.graph().python_code("self", verbose=verbose).src.lstrip("\n"), file=file)

    def print_disas(self, *, file=None, stacklevel=0):
        """Print the bytecode of the frame at `stacklevel`, with the current instruction
        marked `-->`."""
        from bytegraph.bytecode import decode, dis

        code = self.__state.code(stacklevel)
        offset = self.__state.offset(stacklevel)
        instructions = decode(code)
        current = next((inst for inst in instructions if inst.offset == offset), None)
        print(dis(instructions, current), file=file)

    def print_value_stack(self, *, file=None, stacklevel=0):
        """Print the value stack of the frame at `stacklevel`, bottom first, one `- value`
        per line. At stacklevel 0 it is usually empty; print_value_stack_and_return shows
        the caller's pending operands."""
        for value in self.__state.stack(stacklevel):
            print(f"- {value!r}", file=file)

    def print_locals(self, *, file=None, stacklevel=0):
        """Print the bound locals of the frame at `stacklevel`, one `name = value` per line."""
        for name, value in self.__state.locals(stacklevel):
            print(f"{name} = {value!r}", file=file)

    def print_bt(self, *, file=None, stacklevel=0):
        """Print the user backtrace from the compiled function down to the frame at
        `stacklevel`, through inlined calls (like a traceback, outermost first)."""
        frames = [
            traceback.FrameSummary(filename, lineno, name)
            for filename, lineno, name, _ in self.__state.backtrace(stacklevel)
        ]
        print("".join(traceback.StackSummary.from_list(frames).format()), file=file)

    def print_guards(self, *, file=None):
        """Print the guards installed so far, one `- guard` per line (values used later
        may add more)."""
        print("\n".join(f"- {guard}" for guard in self.__state.guards()), file=file)

    def _i_will_not_complain_if_bc_breaks_ComptimeState(self):
        """The internal trace state; no compatibility promise."""
        return self.__state


def comptime(fn):
    """Call fn(ctx) while bytegraph traces this line, with ctx a ComptimeContext; run
    eagerly this does nothing. The tracer recognises this function by its marker."""


comptime._bytegraph_comptime = True


# Convenience wrappers: each describes its caller (hence stacklevel + 1, read from the
# wrapper's own frame at compile time).
def graph_break():
    comptime(lambda ctx: ctx.graph_break())


def print_graph():
    comptime(lambda ctx: ctx.print_graph())


def print_disas(*, stacklevel=0):
    comptime(lambda ctx: ctx.print_disas(stacklevel=ctx.get_local("stacklevel").as_python_constant() + 1))


def print_value_stack(*, stacklevel=0):
    comptime(lambda ctx: ctx.print_value_stack(stacklevel=ctx.get_local("stacklevel").as_python_constant() + 1))


def print_value_stack_and_return(e, *, stacklevel=0):
    """print_value_stack usable inside an expression: `x + print_value_stack_and_return(y)`
    shows x waiting on the stack; returns e."""
    comptime(lambda ctx: ctx.print_value_stack(stacklevel=ctx.get_local("stacklevel").as_python_constant() + 1))
    return e


def print_locals(*, stacklevel=0):
    comptime(lambda ctx: ctx.print_locals(stacklevel=ctx.get_local("stacklevel").as_python_constant() + 1))


def print_bt(*, stacklevel=0):
    comptime(lambda ctx: ctx.print_bt(stacklevel=ctx.get_local("stacklevel").as_python_constant() + 1))


def print_guards():
    comptime(lambda ctx: ctx.print_guards())


comptime.graph_break = graph_break
comptime.print_graph = print_graph
comptime.print_disas = print_disas
comptime.print_value_stack = print_value_stack
comptime.print_value_stack_and_return = print_value_stack_and_return
comptime.print_locals = print_locals
comptime.print_bt = print_bt
comptime.print_guards = print_guards
