#include "frame/captured_call.h"

#include <cxxabi.h>
#include <structmember.h>

#include <memory>

#include "frame/eval_hook.h"
#include "frame/python_compiler.h"
#include "frame/thread_state.h"
#include "python/errors.h"

namespace bytegraph::frame {
namespace {

bool g_forced_eager = false;
bool g_verify = false;

struct CapturedCall {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  PyObject* fn;
  PyObject* callback;
  PyObject* verified_call;
  PyObject* bad_outputs;  // called with a result that is not `expected_outputs` values (it raises)
  Py_ssize_t expected_outputs;  // -1: results are not checked (any more)
  PyObject* dict;
  PyObject* weakrefs;
  std::shared_ptr<FrameCompiler>* compiler;  // made once, for every call
};

CapturedCall* as_captured(PyObject* self) { return reinterpret_cast<CapturedCall*>(self); }

}  // namespace

void new_module_generation() {
  // torch's install_generation_tagging_init patches Module.__init__ on its first call and
  // then only counts; once it has run, the count is done here without a Python frame.
  static PyObject* tracker_class = nullptr;  // GenerationTracker, held for the process
  static PyObject* generation = PyUnicode_InternFromString("generation");
  if (tracker_class != nullptr) {
    py::Ref<> current = check(PyObject_GetAttr(tracker_class, generation));
    static PyObject* one = PyLong_FromLong(1);
    py::Ref<> next = check(PyNumber_Add(current.get(), one));
    check_status(PyObject_SetAttr(tracker_class, generation, next.get()));
    return;
  }
  static PyObject* key = PyUnicode_InternFromString("torch._dynamo.mutation_guard");
  static PyObject* method = PyUnicode_InternFromString("install_generation_tagging_init");
  PyObject* tracker = PyDict_GetItemWithError(PyImport_GetModuleDict(), key);  // borrowed
  if (tracker == nullptr) {
    if (PyErr_Occurred()) throw_python_error();
    return;
  }
  check(PyObject_CallMethodNoArgs(tracker, method));  // patches Module.__init__ once, then counts
  tracker_class = check(PyObject_GetAttrString(tracker, "GenerationTracker")).release();
}

namespace {

// Not noexcept: a thread ended by the interpreter's finalization unwinds through here (see
// eval_hook.cpp's eval_frame_hook).
PyObject* call(PyObject* self_object, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  CapturedCall* self = as_captured(self_object);
  try {
    std::shared_ptr<FrameCompiler> compiler;
    py::Ref<> handle;
    if (*self->compiler) {  // capturing (a callback of None turns capture off)
      if (g_verify) return PyObject_Vectorcall(self->verified_call, args, nargsf, kwnames);
      new_module_generation();
      if (!g_forced_eager) {
        compiler = *self->compiler;
        handle = py::Ref<>::newref(self->callback);
      }
    }
    py::Ref<> outputs;
    {
      const bool capturing = compiler != nullptr;
      CompilerScope scope(std::move(compiler), std::move(handle));
      PyObject* direct = nullptr;
      if (capturing && call_cached_entry(self->fn, args, nargsf, kwnames, &direct)) {
        outputs = py::Ref<>::steal(direct);
      } else {
        outputs = py::Ref<>::steal(PyObject_Vectorcall(self->fn, args, nargsf, kwnames));
      }
    }
    if (!outputs || self->expected_outputs < 0) return outputs.release();
    const bool sequence = PyTuple_Check(outputs.get()) || PyList_Check(outputs.get());
    if (sequence && PySequence_Fast_GET_SIZE(outputs.get()) == self->expected_outputs) {
      self->expected_outputs = -1;  // checked once: the backend returns what the graph does
      return outputs.release();
    }
    py::Ref<> raised = py::Ref<>::steal(PyObject_CallOneArg(self->bad_outputs, outputs.get()));
    if (raised) PyErr_SetString(PyExc_TypeError, "the compiled graph returned the wrong number of values");
    return nullptr;
  } catch (abi::__forced_unwind&) {
    throw;
  } catch (...) {
    set_python_error_from_current_exception();
    return nullptr;
  }
}

PyObject* make(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  PyObject *fn, *callback, *verified_call, *bad_outputs = Py_None;
  Py_ssize_t expected_outputs = -1;
  static const char* names[] = {"fn", "callback", "verified_call", "expected_outputs", "bad_outputs", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO|nO:CapturedCall", const_cast<char**>(names), &fn, &callback,
                                   &verified_call, &expected_outputs, &bad_outputs))
    return nullptr;
  if (expected_outputs >= 0 && !PyCallable_Check(bad_outputs)) {
    PyErr_SetString(PyExc_TypeError, "CapturedCall: expected_outputs needs a bad_outputs callable");
    return nullptr;
  }
  const bool capturing = callback != Py_None;
  if (!PyCallable_Check(fn) || (capturing && (!PyCallable_Check(callback) || !PyCallable_Check(verified_call)))) {
    PyErr_SetString(PyExc_TypeError,
                    "CapturedCall(fn, callback, verified_call) takes three callables, or fn, None, None (capture off)");
    return nullptr;
  }
  try {
    auto compiler = std::make_unique<std::shared_ptr<FrameCompiler>>();
    if (capturing) *compiler = std::make_shared<PythonCallbackCompiler>(py::Ref<>::newref(callback));
    CapturedCall* self = as_captured(type->tp_alloc(type, 0));
    if (self == nullptr) return nullptr;
    self->vectorcall = call;
    self->fn = Py_NewRef(fn);
    self->callback = Py_NewRef(callback);
    self->verified_call = Py_NewRef(verified_call);
    self->bad_outputs = Py_NewRef(bad_outputs);
    self->expected_outputs = expected_outputs;
    self->compiler = compiler.release();
    return reinterpret_cast<PyObject*>(self);
  } catch (...) {
    set_python_error_from_current_exception();
    return nullptr;
  }
}

int traverse(PyObject* self_object, visitproc visit, void* arg) {
  CapturedCall* self = as_captured(self_object);
  Py_VISIT(Py_TYPE(self_object));
  Py_VISIT(self->fn);
  Py_VISIT(self->callback);
  Py_VISIT(self->verified_call);
  Py_VISIT(self->bad_outputs);
  Py_VISIT(self->dict);
  return 0;
}

int clear(PyObject* self_object) {
  CapturedCall* self = as_captured(self_object);
  Py_CLEAR(self->fn);
  Py_CLEAR(self->callback);
  Py_CLEAR(self->verified_call);
  Py_CLEAR(self->bad_outputs);
  Py_CLEAR(self->dict);
  return 0;
}

void dealloc(PyObject* self_object) {
  CapturedCall* self = as_captured(self_object);
  PyTypeObject* type = Py_TYPE(self_object);
  PyObject_GC_UnTrack(self_object);
  if (self->weakrefs != nullptr) PyObject_ClearWeakRefs(self_object);
  clear(self_object);
  delete self->compiler;  // its callback reference is released here, after ours
  self->compiler = nullptr;
  type->tp_free(self_object);
  Py_DECREF(type);
}

// A class attribute binds like a function: `instance.method` is a bound method of the call.
PyObject* bind(PyObject* self, PyObject* instance, PyObject*) {
  if (instance == nullptr || instance == Py_None) return Py_NewRef(self);
  return PyMethod_New(self, instance);
}

PyObject* repr(PyObject* self) {
  return PyUnicode_FromFormat("<bytegraph captured call of %R>", as_captured(self)->fn);
}

// Like a function, it is the same object when copied (modules holding one deep-copy).
PyObject* same(PyObject* self, PyObject*) { return Py_NewRef(self); }

PyMethodDef methods[] = {
    {"__copy__", same, METH_NOARGS, nullptr},
    {"__deepcopy__", same, METH_O, nullptr},
    {nullptr, nullptr, 0, nullptr},
};

PyMemberDef members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(CapturedCall, vectorcall), READONLY, nullptr},
    {"__dictoffset__", T_PYSSIZET, offsetof(CapturedCall, dict), READONLY, nullptr},
    {"__weaklistoffset__", T_PYSSIZET, offsetof(CapturedCall, weakrefs), READONLY, nullptr},
    {"fn", T_OBJECT, offsetof(CapturedCall, fn), READONLY, "the function it calls"},
    {"callback", T_OBJECT, offsetof(CapturedCall, callback), READONLY, "the frame callback set around each call"},
    {nullptr, 0, 0, 0, nullptr},
};

PyGetSetDef getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, nullptr, nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyType_Slot slots[] = {
    {Py_tp_new, reinterpret_cast<void*>(make)},
    {Py_tp_dealloc, reinterpret_cast<void*>(dealloc)},
    {Py_tp_traverse, reinterpret_cast<void*>(traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(clear)},
    {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
    {Py_tp_descr_get, reinterpret_cast<void*>(bind)},
    {Py_tp_repr, reinterpret_cast<void*>(repr)},
    {Py_tp_members, members},
    {Py_tp_methods, methods},
    {Py_tp_getset, getset},
    {0, nullptr},
};

PyType_Spec spec = {
    "bytegraph._C.frame.CapturedCall",
    sizeof(CapturedCall),
    0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    slots,
};

}  // namespace

void add_captured_call_type(PyObject* module) {
  py::Ref<> type = check(PyType_FromSpec(&spec));
  check_status(PyModule_AddObjectRef(module, "CapturedCall", type.get()));
}

void set_forced_eager(bool forced) { g_forced_eager = forced; }
void set_verify_correctness(bool verify) { g_verify = verify; }

}  // namespace bytegraph::frame
