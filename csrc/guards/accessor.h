// Accessors: the edges of the guard tree. Each one fetches a single value from its parent's
// value (or, at the root, from the frame) and owns the manager that checks that value.
//
// Fetching reads the value once per check and prefers borrowed references: a frame slot, a
// dict item, a list item, a cell's contents and an object's type are read in place. Only a
// getattr (or a getitem on something other than a builtin container) produces a new
// reference, which the Fetched value releases.
#pragma once

#include <Python.h>

#include <memory>
#include <string>

#include "guards/guard_set.h"
#include "guards/source.h"
#include "python/gc.h"
#include "python/ref.h"

namespace bytegraph::guards {

class GuardManager;

// A fetched value: absent (the attribute/key/slot is missing), borrowed, or owned.
class Fetched {
 public:
  static Fetched missing() { return Fetched(); }
  static Fetched borrowed(PyObject* value) {  // value: borrowed
    Fetched fetched;
    fetched.value_ = value;
    return fetched;
  }
  static Fetched owned(py::Ref<> value) {
    Fetched fetched;
    fetched.value_ = value.get();
    fetched.owner_ = std::move(value);
    return fetched;
  }
  PyObject* get() const { return value_; }  // borrowed from this Fetched
  explicit operator bool() const { return value_ != nullptr; }
  // Takes a reference of our own to a borrowed value, for when checks below it may run
  // Python code that could drop the container's reference.
  void own() {
    if (value_ != nullptr && !owner_) owner_ = py::Ref<>::newref(value_);
  }

 private:
  PyObject* value_ = nullptr;  // borrowed, or owned through owner_
  py::Ref<> owner_;
};

class Accessor {
 public:
  explicit Accessor(std::unique_ptr<GuardManager> child);
  virtual ~Accessor();

  // The value this accessor reads. `parent` is the owning manager's value (null at the
  // root). A missing value returns an empty Fetched with no Python error pending; any other
  // failure throws PythonError.
  virtual Fetched fetch(PyObject* parent, const FrameValues& frame) const = 0;
  // Why a value is absent, e.g. "attribute missing".
  virtual const char* missing_reason() const = 0;
  // True if fetch() borrows from a container (dict, list, cell) rather than from the frame
  // or the parent object itself.
  virtual bool borrows_from_container() const = 0;
  // The Python objects the accessor itself owns (a key, a held object).
  virtual void traverse_own(py::Visitor&) const {}

  bool check(PyObject* parent, const FrameValues& frame) const;
  // The first failure below this accessor, in words; empty if none.
  std::string explain(PyObject* parent, const FrameValues& frame) const;

  GuardManager& child() const { return *child_; }
  // Visits the Python objects this accessor and its subtree own (python/gc.h).
  void traverse(py::Visitor& visit) const;

 private:
  Fetched fetch_for_child(PyObject* parent, const FrameValues& frame) const;
  std::unique_ptr<GuardManager> child_;
};

// The accessor that reads `source` from its base's value (or from the frame for a root
// source), owning `child`.
std::unique_ptr<Accessor> make_accessor(const Source& source, std::unique_ptr<GuardManager> child);

// The value at `source` in `frame`, read as the guards read it, or null where it is missing.
py::Ref<> read_source(const SourcePtr& source, const FrameValues& frame);

}  // namespace bytegraph::guards
