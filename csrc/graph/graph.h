// The C++ graph IR: an append-only list of recorded operations with their fake values,
// truncatable for rollback, materialised into a torch.fx.GraphModule by one bridge call.
//
// Node arguments are Python structures (tuples, lists, dicts, constants) in which references
// to earlier nodes are the node's marker object (`Node::ref`, a bridge NodeRef). Keeping them
// as Python objects means materialisation is a single pass in Python with no conversion.
#pragma once

#include <Python.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "python/ref.h"

namespace bytegraph::graph {

enum class Op { Placeholder, GetAttr, CallFunction, CallMethod, CallModule };

const char* op_name(Op op);

// Where in the user's code a node was recorded.
struct UserLocation {
  std::string filename;
  std::string function;
  std::string code_line;
  int lineno = -1;
};

struct Node {
  Op op;
  int index = 0;
  py::Ref<> target;  // a callable (call_function), a method or attribute name (str)
  py::Ref<> args;    // tuple
  py::Ref<> kwargs;  // dict
  py::Ref<> fake;    // the fake value (a FakeTensor or a structure of them), or null
  py::Ref<> ref;     // this node's marker object, used inside later nodes' args
  UserLocation location;
  std::string name;  // a name hint (placeholders and get_attr); empty lets FX choose
  // The local an op's result was first stored into: FX names the node after it once named by
  // default (so `y = x + 1` prints `y = ...` while `add` stays taken), as torch.compile does.
  std::string local_name;
  // Unique in its graph, never reused after a truncation (addresses are: a node appended
  // after a rollback may sit where the dropped one did).
  uint64_t serial = 0;
  bool dead = false;  // dropped before materialisation (an input nothing used)
  bool pure = false;  // no effect besides its result (size arithmetic): dropped when unused
  // A placeholder's: the placeholders of the symbols in its fake's sizes, strides and offset.
  // They stay while it does, used or not, as in torch.compile's graphs: a backend that
  // rebuilds the input from another (AOTAutograd's synthetic base of aliased inputs) needs
  // every symbol of its layout bound.
  std::vector<int> binds;
  // A placeholder's node.meta["tensor_dict"], as torch.compile's graphs carry it: what the
  // tensor's __dict__ holds of the static-input type and tag, and "unguarded" as the static
  // input type of a module's tensor (inductor's CUDA graphs treat those as static inputs).
  py::Ref<> tensor_dict;
};

class Graph {
 public:
  // `node_ref_class` builds the marker objects (bridge NodeRef).
  explicit Graph(py::Ref<> node_ref_class);

  Node& append(Op op, py::Ref<> target, py::Ref<> args, py::Ref<> kwargs, py::Ref<> fake,
               UserLocation location, std::string name = {});
  size_t size() const { return nodes_.size(); }
  Node& node(size_t index) { return *nodes_[index]; }
  const Node& node(size_t index) const { return *nodes_[index]; }
  // Drops every node from `length` on (and root attributes registered after them).
  void truncate(size_t length);

  // Registers `object` (a module, parameter or tensor) as an attribute of the GraphModule
  // root; returns its name. The same object registered twice keeps its first name.
  std::string add_root_attr(const std::string& hint, PyObject* object);
  size_t root_attr_count() const { return attrs_.size(); }

  // Builds the torch.fx.GraphModule whose output is the tuple of `outputs` (node indices).
  // `build` is the bridge's build_graph_module.
  py::Ref<> materialize(PyObject* build, const std::vector<int>& outputs) const;

  // Marks placeholders that no node and no output (node indices) uses as dead, and
  // returns their indices: inputs read but never computed with (list items, unused args).
  std::vector<int> drop_unused_placeholders(const std::vector<int>& outputs);
  // Marks pure nodes whose results nothing live uses (nor an output) as dead.
  void drop_unused_pure_nodes(const std::vector<int>& outputs);

  // Placeholder and get_attr names must be unique, valid identifiers.
  std::string unique_name(const std::string& hint);

 private:
  struct RootAttr {
    std::string name;
    py::Ref<> object;
    size_t graph_length;  // nodes when it was added, for truncation
  };
  py::Ref<> node_ref_class_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<RootAttr> attrs_;
  uint64_t appended_ = 0;  // nodes ever appended: the next serial
};

// `L['self'].fc.weight` -> `self_fc_weight`: a readable Python identifier for a source name.
std::string identifier_from(const std::string& text);

// `L['x']` -> `L_x_`, `L['self'].fc.weight` -> `L_self_fc_weight`: a graph input's name as
// torch.compile spells it (every run of other characters one `_`), so graphs read, print
// and compare as torch.compile's do; FX names the node itself in snake case (`l_x_`).
std::string input_name_from(const std::string& source_name);
// What FX names a placeholder node after its target: `L_x_` -> `l_x_`, `L_fooBar_` -> `l_foo_bar_`.
std::string snake_case(const std::string& name);

}  // namespace bytegraph::graph
