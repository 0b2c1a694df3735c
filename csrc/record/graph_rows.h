// The graph as the trace viewer shows it: one row per node in torch.fx's tabular form
// ("call_method  sum_1  sum  (a,)  {}": opcode, name, target, args, kwargs), kept up to date
// step by step so that each step only renders the nodes added since the previous one.
#pragma once

#include <Python.h>

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "graph/graph.h"
#include "python/ref.h"

namespace bytegraph::record {

class GraphRows {
 public:
  // `node_ref_class` is the class of the markers that stand for nodes inside node args.
  explicit GraphRows(PyObject* node_ref_class);

  // Brings the rows in line with `graph`; returns how many leading rows were unchanged.
  size_t update(const graph::Graph& graph);
  const std::vector<std::string>& rows() const { return rows_; }

 private:
  // Node names as torch.fx picks them: the target's name in snake case, with a numeric
  // suffix when it is taken or shadows a builtin or keyword (`sum` -> `sum_1`).
  std::string name_for(const graph::Node& node);
  std::string unused_name(const std::string& base);
  std::string render(const graph::Node& node, const std::string& name);
  std::string render_arg(PyObject* arg);
  void forget_from(size_t length);

  PyObject* node_ref_class_;  // borrowed: the bridge keeps it alive
  // The rows' nodes, by Node::serial: a node's address may be reused after a rollback.
  std::vector<uint64_t> seen_;
  std::vector<std::string> local_names_;  // each row's node's local name when rendered
  std::vector<std::string> names_;
  std::vector<std::string> rows_;
  std::unordered_set<std::string> used_;
  std::unordered_set<std::string> reserved_;  // builtins and keywords
};

}  // namespace bytegraph::record
