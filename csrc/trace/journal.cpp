#include "trace/journal.h"

namespace bytegraph::trace {

void Journal::save(const ValuePtr& value) {
  for (const auto& entry : entries_)
    if (entry.value == value) return;  // the oldest state is the one to restore
  Saved saved;
  saved.value = value;
  if (auto* seq = dynamic_cast<SequenceValue*>(value.get())) {
    saved.items = seq->items;
  } else if (auto* dict = dynamic_cast<DictValue*>(value.get())) {
    for (const auto& key : dict->keys) saved.keys.push_back(key.copy());
    saved.values = dict->values;
  } else if (auto* cell = dynamic_cast<CellValue*>(value.get())) {
    saved.contents = cell->contents;
  } else if (auto* iterator = dynamic_cast<IteratorValue*>(value.get())) {
    saved.position = iterator->position();
  } else if (auto* object = dynamic_cast<ObjectValue*>(value.get())) {
    saved.attrs = object->attrs;
  } else if (auto* module = dynamic_cast<ModuleValue*>(value.get())) {
    saved.attrs = module->attrs;
  } else {
    throw InternalError("journal: " + value->repr() + " is not a mutable value");
  }
  entries_.push_back(std::move(saved));
}

void Journal::undo_to(size_t length) {
  while (entries_.size() > length) {
    Saved& saved = entries_.back();
    Value* value = saved.value.get();
    if (auto* seq = dynamic_cast<SequenceValue*>(value)) {
      seq->items = std::move(saved.items);
    } else if (auto* dict = dynamic_cast<DictValue*>(value)) {
      dict->keys = std::move(saved.keys);
      dict->values = std::move(saved.values);
    } else if (auto* cell = dynamic_cast<CellValue*>(value)) {
      cell->contents = std::move(saved.contents);
    } else if (auto* iterator = dynamic_cast<IteratorValue*>(value)) {
      iterator->set_position(saved.position);
    } else if (auto* object = dynamic_cast<ObjectValue*>(value)) {
      object->attrs = std::move(saved.attrs);
    } else if (auto* module = dynamic_cast<ModuleValue*>(value)) {
      module->attrs = std::move(saved.attrs);
    }
    entries_.pop_back();
  }
}

}  // namespace bytegraph::trace
