// The graph IR without torch: append, name, register root attributes, truncate.
#include <gtest/gtest.h>

#include "graph/graph.h"
#include "python/errors.h"

namespace bytegraph::graph {
namespace {


TEST(GraphIdentifier, NamesComeFromSources) {
  EXPECT_EQ(identifier_from("L['x']"), "x");
  EXPECT_EQ(identifier_from("L['self'].fc.weight"), "self_fc_weight");
  EXPECT_EQ(identifier_from("G['w']"), "w");
  EXPECT_EQ(identifier_from("L['self'].layers[0]"), "self_layers_0");
  EXPECT_EQ(identifier_from("closure['k']"), "k");
  EXPECT_EQ(identifier_from("L['0']"), "_0");
  // Submodules and parameters reached through a module's registries (named_modules()).
  EXPECT_EQ(identifier_from("L['self'].layers[0].__dict__['_modules']['linear1']"), "self_layers_0_linear1");
  EXPECT_EQ(identifier_from("L['self'].attn.__dict__['_modules']['out_proj'].__dict__['_parameters']['bias']"),
            "self_attn_out_proj_bias");
}

TEST(Graph, AppendTruncateAndRootAttributes) {
  py::Ref<> builtins = check(PyImport_ImportModule("builtins"));
  Graph graph(check(PyObject_GetAttrString(builtins.get(), "int")));
  py::Ref<> name = check(PyUnicode_FromString("x"));
  Node& x = graph.append(Op::Placeholder, name.copy(), nullptr, nullptr, nullptr, {}, "x");
  EXPECT_EQ(x.index, 0);
  EXPECT_EQ(PyLong_AsLong(x.ref.get()), 0);  // the marker was built from the index
  EXPECT_EQ(graph.unique_name("x"), "x_1");

  py::Ref<> object = check(PyList_New(0));
  EXPECT_EQ(graph.add_root_attr("self_fc", object.get()), "self_fc");
  EXPECT_EQ(graph.add_root_attr("other", object.get()), "self_fc");  // same object, same name
  py::Ref<> args = check(PyTuple_Pack(1, x.ref.get()));
  graph.append(Op::CallModule, check(PyUnicode_FromString("self_fc")), std::move(args), nullptr, nullptr, {});
  py::Ref<> later = check(PyList_New(0));
  EXPECT_EQ(graph.add_root_attr("self_fc", later.get()), "self_fc_1");
  EXPECT_EQ(graph.size(), 2u);
  EXPECT_EQ(graph.root_attr_count(), 2u);

  graph.truncate(1);  // rollback: the call and the attribute registered after it go
  EXPECT_EQ(graph.size(), 1u);
  EXPECT_EQ(graph.root_attr_count(), 1u);
  EXPECT_EQ(graph.add_root_attr("again", later.get()), "again");
}

}  // namespace
}  // namespace bytegraph::graph
