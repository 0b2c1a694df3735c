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

#include "python/break_kinds.h"
#include "python/errors.h"

namespace fs = std::filesystem;

namespace {

// kind -> "file:line" of its first use, for every `unsupported("kind"` / `Unsupported("kind"`.
std::map<std::string, std::string> kinds_thrown_in_sources() {
  std::map<std::string, std::string> kinds;
  const std::regex call(R"re(\b[uU]nsupported\(\s*"([^"]*)")re");
  for (const auto& entry : fs::recursive_directory_iterator(fs::path(BYTEGRAPH_SOURCE_DIR) / "csrc")) {
    const std::string extension = entry.path().extension().string();
    if (!entry.is_regular_file() || (extension != ".cpp" && extension != ".h")) continue;
    std::ifstream file(entry.path());
    std::string line;
    for (int number = 1; std::getline(file, line); ++number) {
      if (line.find_first_not_of(' ') != std::string::npos && line.compare(line.find_first_not_of(' '), 2, "//") == 0)
        continue;  // comments may show the call's shape
      for (std::sregex_iterator it(line.begin(), line.end(), call), end; it != end; ++it) {
        kinds.emplace((*it)[1].str(), entry.path().filename().string() + ":" + std::to_string(number));
      }
    }
  }
  return kinds;
}

}  // namespace

TEST(BreakKinds, EveryKindThrownInTheSourcesIsRegisteredWithAHint) {
  auto thrown = kinds_thrown_in_sources();
  ASSERT_GT(thrown.size(), 30u) << "the scan found too few kinds: is BYTEGRAPH_SOURCE_DIR right?";
  for (const auto& [kind, where] : thrown) {
    const bytegraph::BreakKind* registered = bytegraph::find_break_kind(kind);
    EXPECT_NE(registered, nullptr) << "break kind '" << kind << "' (" << where
                                   << ") is not registered in csrc/python/break_kinds.cpp";
  }
}

TEST(BreakKinds, EveryRegisteredKindIsThrownSomewhere) {
  auto thrown = kinds_thrown_in_sources();
  for (const bytegraph::BreakKind& kind : bytegraph::break_kinds()) {
    EXPECT_TRUE(thrown.count(std::string(kind.name))) << "registered break kind '" << kind.name
                                                      << "' is never thrown: remove it";
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
