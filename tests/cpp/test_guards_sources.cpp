// Sources: their readable names and structure.
#include <gtest/gtest.h>

#include "guards/source.h"
#include "python/errors.h"

namespace bytegraph::guards {
namespace {

TEST(GuardSource, RootReprs) {
  EXPECT_EQ(local_source("x", 0)->repr(), "L['x']");
  EXPECT_EQ(global_source("w")->repr(), "G['w']");
  EXPECT_EQ(builtin_source("len")->repr(), "builtins['len']");
  EXPECT_EQ(closure_source("y", 2)->repr(), "closure['y']");
}

TEST(GuardSource, ChainsReadLikePython) {
  SourcePtr weight = attr_source(attr_source(local_source("self", 0), "fc"), "weight");
  EXPECT_EQ(weight->repr(), "L['self'].fc.weight");
  EXPECT_EQ(weight->base->repr(), "L['self'].fc");
  EXPECT_EQ(weight->kind, Source::Kind::Attr);

  SourcePtr first = item_source(local_source("xs", 1), py::Ref<>::steal(PyLong_FromLong(0)));
  EXPECT_EQ(first->repr(), "L['xs'][0]");
  SourcePtr keyed =
      item_source(global_source("cfg"), py::Ref<>::steal(PyUnicode_FromString("lr")));
  EXPECT_EQ(keyed->repr(), "G['cfg']['lr']");
  EXPECT_EQ(type_source(first)->repr(), "type(L['xs'][0])");
}

TEST(GuardSource, TensorLayoutReadsLikePython) {
  SourcePtr x = local_source("x", 0);
  SourcePtr stride = stride_source(x, 1);
  EXPECT_EQ(stride->repr(), "L['x'].stride()[1]");
  EXPECT_EQ(stride->kind, Source::Kind::Stride);
  EXPECT_EQ(stride->index, 1);
  EXPECT_EQ(storage_offset_source(x)->repr(), "L['x'].storage_offset()");
  EXPECT_THROW(stride_source(x, -1), InternalError);
}

TEST(GuardSource, RootsKeepTheirIndex) {
  SourcePtr x = local_source("x", 3);
  EXPECT_EQ(x->index, 3);
  EXPECT_EQ(x->base, nullptr);
  EXPECT_EQ(closure_source("c", 1)->index, 1);
}

TEST(GuardSource, DerivedSourcesNeedABase) {
  EXPECT_THROW(attr_source(nullptr, "a"), InternalError);
  EXPECT_THROW(local_source("x", -1), InternalError);
}

}  // namespace
}  // namespace bytegraph::guards
