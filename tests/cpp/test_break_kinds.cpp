// The graph-break kind registry (python/break_kinds.h) against the sources: every kind the
// core throws is registered with a hint, and every registered kind is thrown somewhere.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "python/break_kinds.h"
#include "python/errors.h"

namespace fs = std::filesystem;

namespace {

// Where kinds are thrown from a variable rather than a literal, and where that variable's
// literals are written: forwarding sites are allowed only if listed here.
const std::set<std::string> kForwardingSites = {
    "value.cpp",      // unsupported(kind, message) itself
    "functions.cpp",  // GraphBreakValue::call: kinds from make_shared<GraphBreakValue>(source, "kind", ...)
    "keys.cpp",       // dict_key(tracer, key, kind): its callers name registered kinds (unsupported_dict, ...)
    "symbolic.cpp",   // data_dependent_failure(kind, ...): data_dependent_branch or data_dependent_op
};

struct Scan {
  std::map<std::string, std::string> kinds;  // kind -> "file:line" of its first use
  std::vector<std::string> unlisted_forwarding;  // "file:line" of calls with a non-literal kind
  std::set<std::string> literals;  // every string literal in the sources (but the registry)
};

Scan scan_sources() {
  Scan scan;
  const std::regex thrown(R"re(\b[uU]nsupported\(\s*"([^"]*)")re");
  const std::regex graph_break_value(R"re(make_shared<GraphBreakValue>\([^,]*,\s*"([^"]*)")re");
  const std::regex forwarded(R"re(\b[uU]nsupported\(\s*([A-Za-z_][A-Za-z_0-9]*)\s*[,)])re");
  const std::regex literal(R"re("([a-z_0-9]+)")re");
  for (const auto& entry : fs::recursive_directory_iterator(fs::path(BYTEGRAPH_SOURCE_DIR) / "csrc")) {
    const std::string extension = entry.path().extension().string();
    if (!entry.is_regular_file() || (extension != ".cpp" && extension != ".h")) continue;
    const std::string name = entry.path().filename().string();
    std::ifstream file(entry.path());
    std::string line;
    for (int number = 1; std::getline(file, line); ++number) {
      size_t first = line.find_first_not_of(' ');
      if (first != std::string::npos && line.compare(first, 2, "//") == 0) continue;  // comments show the shape
      const std::string where = name + ":" + std::to_string(number);
      for (const std::regex* pattern : {&thrown, &graph_break_value}) {
        for (std::sregex_iterator it(line.begin(), line.end(), *pattern), end; it != end; ++it)
          scan.kinds.emplace((*it)[1].str(), where);
      }
      for (std::sregex_iterator it(line.begin(), line.end(), forwarded), end; it != end; ++it) {
        const std::string argument = (*it)[1].str();
        if (argument == "const" || argument == "std") continue;  // a declaration
        if (!kForwardingSites.count(name)) scan.unlisted_forwarding.push_back(where + " (" + argument + ")");
      }
      if (name == "break_kinds.cpp") continue;
      for (std::sregex_iterator it(line.begin(), line.end(), literal), end; it != end; ++it)
        scan.literals.insert((*it)[1].str());
    }
  }
  return scan;
}

}  // namespace

TEST(BreakKinds, EveryKindThrownInTheSourcesIsRegisteredWithAHint) {
  Scan scan = scan_sources();
  ASSERT_GT(scan.kinds.size(), 30u) << "the scan found too few kinds: is BYTEGRAPH_SOURCE_DIR right?";
  for (const auto& [kind, where] : scan.kinds) {
    EXPECT_NE(bytegraph::find_break_kind(kind), nullptr)
        << "break kind '" << kind << "' (" << where << ") is not registered in csrc/python/break_kinds.cpp";
  }
  for (const std::string& where : scan.unlisted_forwarding) {
    ADD_FAILURE() << where << " throws a kind held in a variable: throw literal kinds, or list the site in "
                  << "kForwardingSites and scan where its kinds are written";
  }
}

TEST(BreakKinds, EveryRegisteredKindIsUsedSomewhere) {
  Scan scan = scan_sources();
  for (const bytegraph::BreakKind& kind : bytegraph::break_kinds()) {
    EXPECT_TRUE(scan.literals.count(std::string(kind.name)))
        << "registered break kind '" << kind.name << "' appears nowhere in the sources: remove it";
  }
}

TEST(BreakKinds, TheRegistryIsSortedUniqueAndEveryHintIsASentence) {
  auto kinds = bytegraph::break_kinds();
  for (size_t i = 0; i < kinds.size(); ++i) {
    EXPECT_GT(kinds[i].hint.size(), 20u) << kinds[i].name;
    EXPECT_EQ(kinds[i].name.find(' '), std::string_view::npos) << kinds[i].name;
    if (i > 0) {
      EXPECT_LT(kinds[i - 1].name, kinds[i].name) << "not sorted or duplicated";
    }
  }
}

TEST(BreakKinds, AnUnknownKindGetsTheGenericHintInsteadOfFailing) {
  bytegraph::Unsupported error("no_such_kind", "message");
  EXPECT_EQ(bytegraph::find_break_kind("no_such_kind"), nullptr);
  EXPECT_FALSE(error.hint().empty());
  bytegraph::Unsupported known("data_dependent_branch", "message");
  EXPECT_NE(known.hint().find("torch.where"), std::string_view::npos);
}
