// functools.partial objects and operator.itemgetter / attrgetter: callables that stand for a
// known call. Calling one inlines (or applies) that call.
#pragma once

#include "trace/tracer.h"

namespace bytegraph::trace {

// partial(func, *args, **keywords): calling it calls func with the bound arguments first.
// A partial read from outside the frame is guarded through what the call relies on: its type,
// and func/args/keywords wrapped from their attributes (a new partial of the same function
// and arguments on the next call reuses the trace).
class PartialValue : public Value {
 public:
  PartialValue(ValuePtr function, Args args, KwArgs keywords, guards::SourcePtr source = nullptr)
      : Value(std::move(source)), function_(std::move(function)), args_(std::move(args)), keywords_(std::move(keywords)) {}
  std::string repr() const override;
  PyObject* python_type() const override;
  bool truthy(Tracer&) const override { return true; }
  ValuePtr call(Tracer& tracer, const Args& args, const KwArgs& kwargs) override;
  ValuePtr get_attr(Tracer& tracer, const std::string& name) override;

  const ValuePtr& function() const { return function_; }
  const Args& args() const { return args_; }
  const KwArgs& keywords() const { return keywords_; }

 private:
  ValuePtr function_;
  Args args_;
  KwArgs keywords_;
};

// functools.partial, operator.itemgetter and operator.attrgetter (the classes), their
// instances read from outside the frame; null for any other object.
ValuePtr wrap_functional(Tracer& tracer, PyObject* real, const guards::SourcePtr& source);

// functools.reduce(function, iterable[, initial]) run in the trace, each step a call of
// `function`; null when `callable` is not functools.reduce.
ValuePtr call_reduce(Tracer& tracer, PyObject* callable, const Args& args, const KwArgs& kwargs);

}  // namespace bytegraph::trace
