// Lazy iterators built by builtins in traced code: map(), filter(), and zip()/enumerate()
// over generators. Each item is computed when the consumer asks for it, as the real iterator
// computes it, so calls and generator steps interleave with the consumer's work in the real
// order.
#pragma once

#include "trace/tracer.h"

namespace bytegraph::trace {

class LazyIteratorValue : public Value {
 public:
  bool is_iterator() const override { return true; }
  bool truthy(Tracer&) const override { return true; }
  std::optional<Args> unpack(Tracer& tracer) override;  // the remaining items (consuming them)
};

// `iterable` as an iterator: itself if it is one, else an iterator over its items.
ValuePtr iterate(Tracer& tracer, const ValuePtr& iterable, const char* what);
// Whether any of `values` is an iterator whose items are computed on demand (a generator,
// map object, ...): zip/enumerate over those must be lazy too.
bool any_lazy(const Args& values);

ValuePtr make_map(Tracer& tracer, ValuePtr function, const Args& iterables);
ValuePtr make_filter(Tracer& tracer, ValuePtr function, const ValuePtr& iterable);
ValuePtr make_lazy_zip(Tracer& tracer, const Args& iterables);
ValuePtr make_lazy_enumerate(Tracer& tracer, const ValuePtr& iterable, long start);

}  // namespace bytegraph::trace
