#include "record/graph_rows.h"

#include <cctype>

#include "python/errors.h"

namespace bytegraph::record {

namespace {

std::string py_text(PyObject* object, bool use_repr) {
  py::Ref<> text = py::Ref<>::steal(use_repr ? PyObject_Repr(object) : PyObject_Str(object));
  const char* utf8 = text ? PyUnicode_AsUTF8(text.get()) : nullptr;
  if (utf8 == nullptr) {
    PyErr_Clear();
    return "<?>";
  }
  return utf8;
}

// A callable's __name__, or str() of anything else (method and attribute names).
std::string target_name(PyObject* target) {
  if (PyUnicode_Check(target)) return py_text(target, false);
  py::Ref<> name = py::Ref<>::steal(PyObject_GetAttrString(target, "__name__"));
  if (name && PyUnicode_Check(name.get())) return py_text(name.get(), false);
  PyErr_Clear();
  return py_text(target, false);
}

// What FX names a node by default after its target (`sum`, `getitem`).
std::string fx_default_name(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (std::isupper(static_cast<unsigned char>(c))) {
      if (i > 0 && !out.empty() && out.back() != '_') out += '_';
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else {
      out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    }
  }
  if (out.size() > 4 && out.rfind("__", 0) == 0 && out.compare(out.size() - 2, 2, "__") == 0)
    out = out.substr(2, out.size() - 4);  // __getitem__ -> getitem, as fx does
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "_" + out;
  return out;
}

}  // namespace

GraphRows::GraphRows(PyObject* node_ref_class) : node_ref_class_(node_ref_class) {
  py::Ref<> builtins = check(PyImport_ImportModule("builtins"));
  py::Ref<> keyword = check(PyImport_ImportModule("keyword"));
  py::Ref<> names = check(PyObject_Dir(builtins.get()));
  py::Ref<> keywords = check(PyObject_GetAttrString(keyword.get(), "kwlist"));
  for (PyObject* list : {names.get(), keywords.get()})
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); ++i) reserved_.insert(py_text(PyList_GET_ITEM(list, i), false));
}

std::string GraphRows::unused_name(const std::string& base) {
  std::string candidate = base;
  for (int suffix = 1; used_.count(candidate) || reserved_.count(candidate); ++suffix)
    candidate = base + "_" + std::to_string(suffix);
  used_.insert(candidate);
  return candidate;
}

std::string GraphRows::name_for(const graph::Node& node) {
  std::string name = unused_name(node.name.empty() ? fx_default_name(target_name(node.target.get())) : node.name);
  // Renamed after the local it was stored into; the default name stays taken, as in FX.
  return node.local_name.empty() ? name : unused_name(node.local_name);
}

std::string GraphRows::render_arg(PyObject* arg) {
  if (PyObject_TypeCheck(arg, reinterpret_cast<PyTypeObject*>(node_ref_class_))) {
    py::Ref<> index = py::Ref<>::steal(PyObject_GetAttrString(arg, "index"));
    long i = index ? PyLong_AsLong(index.get()) : -1;
    if (i >= 0 && static_cast<size_t>(i) < names_.size()) return names_[i];
    PyErr_Clear();
    return "<node ?>";
  }
  if (PyTuple_Check(arg) || PyList_Check(arg)) {
    bool tuple = PyTuple_Check(arg);
    Py_ssize_t n = PySequence_Fast_GET_SIZE(arg);
    std::string out = tuple ? "(" : "[";
    for (Py_ssize_t i = 0; i < n; ++i)
      out += (i ? ", " : "") + render_arg(PySequence_Fast_GET_ITEM(arg, i));
    if (tuple && n == 1) out += ",";
    return out + (tuple ? ")" : "]");
  }
  if (PyDict_Check(arg)) {
    std::string out = "{";
    PyObject *key, *value;  // borrowed
    Py_ssize_t position = 0;
    bool first = true;
    while (PyDict_Next(arg, &position, &key, &value)) {
      out += (first ? "" : ", ") + py_text(key, true) + ": " + render_arg(value);
      first = false;
    }
    return out + "}";
  }
  return py_text(arg, true);
}

std::string GraphRows::render(const graph::Node& node, const std::string& name) {
  std::string args = node.args ? render_arg(node.args.get()) : "()";
  std::string kwargs = node.kwargs ? render_arg(node.kwargs.get()) : "{}";
  return std::string(graph::op_name(node.op)) + "  " + name + "  " + target_name(node.target.get()) + "  " +
         args + "  " + kwargs;
}

void GraphRows::forget_from(size_t length) {
  seen_.resize(length);
  local_names_.resize(length);
  names_.resize(length);
  rows_.resize(length);
  used_.clear();
  used_.insert(names_.begin(), names_.end());
}

size_t GraphRows::update(const graph::Graph& graph) {
  size_t kept = 0;
  while (kept < seen_.size() && kept < graph.size()) {
    if (seen_[kept] != graph.node(kept).serial || local_names_[kept] != graph.node(kept).local_name) break;
    ++kept;
  }
  if (kept < seen_.size()) forget_from(kept);
  for (size_t i = kept; i < graph.size(); ++i) {
    const graph::Node& node = graph.node(i);
    names_.push_back(name_for(node));
    rows_.push_back(render(node, names_.back()));
    seen_.push_back(node.serial);
    local_names_.push_back(node.local_name);
  }
  return kept;
}

}  // namespace bytegraph::record
