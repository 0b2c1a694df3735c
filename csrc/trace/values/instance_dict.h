// `obj.__dict__` of an object made in the trace: a live mapping over its instance attributes.
#pragma once

#include "trace/tracer.h"

namespace bytegraph::trace {

// Reads and writes go to the object's attributes (ObjectValue::attrs) and bypass the class's
// descriptors and __setattr__, as writing the real __dict__ does; later attribute writes are
// seen through it. Objects from outside the trace read their real __dict__ through its source.
class InstanceDictValue : public Value {
 public:
  explicit InstanceDictValue(std::shared_ptr<ObjectValue> object) : object_(std::move(object)) {}
  std::string repr() const override { return "InstanceDictVariable(" + object_->repr() + ")"; }
  PyObject* python_type() const override { return reinterpret_cast<PyObject*>(&PyDict_Type); }
  ValuePtr get_attr(Tracer& tracer, const std::string& name) override;
  ValuePtr get_item(Tracer& tracer, const ValuePtr& key) override;
  bool truthy(Tracer& tracer) const override;
  std::optional<Args> unpack(Tracer& tracer) override;
  bool contains(const ValuePtr& key) const;
  // Generated code reads `obj.__dict__` again at a break.
  std::pair<ValuePtr, std::string> bound_attribute() const override { return {object_, "__dict__"}; }
  // The method `name` applied to this mapping (get, pop, setdefault, keys, ...).
  ValuePtr call_method(Tracer& tracer, const std::string& name, const Args& args, const KwArgs& kwargs);

 private:
  std::string key_of(const ValuePtr& key) const;
  ValuePtr find(const std::string& name) const;  // null when absent
  void store(Tracer& tracer, const std::string& name, ValuePtr value);

  std::shared_ptr<ObjectValue> object_;
};

}  // namespace bytegraph::trace
