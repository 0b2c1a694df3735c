#include "python/break_kinds.h"

#include <algorithm>
#include <array>

namespace bytegraph {
namespace {

// Sorted by name (checked by a unit test); one line of advice each, addressed to the user
// whose code broke the graph.
constexpr std::array kBreakKinds = {
    BreakKind{"attribute_error", "the attribute does not exist when traced (AttributeError); it runs eagerly so "
                                 "the error is raised, or caught, as Python does"},
    BreakKind{"bad_call", "the call would raise a TypeError (wrong arguments); it runs eagerly so the error is "
                          "raised as Python raises it"},
    BreakKind{"comptime", "pass comptime() a function of one argument; its helpers need values known at compile "
                          "time"},
    BreakKind{"comptime_graph_break", "the comptime function asked for this break (ctx.graph_break())"},
    BreakKind{"constant_fold_raised", "this operation raises when computed on its constant arguments; it runs "
                                      "eagerly so the error is raised as Python raises it"},
    BreakKind{"cyclic_value", "an argument or global nests too deeply (or refers to itself); pass the tensors it "
                              "holds instead"},
    BreakKind{"data_dependent_branch", "the branch depends on a tensor's value; compute both sides with "
                                       "torch.where, or move the branch out of the compiled region"},
    BreakKind{"data_dependent_op", "the operation's output depends on tensor values (e.g. .item(), nonzero); "
                                   "keep it out of the compiled function (.item() and .tolist() stay in the "
                                   "graph with bytegraph.config.capture_scalar_outputs, or under fullgraph)"},
    BreakKind{"dict_changed_size", "a loop over a dict goes on after the dict changed size, which raises "
                                   "RuntimeError; it runs eagerly so the error is raised as Python raises it"},
    BreakKind{"disabled_function", "the function is wrapped by bytegraph.disable() and runs eagerly; remove "
                                   "disable() to capture it"},
    BreakKind{"distributed_tensor", "a tensor subclass of torch.distributed that does not flatten "
                                    "(__tensor_flatten__), so it cannot be faked: the code that reads it runs "
                                    "eagerly, correct but uncompiled (DTensor flattens and is traced)"},
    BreakKind{"explicit_graph_break", "remove bytegraph.graph_break() to capture one graph"},
    BreakKind{"fake_op_failed", "the operation failed on fake tensors (shapes or dtypes that do not fit, or an op "
                                "without a meta kernel); check the inputs' shapes, or keep the op out of the "
                                "compiled function"},
    BreakKind{"forced_by_test", "BYTEGRAPH_TEST_TRACER=break is set: every frame breaks (a switch for testing "
                                "the tests); unset it"},
    BreakKind{"frame_introspection", "the call reads the calling frame (sys._getframe(), inspect.currentframe(), "
                                     "dir()); the frame runs eagerly so that it sees its own frame"},
    BreakKind{"generator", "generators are run eagerly and consumed whole; iterate a list instead, or keep the "
                           "generator (or coroutine) out of the compiled function"},
    BreakKind{"index_error", "the indexing raises IndexError; it runs eagerly so the error is raised as Python "
                             "raises it"},
    BreakKind{"key_error", "the lookup raises KeyError; it runs eagerly so the error is raised as Python raises "
                           "it"},
    BreakKind{"lasting_op_after_side_effect",
              "an op whose effect outlasts the graph (an in-place write into an input or a module's tensor, "
              "running statistics) and a Python side effect before a tensor op go to separate graphs, so "
              "that an op failing when the graph runs leaves the side effects Python made before it; move the "
              "side effect after the tensor work to capture it in one graph"},
    BreakKind{"lasting_op_in_try",
              "an op whose effect outlasts the graph (an in-place write into an input or a module's tensor, "
              "running statistics) inside try/except or try/finally runs in a graph of its own, so that "
              "an error after it is handled as Python does without doing it twice; move it out of the try block "
              "to capture it in one graph"},
    BreakKind{"module_hooks", "modules with forward or backward hooks are called eagerly; remove the hooks or "
                              "compile the module without them"},
    BreakKind{"name_error", "the name is not defined when traced; define it before the call (a global assigned "
                            "later is read at compile time)"},
    BreakKind{"print", "print() writes outside the graph; remove it, or log after the compiled call"},
    BreakKind{"python_error", "Python code run while tracing raised; the frame continues eagerly from here so "
                              "the exception is raised (or handled) as Python does it"},
    BreakKind{"recursion_limit", "calls nest deeper than bytegraph inlines; make the recursion shallower or "
                                 "compile the inner function on its own"},
    BreakKind{"side_effect", "the function mutates state that outlives the call; return the new value instead"},
    BreakKind{"stop_iteration", "next() on an exhausted iterator raises StopIteration; it runs eagerly so the "
                                "error is raised as Python raises it"},
    BreakKind{"tensor_effect", "the tensor method acts outside the graph (retain_grad(), backward(), hooks, "
                               "reading .grad of an intermediate); call it outside the compiled function"},
    BreakKind{"unbound_local", "a variable is read before it is assigned (UnboundLocalError); it runs eagerly so "
                               "the error is raised as Python raises it"},
    BreakKind{"uncaught_exception", "the exception is not caught inside the compiled code: the instruction it "
                                    "leaves the frame from runs eagerly, so it is raised as Python raises it"},
    BreakKind{"unfakeable_tensor", "this tensor cannot be copied as a fake tensor (its autograd metadata raises "
                                   "when read, or changes in the copy: a view whose base was written in place with a "
                                   "value that requires grad); the frame runs eagerly for this call; pass a .clone() "
                                   "to capture it"},
    BreakKind{"unsupported_attribute", "this attribute is not captured (a property, a C attribute or a missing "
                                       "one); read it outside the compiled function and pass the value in"},
    BreakKind{"unsupported_branch", "the branch tests a value whose truth is unknown at compile time; branch on "
                                    "constants, tensors' shapes, or a bool computed outside"},
    BreakKind{"unsupported_builtin", "this builtin (or these arguments to it) is not captured; call it outside "
                                     "the compiled function"},
    BreakKind{"unsupported_call", "calls of this kind of object (or with these arguments) are not captured; call "
                                  "it outside the compiled function or pass its result in"},
    BreakKind{"unsupported_context", "only torch.no_grad()/torch.enable_grad() blocks are captured; move other "
                                     "`with` blocks out of the compiled function"},
    BreakKind{"unsupported_dict", "dict keys must be constants (str, int, ...) to be captured; use constant "
                                  "keys or build the dict outside"},
    BreakKind{"unsupported_format", "string formatting of tensors or other symbolic values is not captured; "
                                    "format outside the compiled function"},
    BreakKind{"unsupported_graph_arg", "this value cannot be an argument of a graph operation; pass tensors, "
                                       "numbers or constants"},
    BreakKind{"unsupported_identity", "`is` between these values cannot be decided at compile time; compare "
                                      "with == or decide outside"},
    BreakKind{"unsupported_import", "only imports of modules already loaded are captured; import the module at "
                                    "the top of the file"},
    BreakKind{"unsupported_iteration", "iterating this value is not captured; iterate a list, tuple, dict, "
                                       "range or tensor"},
    BreakKind{"unsupported_op_result", "the operation returned something other than tensors, numbers or "
                                       "sequences of them; call it outside the compiled function"},
    BreakKind{"unsupported_opcode", "this bytecode instruction is not captured yet; move the construct out of "
                                    "the compiled function"},
    BreakKind{"unsupported_operator", "this operator is not captured on these operand types; use a torch "
                                      "function or compute it outside"},
    BreakKind{"unsupported_return", "the function returns a value bytegraph cannot rebuild after the graph; "
                                    "return tensors, constants, containers of them or the arguments"},
    BreakKind{"unsupported_set", "sets of tensors, or of items unknown at compile time, are not captured; use a list "
                                 "or tuple"},
    BreakKind{"unsupported_subscript", "this subscript (a symbolic key or slice bound, or an unsupported "
                                       "container) is not captured; index with constants"},
    BreakKind{"untracked_tensor", "the tensor was not read from an argument, a global or a module attribute; "
                                  "pass it as an argument"},
    BreakKind{"value_error", "the operation raises ValueError; it runs eagerly so the error is raised as Python "
                             "raises it"},
};

constexpr std::string_view kGenericHint = "move the unsupported code out of the compiled function";

}  // namespace

std::span<const BreakKind> break_kinds() { return kBreakKinds; }

const BreakKind* find_break_kind(std::string_view name) {
  auto found = std::lower_bound(kBreakKinds.begin(), kBreakKinds.end(), name,
                                [](const BreakKind& kind, std::string_view key) { return kind.name < key; });
  return found != kBreakKinds.end() && found->name == name ? &*found : nullptr;
}

std::string_view break_hint(std::string_view kind) {
  const BreakKind* found = find_break_kind(kind);
  return found ? found->hint : kGenericHint;
}

}  // namespace bytegraph
