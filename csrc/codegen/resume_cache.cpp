#include "codegen/resume_cache.h"

#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>

#include "python/errors.h"

namespace bytegraph::codegen {

namespace {

// (original code, original offset, stack slots with their context classes, live locals).
using Key = std::tuple<PyObject*, int, std::vector<std::pair<int, PyObject*>>, std::vector<std::string>>;

struct Cache {
  std::map<Key, py::Ref<>> by_key;
  std::unordered_map<PyObject*, ResumeOrigin> origins;  // resume code -> origin
  std::vector<py::Ref<>> keys_alive;                    // the originals and context classes keys point at
  int counter = 0;                                      // numbers resume names
};

// Leaked on purpose: code objects must not be released during interpreter finalisation.
Cache& cache() {
  static Cache* instance = new Cache();
  return *instance;
}

std::string resume_name(int offset, int number) {
  return "__resume_at_" + std::to_string(offset) + "_" + std::to_string(number);
}

}  // namespace

const ResumeOrigin* resume_origin(PyObject* code) {
  auto& origins = cache().origins;
  auto found = origins.find(code);
  return found == origins.end() ? nullptr : &found->second;
}

bool is_resume_code(PyObject* code) { return resume_origin(code) != nullptr; }

int original_offset(PyObject* code, int offset) {
  const ResumeOrigin* origin = resume_origin(code);
  if (origin == nullptr) return offset;
  for (const auto& [mine, theirs] : origin->offsets)
    if (mine == offset) return theirs;
  throw InternalError("resume code offset " + std::to_string(offset) + " has no original instruction");
}

py::Ref<> resume_code_for(PyCodeObject* code, int offset, const std::vector<StackSlot>& stack,
                          const std::vector<py::Ref<>>& contexts, const std::vector<std::string>& live_locals) {
  PyObject* original = reinterpret_cast<PyObject*>(code);
  if (const ResumeOrigin* origin = resume_origin(original)) original = origin->original.get();
  const int at = original_offset(reinterpret_cast<PyObject*>(code), offset);
  std::vector<std::pair<int, PyObject*>> slots;
  for (size_t i = 0; i < stack.size(); ++i)
    slots.emplace_back(static_cast<int>(stack[i]), i < contexts.size() ? contexts[i].get() : nullptr);
  Key key{original, at, slots, live_locals};
  Cache& state = cache();
  if (auto found = state.by_key.find(key); found != state.by_key.end()) return found->second.copy();
  ResumeSpec spec;
  spec.offset = at;
  spec.stack = stack;
  spec.contexts.reserve(contexts.size());
  for (const auto& context : contexts) spec.contexts.push_back(context.copy());
  spec.locals = live_locals;
  spec.name = resume_name(at, state.counter++);
  ResumeCode resume = make_resume_code(reinterpret_cast<PyCodeObject*>(original), spec);
  state.keys_alive.push_back(py::Ref<>::newref(original));
  for (const auto& context : contexts)
    if (context) state.keys_alive.push_back(context.copy());
  state.origins[resume.code.get()] = ResumeOrigin{py::Ref<>::newref(original), resume.original_offsets};
  state.by_key.emplace(std::move(key), resume.code.copy());
  return std::move(resume.code);
}

size_t resume_cache_size() { return cache().by_key.size(); }

std::vector<py::Ref<>> resume_codes() {
  std::vector<py::Ref<>> codes;
  for (const auto& [key, code] : cache().by_key) codes.push_back(code.copy());
  return codes;
}

void reset_resume_cache() {
  Cache& state = cache();
  state.by_key.clear();
  state.origins.clear();
  state.keys_alive.clear();
}

}  // namespace bytegraph::codegen
