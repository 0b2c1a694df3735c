// Owned and borrowed references to Python objects.
//
// Ownership is visible in the type: `Ref<T>` owns one reference and releases it when it
// dies; `BorrowedRef<T>` never touches the count. A `Ref` is built only through named
// constructors (`steal` for a new reference handed to us, `newref` to take an extra
// reference to a borrowed one), so every call site says which one it is.
// All of these must be used with the GIL held.
#pragma once

#include <Python.h>

#include <cstddef>
#include <utility>

namespace bytegraph::py {

template <class T = PyObject>
class BorrowedRef {
 public:
  constexpr BorrowedRef() = default;
  constexpr BorrowedRef(std::nullptr_t) {}
  // Implicit on purpose: any raw pointer in the C API is a borrow unless documented otherwise.
  constexpr BorrowedRef(T* ptr) : ptr_(ptr) {}

  T* get() const { return ptr_; }
  T* operator->() const { return ptr_; }
  operator T*() const { return ptr_; }
  explicit operator bool() const { return ptr_ != nullptr; }
  PyObject* object() const { return reinterpret_cast<PyObject*>(ptr_); }

 private:
  T* ptr_ = nullptr;
};

template <class T = PyObject>
class Ref {
 public:
  Ref() = default;
  Ref(std::nullptr_t) {}
  Ref(const Ref&) = delete;
  Ref& operator=(const Ref&) = delete;
  Ref(Ref&& other) noexcept : ptr_(other.release()) {}
  Ref& operator=(Ref&& other) noexcept {
    if (this != &other) {
      T* old = ptr_;
      ptr_ = other.release();
      Py_XDECREF(reinterpret_cast<PyObject*>(old));
    }
    return *this;
  }
  ~Ref() { Py_XDECREF(reinterpret_cast<PyObject*>(ptr_)); }

  // Takes ownership of a new reference (the result of a C API call that returns one).
  static Ref steal(T* ptr) { return Ref(ptr); }
  static Ref steal(PyObject* ptr)
    requires(!std::is_same_v<T, PyObject>)
  {
    return Ref(reinterpret_cast<T*>(ptr));
  }
  // Takes an additional reference to an object we only borrow.
  static Ref newref(BorrowedRef<T> ptr) {
    Py_XINCREF(reinterpret_cast<PyObject*>(ptr.get()));
    return Ref(ptr.get());
  }

  T* get() const { return ptr_; }
  T* operator->() const { return ptr_; }
  BorrowedRef<T> borrow() const { return BorrowedRef<T>(ptr_); }
  PyObject* object() const { return reinterpret_cast<PyObject*>(ptr_); }
  explicit operator bool() const { return ptr_ != nullptr; }

  // Hands the reference to the caller (for C APIs that steal, or to return a new reference).
  [[nodiscard]] T* release() { return std::exchange(ptr_, nullptr); }
  Ref copy() const { return newref(ptr_); }
  void reset() { Py_XDECREF(reinterpret_cast<PyObject*>(std::exchange(ptr_, nullptr))); }

 private:
  explicit Ref(T* ptr) : ptr_(ptr) {}
  T* ptr_ = nullptr;
};

}  // namespace bytegraph::py
