// The event stream's pieces without the tracer: attaching recorders, graph rows with fx's
// node names, and step notes.
#include <gtest/gtest.h>

#include "graph/graph.h"
#include "python/errors.h"
#include "record/graph_rows.h"
#include "record/notes.h"
#include "record/recorder.h"

namespace bytegraph::record {
namespace {

class CountingRecorder : public Recorder {
 public:
  int begin_frame(const FrameEvent&) override { return frames++; }
  void step(int, const StepEvent&) override {}
  void end_frame(int) override {}
  void end_trace(PyObject*, const std::vector<std::string>&) override {}
  int frames = 0;
};

TEST(RecordAttach, NestsPerThreadAndRestores) {
  EXPECT_EQ(attached(), nullptr);
  CountingRecorder outer, inner;
  {
    Attach a(&outer);
    EXPECT_EQ(attached(), &outer);
    {
      Attach b(&inner);
      EXPECT_EQ(attached(), &inner);
    }
    EXPECT_EQ(attached(), &outer);
  }
  EXPECT_EQ(attached(), nullptr);
}

// A marker class like the bridge's NodeRef: built from an index, keeps it as `.index`.
py::Ref<> node_ref_class() {
  py::Ref<> globals = check(PyDict_New());
  check_status(PyDict_SetItemString(globals.get(), "__builtins__", PyEval_GetBuiltins()));
  check(PyRun_String("class NodeRef:\n    def __init__(self, index):\n        self.index = index\n",
                     Py_file_input, globals.get(), globals.get()));
  return py::Ref<>::newref(PyDict_GetItemString(globals.get(), "NodeRef"));
}

py::Ref<> text(const char* value) { return check(PyUnicode_FromString(value)); }

TEST(GraphRows, FxNamesTabularRowsAndDeltas) {
  py::Ref<> ref_class = node_ref_class();
  graph::Graph graph(ref_class.copy());
  GraphRows rows(ref_class.get());
  graph::Node& x = graph.append(graph::Op::Placeholder, text("x"), nullptr, nullptr, nullptr, {}, "x");
  EXPECT_EQ(rows.update(graph), 0u);
  py::Ref<> args = check(PyTuple_Pack(1, x.ref.get()));
  graph::Node& sum = graph.append(graph::Op::CallMethod, text("sum"), std::move(args), check(PyDict_New()), nullptr, {});
  EXPECT_EQ(rows.update(graph), 1u);  // x's row is kept
  py::Ref<> two = check(PyLong_FromLong(2));
  py::Ref<> mul_args = check(PyTuple_Pack(2, sum.ref.get(), two.get()));
  graph.append(graph::Op::CallMethod, text("mul"), std::move(mul_args), check(PyDict_New()), nullptr, {});
  EXPECT_EQ(rows.update(graph), 2u);
  ASSERT_EQ(rows.rows().size(), 3u);
  EXPECT_EQ(rows.rows()[0], "placeholder  x  x  ()  {}");
  EXPECT_EQ(rows.rows()[1], "call_method  sum_1  sum  (x,)  {}");  // `sum` is a builtin's name
  EXPECT_EQ(rows.rows()[2], "call_method  mul  mul  (sum_1, 2)  {}");
  EXPECT_EQ(rows.update(graph), 3u);  // nothing changed

  graph.truncate(1);  // a rollback: the name sum_1 is free again
  py::Ref<> again = check(PyTuple_Pack(1, graph.node(0).ref.get()));
  graph.append(graph::Op::CallMethod, text("sum"), std::move(again), check(PyDict_New()), nullptr, {});
  EXPECT_EQ(rows.update(graph), 1u);
  ASSERT_EQ(rows.rows().size(), 2u);
  EXPECT_EQ(rows.rows()[1], "call_method  sum_1  sum  (x,)  {}");
}

TEST(StepNotes, SayWhatTheInstructionDid) {
  NoteFacts push{"LOAD_CONST", "0", "ConstantVariable(0)", "", {}, {}, ""};
  EXPECT_EQ(step_note(push), "push constant 0");
  NoteFacts store{"STORE_FAST", "a0", "", "", {}, {}, ""};
  EXPECT_EQ(step_note(store), "store to local a0");
  NoteFacts call{"CALL", "", "TensorVariable(sum: f32[])", "", {"call_method  sum_1  sum  (a,)  {}"}, {}, ""};
  EXPECT_EQ(step_note(call), "tensor method call: sum added to the graph");
  NoteFacts inlined{"CALL", "", "", "", {"call_function  mul  mul  (a, 2)  {}"}, {"G['helper'] ID_MATCH"}, "helper"};
  EXPECT_EQ(step_note(inlined),
            "inline call to helper; function call: mul added to the graph; guard installed: G['helper'] ID_MATCH");
  EXPECT_EQ(break_note("data_dependent_branch", "x"), "branch on a tensor: graph break, compile the subgraph");
  EXPECT_EQ(break_note("unsupported_opcode", "opcode X"), "graph break (unsupported_opcode): opcode X; compile the subgraph");
}

}  // namespace
}  // namespace bytegraph::record
