#include "graph/graph.h"

#include <algorithm>
#include <cctype>

#include "python/errors.h"

namespace bytegraph::graph {

const char* op_name(Op op) {
  switch (op) {
    case Op::Placeholder: return "placeholder";
    case Op::GetAttr: return "get_attr";
    case Op::CallFunction: return "call_function";
    case Op::CallMethod: return "call_method";
    case Op::CallModule: return "call_module";
  }
  return "?";
}

Graph::Graph(py::Ref<> node_ref_class) : node_ref_class_(std::move(node_ref_class)) {}

Node& Graph::append(Op op, py::Ref<> target, py::Ref<> args, py::Ref<> kwargs, py::Ref<> fake,
                    UserLocation location, std::string name) {
  auto node = std::make_unique<Node>();
  node->op = op;
  node->index = static_cast<int>(nodes_.size());
  node->serial = ++appended_;
  node->target = std::move(target);
  node->args = args ? std::move(args) : check(PyTuple_New(0));
  node->kwargs = kwargs ? std::move(kwargs) : check(PyDict_New());
  node->fake = std::move(fake);
  node->location = std::move(location);
  node->name = std::move(name);
  py::Ref<> index = check(PyLong_FromLong(node->index));
  node->ref = check(PyObject_CallOneArg(node_ref_class_.get(), index.get()));
  nodes_.push_back(std::move(node));
  return *nodes_.back();
}

void Graph::truncate(size_t length) {
  if (length < nodes_.size()) nodes_.resize(length);
  while (!attrs_.empty() && attrs_.back().graph_length > length) attrs_.pop_back();
}

namespace {

// torch.nn's own code reaches submodules, parameters and buffers through the module's
// registries (named_modules() walks `_modules`): `m.__dict__['_modules']['fc']` is the
// object `m.fc` names, and is named so, whichever read came first.
std::string registry_items_as_attributes(const std::string& text) {
  static const std::string registries[] = {".__dict__['_modules']['", ".__dict__['_parameters']['",
                                           ".__dict__['_buffers']['"};
  std::string out = text;
  for (const std::string& registry : registries) {
    for (size_t found; (found = out.find(registry)) != std::string::npos;) {
      const size_t key = found + registry.size();
      const size_t end = out.find("']", key);
      if (end == std::string::npos) break;
      out = out.substr(0, found) + "." + out.substr(key, end - key) + out.substr(end + 2);
    }
  }
  return out;
}

}  // namespace

std::string identifier_from(const std::string& text) {
  std::string out;
  std::string body = registry_items_as_attributes(text);
  // Drop the root of a source name: L['x'] -> x, G['w'] -> w, closure['k'] -> k.
  for (const char* root : {"L[", "G[", "closure[", "builtins["}) {
    std::string prefix(root);
    if (body.rfind(prefix, 0) == 0) {
      body = body.substr(prefix.size());
      break;
    }
  }
  for (char c : body) {
    bool word = std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    if (word) {
      out.push_back(c);
    } else if (!out.empty() && out.back() != '_') {
      out.push_back('_');
    }
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  if (out.empty()) out = "tensor";
  if (std::isdigit(static_cast<unsigned char>(out[0]))) out = "_" + out;
  return out;
}

namespace {

// The source as torch.compile names the same input: `owner.__dict__['name']` read as the
// attribute it is, `owner.name`, and the frame's closure variables as its locals (a closure's
// module's tensor attribute is `l_mod_buf`).
std::string attribute_form(const std::string& source_name) {
  static const std::string instance_dict = ".__dict__['";
  static const std::string closure = "closure[";
  std::string out;
  size_t at = 0;
  if (source_name.compare(0, closure.size(), closure) == 0) {
    out = "L[";
    at = closure.size();
  }
  for (size_t found; (found = source_name.find(instance_dict, at)) != std::string::npos;) {
    const size_t key = found + instance_dict.size();
    const size_t end = source_name.find("']", key);
    if (end == std::string::npos) break;
    out.append(source_name, at, found - at).append(".").append(source_name, key, end - key);
    at = end + 2;
  }
  return out.append(source_name, at, std::string::npos);
}

}  // namespace

std::string input_name_from(const std::string& source_name) {
  std::string out;
  for (char c : attribute_form(source_name)) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      out.push_back(c);
    } else if (out.empty() || out.back() != '_') {
      out.push_back('_');
    }
  }
  if (out.empty()) out = "input";
  if (std::isdigit(static_cast<unsigned char>(out[0]))) out = "_" + out;
  return out;
}

std::string snake_case(const std::string& name) {
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(name[i]);
    if (std::isupper(c) && i > 0 && std::islower(static_cast<unsigned char>(name[i - 1]))) out.push_back('_');
    out.push_back(static_cast<char>(std::tolower(c)));
  }
  return out;
}

std::string Graph::unique_name(const std::string& hint) {
  // A placeholder's node is named snake_case(target): `L_x_` and `l_x_` must not both be taken.
  auto taken = [&](const std::string& candidate) {
    const std::string snake = snake_case(candidate);
    for (const auto& node : nodes_)
      if (node->name == candidate || node->name == snake) return true;
    for (const auto& attr : attrs_)
      if (attr.name == candidate || attr.name == snake) return true;
    return false;
  };
  if (!taken(hint)) return hint;
  for (int i = 1;; ++i) {
    std::string candidate = hint + "_" + std::to_string(i);
    if (!taken(candidate)) return candidate;
  }
}

std::string Graph::add_root_attr(const std::string& hint, PyObject* object) {
  for (const auto& attr : attrs_)
    if (attr.object.get() == object) return attr.name;
  std::string name = unique_name(hint);
  attrs_.push_back(RootAttr{name, py::Ref<>::newref(object), nodes_.size()});
  return name;
}

namespace {

// Collects the node markers inside a node's args/kwargs structure.
void collect_refs(PyObject* value, PyObject* ref_class, std::vector<PyObject*>& found) {
  if (Py_TYPE(value) == reinterpret_cast<PyTypeObject*>(ref_class)) {
    found.push_back(value);
  } else if (PyTuple_Check(value) || PyList_Check(value)) {
    Py_ssize_t n = PySequence_Fast_GET_SIZE(value);
    PyObject** items = PySequence_Fast_ITEMS(value);
    for (Py_ssize_t i = 0; i < n; ++i) collect_refs(items[i], ref_class, found);
  } else if (PyDict_Check(value)) {
    PyObject *key, *item;
    Py_ssize_t position = 0;
    while (PyDict_Next(value, &position, &key, &item)) collect_refs(item, ref_class, found);
  } else if (PySlice_Check(value)) {
    auto* slice = reinterpret_cast<PySliceObject*>(value);
    collect_refs(slice->start, ref_class, found);
    collect_refs(slice->stop, ref_class, found);
    collect_refs(slice->step, ref_class, found);
  }
}

}  // namespace

std::vector<int> Graph::drop_unused_placeholders(const std::vector<int>& outputs) {
  std::vector<PyObject*> used;
  for (const auto& node : nodes_) {
    if (node->dead) continue;
    collect_refs(node->args.get(), node_ref_class_.get(), used);
    collect_refs(node->kwargs.get(), node_ref_class_.get(), used);
  }
  for (int output : outputs) used.push_back(nodes_.at(output)->ref.get());
  std::vector<bool> kept(nodes_.size(), false);
  for (auto& node : nodes_) {
    if (node->op != Op::Placeholder || std::find(used.begin(), used.end(), node->ref.get()) == used.end()) continue;
    kept[node->index] = true;
    for (int bound : node->binds) kept.at(bound) = true;
  }
  std::vector<int> dropped;
  for (auto& node : nodes_) {
    if (node->op != Op::Placeholder || kept[node->index]) continue;
    node->dead = true;
    dropped.push_back(node->index);
  }
  return dropped;
}

void Graph::drop_unused_pure_nodes(const std::vector<int>& outputs) {
  std::vector<PyObject*> used;
  for (int output : outputs) used.push_back(nodes_.at(output)->ref.get());
  // References point backwards, so one pass from the end sees every use of a node first.
  for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it) {
    Node& node = **it;
    if (node.dead) continue;
    if (node.pure && std::find(used.begin(), used.end(), node.ref.get()) == used.end()) {
      node.dead = true;
      continue;
    }
    collect_refs(node.args.get(), node_ref_class_.get(), used);
    collect_refs(node.kwargs.get(), node_ref_class_.get(), used);
  }
}

namespace {

py::Ref<> node_tuple(const Node& node) {
  py::Ref<> stack_trace;
  if (node.location.lineno > 0) {
    std::string line = node.location.code_line;
    size_t start = line.find_first_not_of(" \t");
    line = start == std::string::npos ? "" : line.substr(start);
    while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
    std::string text = "  File \"" + node.location.filename + "\", line " +
                       std::to_string(node.location.lineno) + ", in " + node.location.function +
                       "\n    " + line + "\n";
    stack_trace = check(PyUnicode_FromString(text.c_str()));
  } else {
    stack_trace = py::Ref<>::newref(Py_None);
  }
  py::Ref<> name = node.name.empty() ? py::Ref<>::newref(Py_None)
                                     : check(PyUnicode_FromString(node.name.c_str()));
  py::Ref<> local_name = node.local_name.empty() ? py::Ref<>::newref(Py_None)
                                                 : check(PyUnicode_FromString(node.local_name.c_str()));
  py::Ref<> op = check(PyUnicode_FromString(op_name(node.op)));
  PyObject* fake = node.fake ? node.fake.get() : Py_None;
  PyObject* tensor_dict = node.tensor_dict ? node.tensor_dict.get() : Py_None;
  return check(PyTuple_Pack(9, op.get(), node.target.get(), node.args.get(), node.kwargs.get(),
                            name.get(), fake, stack_trace.get(), local_name.get(), tensor_dict));
}

}  // namespace

py::Ref<> Graph::materialize(PyObject* build, const std::vector<int>& outputs) const {
  // Placeholders first (FX turns them into forward's parameters), the rest in order; node
  // references go by index, so the reordering does not disturb them.
  py::Ref<> order = check(PyList_New(0));
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& node : nodes_) {
      if (node->dead || (node->op == Op::Placeholder) != (pass == 0)) continue;
      py::Ref<> item = node_tuple(*node);
      check_status(PyList_Append(order.get(), item.get()));
    }
  }
  // build_graph_module maps NodeRef(i) to the i-th created node, so pass the index mapping.
  py::Ref<> positions = check(PyList_New(static_cast<Py_ssize_t>(nodes_.size())));
  Py_ssize_t position = 0;
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& node : nodes_) {
      if ((node->op == Op::Placeholder) != (pass == 0)) continue;
      // Dead nodes are referenced by nothing: their position is never read.
      Py_ssize_t at = node->dead ? -1 : position++;
      PyList_SET_ITEM(positions.get(), node->index, check(PyLong_FromSsize_t(at)).release());
    }
  }
  py::Ref<> attrs = check(PyDict_New());
  for (const auto& attr : attrs_)
    check_status(PyDict_SetItemString(attrs.get(), attr.name.c_str(), attr.object.get()));
  py::Ref<> out = check(PyTuple_New(static_cast<Py_ssize_t>(outputs.size())));
  for (size_t i = 0; i < outputs.size(); ++i)
    PyTuple_SET_ITEM(out.get(), i, py::Ref<>::newref(nodes_.at(outputs[i])->ref.get()).release());
  return check(PyObject_CallFunctionObjArgs(build, order.get(), attrs.get(), out.get(),
                                            positions.get(), nullptr));
}

}  // namespace bytegraph::graph
