// Undo records for in-place changes to symbolic values (list appends, dict stores, cell
// writes, iterator steps), so that rolling back to an instruction boundary also restores
// containers mutated during the abandoned instruction, including inside inlined calls.
#pragma once

#include <vector>

#include "trace/value.h"

namespace bytegraph::trace {

class Journal {
 public:
  // Records `value`'s current state; call before mutating it. Values made during the
  // current instruction may be saved too (harmless).
  void save(const ValuePtr& value);
  size_t size() const { return entries_.size(); }
  // Restores the saved states, newest first, down to `length` entries.
  void undo_to(size_t length);
  void clear() { entries_.clear(); }

 private:
  struct Saved {
    ValuePtr value;
    Args items;                   // SequenceValue
    std::vector<py::Ref<>> keys;  // DictValue
    Args values;                  // DictValue
    ValuePtr contents;            // CellValue
    size_t position = 0;          // IteratorValue
    std::vector<std::pair<std::string, ValuePtr>> attrs;  // ObjectValue, ModuleValue
  };
  std::vector<Saved> entries_;
};

}  // namespace bytegraph::trace
