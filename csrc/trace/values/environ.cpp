// os.environ reads: see values/environ.h.
#include "trace/values/environ.h"
#include "trace/values/exceptions.h"

namespace bytegraph::trace {

namespace {

class EnvironMethodValue : public Value {
 public:
  EnvironMethodValue(std::shared_ptr<EnvironValue> environ, std::string name)
      : environ_(std::move(environ)), name_(std::move(name)) {}
  std::string repr() const override { return environ_->repr() + "." + name_; }
  std::pair<ValuePtr, std::string> bound_attribute() const override { return {environ_, name_}; }
  ValuePtr call(Tracer& tracer, const Args& args, const KwArgs& kwargs) override {
    if (!kwargs.empty() || args.empty() || args.size() > 2) unsupported("unsupported_call", repr() + " with these arguments");
    ValuePtr value = environ_->read(tracer, args[0]);
    if (name_ == "__contains__") return ConstantValue::make(py::Ref<>::newref(value ? Py_True : Py_False));
    if (name_ == "__getitem__") return environ_->get_item(tracer, args[0]);
    return value ? value : (args.size() == 2 ? args[1] : ConstantValue::none());  // get
  }

 private:
  std::shared_ptr<EnvironValue> environ_;
  std::string name_;
};

}  // namespace

bool is_os_environ(PyObject* object) {
  static PyObject* environ = [] {
    py::Ref<> os = check(PyImport_ImportModule("os"));
    return check(PyObject_GetAttrString(os.get(), "environ")).release();  // kept for the process
  }();
  return object == environ;
}

ValuePtr EnvironValue::read(Tracer& tracer, const ValuePtr& key) {
  if (!key->is_constant() || !PyUnicode_Check(key->constant()))
    unsupported("unsupported_subscript", "os.environ[" + key->repr() + "] (the name is not a constant string)");
  py::Ref<> data = check(PyObject_GetAttrString(environ_.get(), "_data"));
  py::Ref<> encoded = check(PyObject_CallMethod(environ_.get(), "encodekey", "O", key->constant()));
  if (!PyDict_Check(data.get())) unsupported("unsupported_attribute", "os.environ._data is not a dict");
  guards::SourcePtr data_source = source() ? guards::attr_source(source(), "_data") : nullptr;
  if (!data_source) unsupported("unsupported_attribute", "os.environ reached without a source to guard");
  PyObject* raw = PyDict_GetItemWithError(data.get(), encoded.get());  // borrowed
  if (raw == nullptr) {
    if (PyErr_Occurred()) throw_python_error();
    tracer.guards.add(GuardLog::Kind::LacksKey, data_source, encoded.get());
    return nullptr;
  }
  tracer.guards.add(GuardLog::Kind::Equals, guards::item_source(data_source, encoded.copy()), raw);
  return ConstantValue::make(check(PyObject_CallMethod(environ_.get(), "decodevalue", "O", raw)));
}

ValuePtr EnvironValue::get_item(Tracer& tracer, const ValuePtr& key) {
  if (ValuePtr value = read(tracer, key)) return value;
  raise_error("key_error", PyExc_KeyError, key);
}

ValuePtr EnvironValue::get_attr(Tracer&, const std::string& name) {
  if (name == "get" || name == "__getitem__" || name == "__contains__")
    return std::make_shared<EnvironMethodValue>(std::static_pointer_cast<EnvironValue>(shared_from_this()), name);
  unsupported("unsupported_attribute", repr() + "." + name);
}

}  // namespace bytegraph::trace
