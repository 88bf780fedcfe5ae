// Maps byte offsets of a source text to the 1-based line/column SourceLocs that Diagnostics
// renders. Columns count bytes, which keeps the caret aligned with the echoed source line.
#pragma once

#include <string_view>
#include <vector>

#include "frontend/AST.h"
#include "support/Diagnostics.h"

namespace rtcg::frontend {

class LineMap {
 public:
  explicit LineMap(std::string_view source);

  // The location of `span`. A span that runs over several lines is cut at the end of its first
  // line, since a caret line can only underline one source line.
  SourceLoc loc(ast::Span span) const;
  // A one-character location at `offset` (used for "expected ';'" after the previous token).
  SourceLoc point(int offset) const { return loc({offset, offset + 1}); }
  // The source text a location underlines (empty for an invalid location).
  std::string_view text(SourceLoc loc) const;

 private:
  std::string_view source_;
  std::vector<int> lineStarts_;  // offset of the first byte of every line
};

}  // namespace rtcg::frontend
