// The corpus of bad programs: tests/frontend/bad/NAME.rtcg must fail with exactly the rendered
// diagnostics of NAME.expected (file name as `NAME.rtcg`).
#include <vector>

#include "TestUtil.h"

namespace rtcg::test {
namespace {

std::vector<std::filesystem::path> badPrograms() {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(sourceDir() / "tests/frontend/bad"))
    if (entry.path().extension() == ".rtcg") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

TEST(BadPrograms, CorpusIsLarge) { EXPECT_GE(badPrograms().size(), 45u); }

TEST(BadPrograms, DiagnosticsMatchExpected) {
  for (const std::filesystem::path& file : badPrograms()) {
    std::string name = file.filename().string();
    SCOPED_TRACE(name);
    std::filesystem::path expectedFile = file;
    expectedFile.replace_extension(".expected");
    ASSERT_TRUE(std::filesystem::exists(expectedFile)) << "missing " << expectedFile;
    std::string source = readFile(file);
    Diagnostics diags;
    std::optional<Program> p = parseProgram(name, source, diags);
    EXPECT_FALSE(p.has_value());
    EXPECT_TRUE(diags.hasErrors());
    EXPECT_EQ(diags.render(name, source), readFile(expectedFile));
  }
}

}  // namespace
}  // namespace rtcg::test
