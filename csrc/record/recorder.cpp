#include "record/recorder.h"

namespace bytegraph::record {

namespace {
thread_local Recorder* current_recorder = nullptr;
}

Recorder* attached() { return current_recorder; }

Attach::Attach(Recorder* recorder) : previous_(current_recorder) { current_recorder = recorder; }

Attach::~Attach() { current_recorder = previous_; }

}  // namespace bytegraph::record
