// torch.set_default_dtype while tracing (see default_dtype.h).
#include "trace/values/default_dtype.h"

#include "python/import.h"
#include "trace/tracer.h"

namespace bytegraph::trace {

namespace {

struct DtypeFunctions {
  py::Ref<> get, set;  // torch.get_default_dtype, torch._C._set_default_dtype

  static const DtypeFunctions& get_all() {
    static DtypeFunctions* functions = [] {  // leaked: lives as long as the interpreter
      auto* f = new DtypeFunctions();
      py::Ref<> torch = check(PyImport_ImportModule("torch"));
      f->get = check(PyObject_GetAttrString(torch.get(), "get_default_dtype"));
      py::Ref<> torch_c = check(PyObject_GetAttrString(torch.get(), "_C"));
      f->set = check(PyObject_GetAttrString(torch_c.get(), "_set_default_dtype"));
      return f;
    }();
    return *functions;
  }
};

}  // namespace

ValuePtr SetDefaultDtypeValue::call(Tracer& tracer, const Args& args, const KwArgs& kwargs) {
  if (args.size() != 1 || !kwargs.empty() || !args[0]->is_constant())
    unsupported("unsupported_call", "torch.set_default_dtype with these arguments");
  const DtypeFunctions& functions = DtypeFunctions::get_all();
  py::Ref<> before = check(PyObject_CallNoArgs(functions.get.get()));
  // Recording runs it on fakes, which is the real call (it raises for a dtype torch refuses,
  // which the trace reports as the program's error).
  ValuePtr result = tracer.record(graph::Op::CallFunction, function_.copy(), args, {});
  tracer.default_dtypes_before.push_back(std::move(before));
  return result;
}

void restore_default_dtype(Tracer& tracer, size_t count) {
  if (tracer.default_dtypes_before.size() <= count) return;
  PyObject* result = PyObject_CallOneArg(DtypeFunctions::get_all().set.get(), tracer.default_dtypes_before[count].get());
  tracer.default_dtypes_before.resize(count);
  check(result);
  Py_DECREF(result);
}

}  // namespace bytegraph::trace
