// The per-code-object cache: stored in the code object's co_extra slot, freed with it.
//
// It holds the compiled entries (checked in order, the first whose guards pass wins and
// moves to the front; new entries go to the front), the skip mark, the "bytegraph made this
// code" mark and a miss counter. All of it is touched only with the GIL held.
//
// Lifetime: an entry must not own its code object (co_extra is invisible to the garbage
// collector, so such a cycle would never be freed). Entries are shared_ptrs so a lookup in
// progress keeps the entry it is checking alive even if Python code run by a guard clears
// the cache.
#pragma once

#include <Python.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "frame/cache_entry.h"
#include "guards/guard_set.h"

namespace bytegraph::frame {

class CodeCache {
 public:
  // The cache of `code`, or null if bytegraph never touched it. Never raises.
  static CodeCache* find(PyCodeObject* code);
  // The cache of `code`, created on first use. Throws PythonError.
  static CodeCache& ensure(PyCodeObject* code);

  // The first entry whose guards pass (moved to the front), or null. Throws whatever a guard
  // threw (PythonError for a Python guard that raised).
  // The first entry made for `backend_key` (see frame_compiler.h) whose guards pass.
  std::shared_ptr<CacheEntry> lookup(const guards::FrameValues& values, PyObject* backend_key = nullptr);
  void add(std::shared_ptr<CacheEntry> entry);
  // Drops the entries (and the miss counter); marks stay.
  void clear_entries();
  const std::vector<std::shared_ptr<CacheEntry>>& entries() const { return entries_; }

  bool skipped() const { return skip_; }
  void set_skipped(bool skip) { skip_ = skip; }
  // Past its recompile limit: calls are served by the entries it has, a miss runs the frame
  // unmodified, and the functions it calls then are not compiled either (torch.compile's
  // RUN_ONLY).
  bool run_only() const { return run_only_; }
  void set_run_only(bool run_only) { run_only_ = run_only; }
  bool is_own_code() const { return own_code_; }
  void set_own_code() { own_code_ = true; }
  bool failure_logged() const { return failure_logged_; }
  void set_failure_logged() { failure_logged_ = true; }
  std::uint64_t misses() const { return misses_; }
  void count_miss() { misses_++; }

  ~CodeCache();

 private:
  explicit CodeCache(PyCodeObject* code) : code_(code) {}

  PyCodeObject* code_;  // borrowed: the cache lives inside this code object
  std::vector<std::shared_ptr<CacheEntry>> entries_;
  std::uint64_t misses_ = 0;
  bool skip_ = false;
  bool run_only_ = false;
  bool own_code_ = false;
  bool failure_logged_ = false;
};

// Requests the co_extra index (once per process). Throws PythonError.
void init_code_cache();
void mark_own_code(PyCodeObject* code);  // throws PythonError
bool is_own_code(PyCodeObject* code);    // never raises
void mark_skip(PyCodeObject* code);      // throws PythonError
void mark_run_only(PyCodeObject* code);  // throws PythonError
// Drops every entry of every code object that has a cache; marks stay. Returns how many
// entries were dropped.
size_t reset_all_caches();
// How many code objects currently carry a cache (for leak tests).
size_t live_cache_count();

}  // namespace bytegraph::frame
