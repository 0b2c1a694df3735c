#include <gtest/gtest.h>

#include "python/errors.h"
#include "python/ref.h"

using bytegraph::PythonError;
using bytegraph::py::Ref;

TEST(Ref, StealReleasesAndNewrefAddsOne) {
  PyObject* raw = PyList_New(0);
  Py_ssize_t start = Py_REFCNT(raw);
  {
    Ref<> owner = Ref<>::steal(raw);
    Ref<> other = Ref<>::newref(owner.borrow());
    EXPECT_EQ(Py_REFCNT(raw), start + 1);
    Ref<> moved = std::move(other);
    EXPECT_FALSE(other);
    EXPECT_EQ(Py_REFCNT(raw), start + 1);
    Py_INCREF(raw);  // keep it alive past the scope to observe the count
  }
  EXPECT_EQ(Py_REFCNT(raw), start);
  Py_DECREF(raw);
}

TEST(PythonError, FetchCapturesAndRestoreReraises) {
  PyErr_SetString(PyExc_ValueError, "boom");
  PythonError error = PythonError::fetch();
  EXPECT_FALSE(PyErr_Occurred());
  EXPECT_STREQ(error.what(), "ValueError: boom");
  error.restore();
  EXPECT_TRUE(PyErr_ExceptionMatches(PyExc_ValueError));
  PyErr_Clear();
}
