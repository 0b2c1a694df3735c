// Pausing CPython's cycle collector around work that allocates many tracked objects.
#pragma once

#include <Python.h>

namespace bytegraph::py {

// The cycle collector paused for a scope, as long as any such scope is open on any thread.
// A trace allocates many tracked objects (fakes, graph nodes, values) that mostly die by
// reference counting when it ends; collections triggered while it runs would walk them, and
// the older generations walk every object of the process. The collector runs again, if it was
// enabled, when the last scope closes. Holders keep the GIL, which guards the count.
class CollectorPause {
 public:
  CollectorPause() {
    if (depth_++ == 0) resume_ = PyGC_Disable() == 1;
  }
  ~CollectorPause() {
    if (--depth_ == 0 && resume_) PyGC_Enable();
  }
  CollectorPause(const CollectorPause&) = delete;
  CollectorPause& operator=(const CollectorPause&) = delete;

 private:
  static inline int depth_ = 0;
  static inline bool resume_ = false;
};

}  // namespace bytegraph::py
