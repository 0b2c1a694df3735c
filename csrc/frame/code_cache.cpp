#include "frame/code_cache.h"

#include <algorithm>
#include <unordered_set>

#include "frame/cpython_frame.h"
#include "python/errors.h"

namespace bytegraph::frame {
namespace {

Py_ssize_t g_extra_index = -1;
// Every live cache, so reset() can reach code objects nobody names any more. Caches remove
// themselves when their code object dies, so this never holds a dangling pointer.
std::unordered_set<CodeCache*>& live_caches() {
  static auto* caches = new std::unordered_set<CodeCache*>();  // never destroyed: no exit-order issues
  return *caches;
}

}  // namespace

void init_code_cache() {
  if (g_extra_index >= 0) return;
  // The free function is a static member, so the index it is registered with stays valid
  // for the interpreter's lifetime.
  Py_ssize_t index = py::shim::request_code_extra_index(
      [](void* extra) { delete static_cast<CodeCache*>(extra); });
  if (index < 0) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "bytegraph: no free co_extra slot");
    throw_python_error();
  }
  g_extra_index = index;
}

CodeCache* CodeCache::find(PyCodeObject* code) {
  if (g_extra_index < 0) return nullptr;
  void* extra = nullptr;
  if (py::shim::get_code_extra(code, g_extra_index, &extra) < 0) {
    PyErr_Clear();
    return nullptr;
  }
  return static_cast<CodeCache*>(extra);
}

CodeCache& CodeCache::ensure(PyCodeObject* code) {
  init_code_cache();
  if (CodeCache* existing = find(code)) return *existing;
  auto cache = std::unique_ptr<CodeCache>(new CodeCache(code));
  check_status(py::shim::set_code_extra(code, g_extra_index, cache.get()));
  live_caches().insert(cache.get());
  return *cache.release();
}

CodeCache::~CodeCache() {
  live_caches().erase(this);
  // Entries may run arbitrary code when they die (finalizers, weakref callbacks): detach
  // them from this object first so nothing sees a half-destroyed cache.
  auto dying = std::move(entries_);
  dying.clear();
}

std::shared_ptr<CacheEntry> CodeCache::lookup(const guards::FrameValues& values, PyObject* backend_key) {
  // Index-based on purpose: a Python guard may clear or extend this cache while it runs.
  for (size_t i = 0; i < entries_.size(); i++) {
    std::shared_ptr<CacheEntry> entry = entries_[i];
    if (!entry->made_for(backend_key)) continue;
    if (entry->guards && !entry->guards->check(values)) continue;
    auto position = std::find(entries_.begin(), entries_.end(), entry);
    if (position != entries_.end() && position != entries_.begin()) {
      std::rotate(entries_.begin(), position, position + 1);
    }
    return entry;
  }
  return nullptr;
}

void CodeCache::add(std::shared_ptr<CacheEntry> entry) {
  entries_.insert(entries_.begin(), std::move(entry));
}

void CodeCache::clear_entries() {
  auto dying = std::move(entries_);
  entries_.clear();
  misses_ = 0;
  dying.clear();
}

void mark_own_code(PyCodeObject* code) { CodeCache::ensure(code).set_own_code(); }

bool is_own_code(PyCodeObject* code) {
  CodeCache* cache = CodeCache::find(code);
  return cache != nullptr && cache->is_own_code();
}

void mark_skip(PyCodeObject* code) { CodeCache::ensure(code).set_skipped(true); }
void mark_run_only(PyCodeObject* code) { CodeCache::ensure(code).set_run_only(true); }

size_t reset_all_caches() {
  // Collect first, destroy after: dropping an entry can free code objects (and so remove
  // caches from the registry) while we would still be iterating it.
  std::vector<std::shared_ptr<CacheEntry>> dying;
  for (CodeCache* cache : live_caches()) {
    for (auto& entry : cache->entries()) dying.push_back(entry);
  }
  std::vector<CodeCache*> caches(live_caches().begin(), live_caches().end());
  for (CodeCache* cache : caches) {
    cache->clear_entries();
    cache->set_skipped(false);
    cache->set_run_only(false);
  }
  size_t count = dying.size();
  dying.clear();
  return count;
}

size_t live_cache_count() { return live_caches().size(); }

}  // namespace bytegraph::frame
