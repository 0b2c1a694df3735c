#include "record/notes.h"

#include <utility>

#include "bytecode/opcodes.h"

namespace bytegraph::record {

namespace {

bool starts_with(const std::string& text, const char* prefix) { return text.rfind(prefix, 0) == 0; }

// The first two fields of a graph row: its opcode and its node's name; the third, the target.
std::vector<std::string> row_fields(const std::string& row) {
  std::vector<std::string> fields;
  size_t start = 0;
  while (fields.size() < 3) {
    size_t end = row.find("  ", start);
    fields.push_back(row.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 2;
  }
  while (fields.size() < 3) fields.emplace_back();
  return fields;
}

std::string graph_note(const std::vector<std::string>& added, bool& has_call) {
  std::string calls, inputs;
  has_call = false;
  for (const auto& row : added) {
    auto fields = row_fields(row);
    const std::string& op = fields[0];
    const std::string& target = fields[2];
    const char* what = nullptr;
    if (op == "call_method") what = "tensor method call: ";
    else if (op == "call_function") what = "function call: ";
    else if (op == "call_module") what = "module call: ";
    if (what != nullptr) {
      calls += (calls.empty() ? "" : "; ") + std::string(what) + target + " added to the graph";
      has_call = true;
    } else {
      inputs += (inputs.empty() ? "" : ", ") + fields[1];
    }
  }
  if (!inputs.empty()) calls += (calls.empty() ? "" : "; ") + std::string("graph input ") + inputs;
  return calls;
}

// The two names of a paired instruction's argument ("a, b" or "('a', 'b')"), for its note.
std::pair<std::string, std::string> paired_names(const std::string& argrepr) {
  std::string names;
  for (char c : argrepr)
    if (c != '(' && c != ')' && c != '\'') names += c;
  size_t comma = names.find(", ");
  if (comma == std::string::npos) return {names, names};
  return {names.substr(0, comma), names.substr(comma + 2)};
}

// The instructions that do two local accesses in one (3.13+), by family.
std::string paired_note(const NoteFacts& f) {
  using bytecode::Family;
  if (f.opcode < 0) return "";
  auto [first, second] = paired_names(f.argrepr);
  if (bytecode::in_family(f.opcode, Family::kLoadFastLoadFast)) return "push locals " + first + " and " + second;
  if (bytecode::in_family(f.opcode, Family::kStoreFastStoreFast)) return "store to locals " + first + " and " + second;
  if (bytecode::in_family(f.opcode, Family::kStoreFastLoadFast)) return "store to local " + first + ", push local " + second;
  return "";
}

// What the instruction itself does, when the graph did not change.
std::string instruction_note(const NoteFacts& f) {
  const std::string& op = f.opname;
  const std::string& arg = f.argrepr;
  if (std::string paired = paired_note(f); !paired.empty()) return paired;
  if (op == "RESUME") return "start of the frame";
  if (op == "LOAD_CONST") return "push constant " + arg;
  if (op == "LOAD_FAST" || op == "LOAD_FAST_CHECK") return "push local " + arg;
  if (op == "STORE_FAST") return "store to local " + arg;
  if (op == "DELETE_FAST") return "delete local " + arg;
  if (op == "LOAD_DEREF" || op == "LOAD_CLASSDEREF") return "push cell variable " + arg;
  if (op == "STORE_DEREF") return "store to cell variable " + arg;
  if (op == "LOAD_GLOBAL") return "push global " + arg;
  if (op == "LOAD_ATTR") return "look up attribute " + arg;
  if (op == "LOAD_METHOD") return "look up method " + arg;
  if (op == "PUSH_NULL") return "push NULL (the call protocol's placeholder)";
  if (op == "PRECALL" || op == "KW_NAMES") return "prepare the call";
  if (op == "POP_TOP") return "discard the top of the stack";
  if (op == "RETURN_VALUE") return "return " + f.result;
  if (op == "BINARY_OP" || op == "COMPARE_OP" || op == "IS_OP" || op == "CONTAINS_OP" ||
      starts_with(op, "BINARY_") || starts_with(op, "UNARY_"))
    return (arg.empty() ? op : arg) + " on constants, folded to " + f.top;
  if (op == "CALL" || op == "CALL_FUNCTION_EX") return "call evaluated while tracing: " + f.top;
  if (starts_with(op, "POP_JUMP") || starts_with(op, "JUMP_IF")) return "branch on a constant, decided while tracing";
  if (starts_with(op, "JUMP")) return "jump " + arg;
  if (starts_with(op, "BUILD_")) return "build " + f.top;
  if (op == "GET_ITER") return "make an iterator";
  if (op == "FOR_ITER") return "next loop item";
  return "";
}

}  // namespace

std::string step_note(const NoteFacts& facts) {
  bool has_call = false;
  std::string graph = graph_note(facts.added, has_call);
  std::string note;
  if (!facts.inlined.empty()) note = "inline call to " + facts.inlined;
  else if (!has_call) note = instruction_note(facts);
  if (!graph.empty()) note += (note.empty() ? "" : "; ") + graph;
  if (!facts.guards.empty()) {
    note += (note.empty() ? "" : "; ") + std::string(facts.guards.size() == 1 ? "guard installed: " : "guards installed: ");
    for (size_t i = 0; i < facts.guards.size(); ++i) note += (i ? ", " : "") + facts.guards[i];
  }
  return note;
}

std::string break_note(const std::string& kind, const std::string& message) {
  if (kind == "data_dependent_branch") return "branch on a tensor: graph break, compile the subgraph";
  return "graph break (" + kind + "): " + message + "; compile the subgraph";
}

}  // namespace bytegraph::record
