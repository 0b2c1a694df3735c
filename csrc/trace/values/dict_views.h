// dict.keys(), dict.values(), dict.items() of a symbolic dict.
#pragma once

#include "trace/tracer.h"

namespace bytegraph::trace {

// A live view: it reads the dict each time it is used, so it sees later changes to it as
// the real view does. Keys views take part in the set algebra (d.keys() & {...}).
class DictViewValue : public Value {
 public:
  enum class Kind { Keys, Values, Items };
  DictViewValue(std::shared_ptr<DictValue> dict, Kind kind, guards::SourcePtr source = nullptr)
      : Value(std::move(source)), dict_(std::move(dict)), kind_(kind) {}
  std::string repr() const override;
  PyObject* python_type() const override;
  Kind kind() const { return kind_; }
  bool truthy(Tracer&) const override { return !dict_->keys.empty(); }
  std::optional<Args> unpack(Tracer& tracer) override;
  ValuePtr get_attr(Tracer& tracer, const std::string& name) override;
  size_t size() const { return dict_->keys.size(); }
  const std::shared_ptr<DictValue>& dict() const { return dict_; }
  bool contains(Tracer& tracer, const ValuePtr& item);
  // Keys views: a real set of the keys now.
  py::Ref<> key_set() const;

 private:
  std::shared_ptr<DictValue> dict_;
  Kind kind_;
};

// Methods of dicts beyond get/update (containers.cpp): views, setdefault, pop, popitem,
// copy, clear, and update with keywords or pairs. Null when `name` is not one of them.
ValuePtr call_dict_method(Tracer& tracer, const std::shared_ptr<DictValue>& dict, const std::string& name,
                          const Args& args, const KwArgs& kwargs);
bool is_dict_method(const std::string& name);

}  // namespace bytegraph::trace
