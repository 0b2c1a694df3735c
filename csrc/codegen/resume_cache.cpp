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
  std::map<std::pair<PyObject*, int>, int> per_line;    // (original, line) -> resume functions there
};

// Leaked on purpose: code objects must not be released during interpreter finalisation.
Cache& cache() {
  static Cache* instance = new Cache();
  return *instance;
}

std::string code_text(PyObject* code, const char* attribute) {
  py::Ref<> text = check(PyObject_GetAttrString(code, attribute));
  const char* utf8 = PyUnicode_AsUTF8(text.get());
  if (utf8 == nullptr) throw_python_error();
  return utf8;
}

// "(resumed at line 7)", "(resumed at line 7 #2)" for a second continuation at that line,
// "(resumed at offset 40)" where the instruction has no line.
std::string resume_suffix(Cache& state, PyObject* original, int offset) {
  const int line = PyCode_Addr2Line(reinterpret_cast<PyCodeObject*>(original), offset);
  const int count = ++state.per_line[{original, line}];
  std::string suffix = line >= 0 ? "resumed at line " + std::to_string(line) : "resumed at offset " + std::to_string(offset);
  if (count > 1) suffix += " #" + std::to_string(count);
  return " (" + suffix + ")";
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

bool has_original_instruction(PyObject* code, int offset) {
  const ResumeOrigin* origin = resume_origin(code);
  if (origin == nullptr) return true;
  for (const auto& entry : origin->offsets)
    if (entry.first == offset) return true;
  return false;
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
  const std::string suffix = resume_suffix(state, original, at);
  spec.name = code_text(original, "co_name") + suffix;
  spec.qualname = code_text(original, "co_qualname") + suffix;
  ResumeCode resume = make_resume_code(reinterpret_cast<PyCodeObject*>(original), spec);
  state.keys_alive.push_back(py::Ref<>::newref(original));
  for (const auto& context : contexts)
    if (context) state.keys_alive.push_back(context.copy());
  state.origins[resume.code.get()] = ResumeOrigin{py::Ref<>::newref(original), resume.original_offsets, at, stack};
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
  state.per_line.clear();
}

}  // namespace bytegraph::codegen
