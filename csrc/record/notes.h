// The note of a step: what the interpreter did at one instruction, in words
// ("push constant 0", "store to local a0", "tensor method call: sum added to the graph",
// "branch on a tensor: graph break, compile the subgraph", "inline call to helper").
#pragma once

#include <string>
#include <vector>

namespace bytegraph::record {

struct NoteFacts {
  std::string opname;
  std::string argrepr;
  std::string top;                   // repr of the value on top of the stack after the step, or ""
  std::string result;                // repr of the returned value (RETURN_VALUE), or ""
  std::vector<std::string> added;    // graph rows added by this step
  std::vector<std::string> guards;   // guards installed by this step, one line each
  std::string inlined;               // name of the function this step inlined, or ""
  int opcode = -1;                   // this interpreter's opcode (-1: unknown)
};

std::string step_note(const NoteFacts& facts);

// The note of the instruction a trace stopped at.
std::string break_note(const std::string& kind, const std::string& message);

}  // namespace bytegraph::record
