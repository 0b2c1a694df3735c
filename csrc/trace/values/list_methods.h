// List methods beyond append/extend/insert/pop/index/count (containers.cpp), and the sort
// that list.sort() and sorted() share.
#pragma once

#include "trace/tracer.h"

namespace bytegraph::trace {

bool is_list_method(const std::string& name, bool is_list);
// copy, reverse, sort, clear, remove; null when `name` is not one of them.
ValuePtr call_list_method(Tracer& tracer, const std::shared_ptr<SequenceValue>& list, const std::string& name,
                          const Args& args, const KwArgs& kwargs);
// `items` in the order sorted(items, key=key, reverse=reverse) gives: the keys (the items, or
// key(item) called symbolically) must be constants; CPython's own sort orders them.
Args sort_items(Tracer& tracer, const Args& items, const ValuePtr& key, bool reverse);
// `list[key] = value` (an index or a slice, extended slices too) and, with a null value,
// `del list[key]`: CPython's own list assignment decides which items go where, and raises.
void assign_list_item(Tracer& tracer, const ValuePtr& list, const ValuePtr& key, const ValuePtr& value);

}  // namespace bytegraph::trace
