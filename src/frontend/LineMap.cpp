#include "frontend/LineMap.h"

#include <algorithm>

namespace rtcg::frontend {

LineMap::LineMap(std::string_view source) : source_(source) {
  lineStarts_.push_back(0);
  for (size_t i = 0; i < source.size(); ++i)
    if (source[i] == '\n') lineStarts_.push_back((int)i + 1);
}

SourceLoc LineMap::loc(ast::Span span) const {
  int begin = std::clamp(span.begin, 0, (int)source_.size());
  int end = std::max(span.end, begin);
  // The last line start at or before `begin`.
  auto it = std::upper_bound(lineStarts_.begin(), lineStarts_.end(), begin);
  int line = (int)(it - lineStarts_.begin());
  int lineStart = *(it - 1);
  int lineEnd = it == lineStarts_.end() ? (int)source_.size() : *it - 1;  // offset of the '\n'
  int length = std::min(end, lineEnd) - begin;
  return SourceLoc{line, begin - lineStart + 1, std::max(length, 1)};
}

std::string_view LineMap::text(SourceLoc l) const {
  if (!l.valid() || l.line > (int)lineStarts_.size()) return {};
  size_t begin = (size_t)lineStarts_[l.line - 1] + (size_t)(l.col - 1);
  if (begin > source_.size()) return {};
  return source_.substr(begin, (size_t)l.length);
}

}  // namespace rtcg::frontend
