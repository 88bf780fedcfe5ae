// Decoding C++ literal spellings with the position of every DSL byte.
#include "LiteralDecode.h"

#include <gtest/gtest.h>

namespace rtcg {
namespace {

MappedText decode(std::string_view spelling, CppPos start = {10, 5}) {
  MappedText m;
  std::string error;
  EXPECT_TRUE(appendLiteralToken(spelling, start, m, &error)) << error;
  EXPECT_EQ(m.pos.size(), m.text.size());
  return m;
}

TEST(LiteralDecode, PlainLiteralMapsEachCharacterToItsColumn) {
  MappedText m = decode(R"("ab c")");
  EXPECT_EQ(m.text, "ab c");
  EXPECT_EQ(m.pos[0], (CppPos{10, 6}));  // after the quote
  EXPECT_EQ(m.pos[3], (CppPos{10, 9}));
  EXPECT_EQ(m.end, (CppPos{10, 10}));  // the closing quote
}

TEST(LiteralDecode, EscapesTakeTheColumnsOfTheirSpelling) {
  MappedText m = decode(R"("a\n\tb\x41\101\\\"")", {1, 1});
  EXPECT_EQ(m.text, "a\n\tbAA\\\"");
  EXPECT_EQ(m.pos[1], (CppPos{1, 3}));  // \n
  EXPECT_EQ(m.pos[2], (CppPos{1, 5}));  // \t
  EXPECT_EQ(m.pos[3], (CppPos{1, 7}));  // b
  EXPECT_EQ(m.pos[4], (CppPos{1, 8}));  // \x41
  EXPECT_EQ(m.pos[5], (CppPos{1, 12}));  // \101
  EXPECT_EQ(m.pos[6], (CppPos{1, 16}));  // backslash
}

TEST(LiteralDecode, UniversalCharacterNamesBecomeUtf8) {
  MappedText m = decode(R"("\u00e9x")", {1, 1});
  EXPECT_EQ(m.text, "\xC3\xA9x");
  EXPECT_EQ(m.pos[0], (CppPos{1, 2}));
  EXPECT_EQ(m.pos[1], (CppPos{1, 2}));
  EXPECT_EQ(m.pos[2], (CppPos{1, 8}));
}

TEST(LiteralDecode, RawStringsSkipPrefixAndDelimiterAndFollowNewlines) {
  MappedText m = decode("u8R\"dsl(ab\n  c)\")dsl\"", {3, 7});
  EXPECT_EQ(m.text, "ab\n  c)\"");
  EXPECT_EQ(m.pos[0], (CppPos{3, 15}));  // u8R"dsl( is 8 characters
  EXPECT_EQ(m.pos[2], (CppPos{3, 17}));  // the newline itself
  EXPECT_EQ(m.pos[5], (CppPos{4, 3}));   // c
  EXPECT_EQ(m.end, (CppPos{4, 10}));  // the quote of )dsl"
}

TEST(LiteralDecode, LineContinuationsProduceNoCharacter) {
  MappedText m = decode("\"ab\\\ncd\"", {1, 1});
  EXPECT_EQ(m.text, "abcd");
  EXPECT_EQ(m.pos[2], (CppPos{2, 1}));
}

TEST(LiteralDecode, ConcatenatedTokensAppend) {
  MappedText m;
  std::string error;
  ASSERT_TRUE(appendLiteralToken(R"("ab")", {1, 1}, m, &error));
  ASSERT_TRUE(appendLiteralToken(R"("cd")", {2, 3}, m, &error));
  EXPECT_EQ(m.text, "abcd");
  EXPECT_EQ(m.pos[2], (CppPos{2, 4}));
  EXPECT_EQ(m.end, (CppPos{2, 6}));
}

TEST(LiteralDecode, RejectsWhatIsNotAStringLiteral) {
  MappedText m;
  std::string error;
  EXPECT_FALSE(appendLiteralToken("kSource", {1, 1}, m, &error));
  EXPECT_FALSE(appendLiteralToken(R"(R"x(abc)y")", {1, 1}, m, &error));
  EXPECT_FALSE(appendLiteralToken(R"("a\q")", {1, 1}, m, &error));
  EXPECT_NE(error.find("\\q"), std::string::npos);
}

TEST(LiteralDecode, DslPositionsMapThroughLines) {
  MappedText m = decode("R\"(x\nyz)\"", {5, 10});
  EXPECT_EQ(mapDslPosition(m, 1, 1), (CppPos{5, 13}));
  EXPECT_EQ(mapDslPosition(m, 2, 2), (CppPos{6, 2}));
  EXPECT_EQ(mapDslPosition(m, 2, 3), m.end);  // past the text: the closing quote
  EXPECT_EQ(mapDslPosition(m, 9, 1), m.end);
}

}  // namespace
}  // namespace rtcg
