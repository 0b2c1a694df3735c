// collections.deque made in the trace: its items in a symbolic list, its methods (both ends,
// maxlen trimming, rotate) applied to them, rebuilt as a deque after the graph. A deque from
// outside the frame stays opaque (what reads it runs eagerly).
#pragma once

#include "trace/tracer.h"

namespace bytegraph::trace {

class DequeValue : public Value {
 public:
  DequeValue(Args items, ValuePtr maxlen);
  std::string repr() const override;
  PyObject* python_type() const override;
  bool truthy(Tracer&) const override { return !storage->items.empty(); }
  std::optional<Args> unpack(Tracer&) override { return storage->items; }
  ValuePtr get_item(Tracer& tracer, const ValuePtr& key) override;
  ValuePtr get_attr(Tracer& tracer, const std::string& name) override;
  // d[i] = value.
  void set_item(Tracer& tracer, const ValuePtr& key, const ValuePtr& value);
  // collections.deque(items, maxlen), made anew.
  std::optional<codegen::OutputPlan> remake(PlanWriter& writer) override;

  // The items, journaled as a list is (a rollback restores them).
  std::shared_ptr<SequenceValue> storage;
  ValuePtr maxlen;  // None or an int constant
};

// collections.deque(iterable=(), maxlen=None) called in the trace; null for other callables.
ValuePtr call_deque(Tracer& tracer, PyObject* function, const Args& args, const KwArgs& kwargs);
// collections.deque itself, for rebuilding one.
PyObject* deque_type();

}  // namespace bytegraph::trace
