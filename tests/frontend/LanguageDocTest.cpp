// Every example in docs/language.md is real: ```rtcg blocks parse without errors, ```rtcg-error
// blocks produce at least one.
#include <vector>

#include "TestUtil.h"

namespace rtcg::test {
namespace {

struct Block {
  std::string info;  // the fence's info string: "rtcg" or "rtcg-error"
  std::string text;
  int line = 0;      // line of the opening fence in the document
};

std::vector<Block> fencedBlocks(const std::string& doc) {
  std::vector<Block> blocks;
  std::istringstream in(doc);
  std::string line;
  int lineNo = 0;
  Block* open = nullptr;
  while (std::getline(in, line)) {
    ++lineNo;
    if (line.rfind("```", 0) == 0) {
      if (open) {
        open = nullptr;
      } else {
        blocks.push_back({line.substr(3), "", lineNo});
        open = &blocks.back();
      }
    } else if (open) {
      open->text += line + "\n";
    }
  }
  EXPECT_EQ(open, nullptr) << "unterminated code block";
  return blocks;
}

TEST(LanguageDoc, ExamplesBehaveAsDocumented) {
  std::string doc = readFile(sourceDir() / "docs/language.md");
  ASSERT_FALSE(doc.empty());
  int good = 0, bad = 0;
  for (const Block& b : fencedBlocks(doc)) {
    if (b.info != "rtcg" && b.info != "rtcg-error") continue;
    SCOPED_TRACE(fmt::format("docs/language.md block at line {}", b.line));
    Diagnostics diags;
    std::optional<Program> p = parseProgram("language.md", b.text, diags);
    if (b.info == "rtcg") {
      EXPECT_TRUE(p.has_value() && !diags.hasErrors()) << b.text << diags.render("language.md", b.text);
      ++good;
    } else {
      EXPECT_TRUE(diags.hasErrors()) << "expected an error in:\n" << b.text;
      ++bad;
    }
  }
  EXPECT_GE(good, 10);
  EXPECT_GE(bad, 5);
}

}  // namespace
}  // namespace rtcg::test
