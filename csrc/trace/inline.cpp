// Inlining: a user function's bytecode runs in a child frame state that shares the trace's
// graph and guards. Arguments are bound as CPython binds them (positional, keywords,
// defaults, *args, **kwargs).
#include "trace/interpreter.h"
#include "trace/values/generators.h"
#include "trace/values/exceptions.h"

namespace bytegraph::trace {

namespace {

constexpr int kMaxInlineDepth = 64;

void bind_arguments(const CodeInfo& info, const UserFunctionValue& function, const Args& args,
                    const KwArgs& kwargs, Args& locals) {
  int argcount = info.argcount;
  int posonly = info.posonlyargcount;
  int kwonly = info.kwonlyargcount;
  int flags = info.flags;
  const auto& names = info.localsplus_names;
  int slot = argcount + kwonly;
  int varargs_slot = (flags & CO_VARARGS) ? slot++ : -1;
  int varkw_slot = (flags & CO_VARKEYWORDS) ? slot++ : -1;

  // Messages as CPython words them, naming the function by its qualified name.
  py::Ref<> qualname_object = check(PyObject_GetAttrString(function.code.get(), "co_qualname"));
  const std::string name_text = std::string(PyUnicode_AsUTF8(qualname_object.get())) + "()";
  Args extra;
  for (size_t i = 0; i < args.size(); ++i) {
    if (static_cast<int>(i) < argcount) locals[i] = args[i];
    else extra.push_back(args[i]);
  }
  if (!extra.empty() && varargs_slot < 0) {
    const int defaults = static_cast<int>(function.defaults.size());
    std::string takes = defaults > 0 ? "from " + std::to_string(argcount - defaults) + " to " + std::to_string(argcount) +
                                           " positional arguments"
                                     : std::to_string(argcount) + " positional argument" + (argcount == 1 ? "" : "s");
    raise_error("bad_call", PyExc_TypeError, name_text + " takes " + takes + " but " + std::to_string(args.size()) +
                                                 (args.size() == 1 ? " was" : " were") + " given");
  }
  if (varargs_slot >= 0) locals[varargs_slot] = std::make_shared<SequenceValue>(false, std::move(extra));
  auto varkw = varkw_slot >= 0 ? std::make_shared<DictValue>() : nullptr;
  for (const auto& [name, value] : kwargs) {
    int found = -1;
    for (int i = posonly; i < argcount + kwonly; ++i)
      if (names[i] == name) found = i;
    if (found >= 0) {
      if (locals[found]) raise_error("bad_call", PyExc_TypeError, name_text + " got multiple values for argument '" + name + "'");
      locals[found] = value;
    } else if (varkw) {
      varkw->set_item(check(PyUnicode_FromString(name.c_str())).get(), value);
    } else {
      raise_error("bad_call", PyExc_TypeError, name_text + " got an unexpected keyword argument '" + name + "'");
    }
  }
  if (varkw) locals[varkw_slot] = varkw;
  auto missing = [&](const std::vector<std::string>& absent, const char* kind) {
    std::string listed;
    for (size_t i = 0; i < absent.size(); ++i) {
      if (i > 0) listed += absent.size() == 2 ? " and " : (i + 1 == absent.size() ? ", and " : ", ");
      listed += "'" + absent[i] + "'";
    }
    raise_error("bad_call", PyExc_TypeError, name_text + " missing " + std::to_string(absent.size()) + " required " + kind +
                                                 " argument" + (absent.size() == 1 ? "" : "s") + ": " + listed);
  };
  int first_default = argcount - static_cast<int>(function.defaults.size());
  std::vector<std::string> absent;
  for (int i = 0; i < argcount; ++i) {
    if (!locals[i] && i >= first_default) locals[i] = function.defaults[i - first_default];
    if (!locals[i]) absent.push_back(names[i]);
  }
  if (!absent.empty()) missing(absent, "positional");
  for (int i = argcount; i < argcount + kwonly; ++i) {
    if (locals[i]) continue;
    for (const auto& [name, value] : function.kwdefaults)
      if (name == names[i]) locals[i] = value;
    if (!locals[i]) absent.push_back(names[i]);
  }
  if (!absent.empty()) missing(absent, "keyword-only");
}

}  // namespace

guards::SourcePtr held_globals_source(PyObject* globals) {
  PyObject* name = PyDict_GetItemString(globals, "__name__");  // borrowed
  std::string text = name && PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : "?";
  return guards::held_source(py::Ref<>::newref(globals), "G(" + text + ")");
}

ValuePtr Tracer::inline_call(const UserFunctionValue& function, const Args& args, const KwArgs& kwargs) {
  if (inline_depth_ >= kMaxInlineDepth) unsupported("recursion_limit", "inlining deeper than 64 calls");
  if (function.code.get() == Bridge::get().lazy_infer_code.get()) return initialize_lazy_module(*this, args, kwargs);
  CodeInfo& info = code_info(function.code.get());
  if (info.flags & (CO_COROUTINE | CO_ASYNC_GENERATOR | CO_ITERABLE_COROUTINE))
    unsupported("generator", "calling the coroutine function " + function.name);
  FrameState child;
  child.code = &info;
  child.globals = function.globals.copy();
  PyObject* builtins = PyDict_GetItemString(child.globals.get(), "__builtins__");  // borrowed
  child.builtins = py::Ref<>::newref(builtins ? builtins : PyEval_GetBuiltins());
  child.root_globals = frames.empty() ? false : frames.front()->globals.get() == child.globals.get();
  child.root_builtins = frames.empty() ? false : frames.front()->builtins.get() == child.builtins.get();
  // Another module's globals are read through the dict itself: the function that owns it is
  // pinned (by its code and globals, or by its class), so the dict is this one.
  if (!child.root_globals) child.globals_source = held_globals_source(child.globals.get());
  if (!child.root_builtins) child.builtins_source = guards::held_source(child.builtins.copy(), "builtins");
  child.locals.resize(info.localsplus_names.size());
  child.closure = function.closure;
  bind_arguments(info, function, args, kwargs, child.locals);
  // Calling a generator function (genexprs included) runs none of its body: the generator
  // runs a step at a time as its consumer asks for items.
  if (info.flags & CO_GENERATOR) return make_generator(*this, std::move(child), function, args, kwargs);
  ++inline_depth_;
  struct Depth {
    int& depth;
    ~Depth() { --depth; }
  } restore{inline_depth_};
  return run_frame(*this, child, nullptr);
}

}  // namespace bytegraph::trace
