// GoogleTest entry point: the core calls into CPython, so the units run inside an embedded
// interpreter that lives for the whole test binary.
#include <Python.h>
#include <gtest/gtest.h>

namespace {

class PythonEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { Py_InitializeEx(0); }
  void TearDown() override { Py_FinalizeEx(); }
};

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new PythonEnvironment);
  return RUN_ALL_TESTS();
}
