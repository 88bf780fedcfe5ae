// The HTML search report. The charts are SVG written here: a scale maps data to pixels, axes get
// "nice" ticks (1-2-5 steps, decades on a log scale), and every mark has a <title> so hovering
// shows the candidate without any script.
#include "tune/Report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "schedule/Schedule.h"

namespace rtcg {

std::string htmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += ch;
    }
  }
  return out;
}

std::optional<double> rooflineFraction(const CandidateRecord& c, double peakGflops, double peakGbytesPerSecond) {
  double f = 0;
  bool known = false;
  if (peakGflops > 0 && c.gflops > 0) {
    f = std::max(f, c.gflops / peakGflops);
    known = true;
  }
  if (peakGbytesPerSecond > 0 && c.gbytes > 0) {
    f = std::max(f, c.gbytes / peakGbytesPerSecond);
    known = true;
  }
  if (!known) return std::nullopt;
  return f;
}

std::vector<std::pair<std::string, std::string>> scheduleChoices(const SchedulePlan& plan) {
  if (!plan.ok()) return {{"schedule", "no plan"}};

  // One value per nest for each choice; nests with nothing to schedule are left out.
  std::vector<std::string> threadX, threads, reg, unroll, grid;
  std::vector<std::vector<std::string>> clauses(clauseTable().size());  // per clause row
  for (const NestPlan& np : plan.nests) {
    const NestSchedule& nest = np.schedule;
    if (nest.indices.empty() && !nest.mma.any() && !nest.scan.any()) continue;
    std::string tx = "none";
    int64_t regTile = 1, unrollFactor = 1;
    std::set<int> gridAxes;
    for (const IndexSchedule& index : nest.indices) {
      for (const SchedulePart& part : index.parts) {
        if (part.place == Placement::ThreadX)
          tx = part.factor ? fmt::format("{} {}", index.index, *part.factor) : index.index;
        if (part.place == Placement::Reg) regTile *= part.factor.value_or(1);
        if (part.place == Placement::Unroll) unrollFactor *= part.factor.value_or(1);
        if (isGridPlacement(part.place)) gridAxes.insert(placementAxis(part.place));
      }
    }
    threadX.push_back(tx);
    threads.push_back(std::to_string(np.launch.threads));
    reg.push_back(std::to_string(regTile));
    unroll.push_back(unrollFactor > 1 ? std::to_string(unrollFactor) : "none");
    for (size_t r = 0; r < clauseTable().size(); ++r) clauses[r].push_back(clauseValue(clauseTable()[r], nest));
    grid.push_back(std::to_string(gridAxes.size()));
  }
  auto join = [](const std::vector<std::string>& v) {
    if (v.empty()) return std::string("-");
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) out += (i ? " | " : "") + v[i];
    return out;
  };
  std::vector<std::pair<std::string, std::string>> out{
      {"thread.x", join(threadX)}, {"threads per block", join(threads)}, {"register tile", join(reg)}, {"unroll", join(unroll)}};
  // Every clause of the clause table (shared, transposed, buffers, copy, loads, blocks_per_sm).
  for (size_t r = 0; r < clauseTable().size(); ++r) out.push_back({clauseTable()[r].name, join(clauses[r])});
  out.push_back({"grid axes", join(grid)});
  return out;
}

std::map<std::string, SchedulePlan> planCandidates(const Kernel& bound, const std::vector<CandidateRecord>& candidates,
                                                   const ScheduleLimits& limits) {
  std::map<std::string, SchedulePlan> out;
  for (const CandidateRecord& c : candidates) {
    if (out.count(c.schedule)) continue;
    ScheduleParseResult parsed = parseSchedule(c.schedule);
    if (parsed.ok()) out.emplace(c.schedule, planSchedule(bound, *parsed.schedule, limits));
  }
  return out;
}

namespace {

std::string num(double v) {  // 4 significant digits, no exponent for large values
  if (!std::isfinite(v)) return "-";
  if (std::abs(v) >= 1e4) return fmt::format("{:.0f}", v);
  return fmt::format("{:.4g}", v);
}

std::string msText(double ms) { return num(ms) + " ms"; }

// The completion time of every candidate, in seconds since the search started; nullopt when
// neither explicit times nor record timestamps are known (the charts then use the index).
std::optional<std::vector<double>> completionTimes(const ReportData& d) {
  if (d.completedSeconds.size() == d.candidates.size() && !d.candidates.empty()) return d.completedSeconds;
  double first = std::numeric_limits<double>::infinity();
  for (const CandidateRecord& c : d.candidates) {
    if (c.recordedAt <= 0) return std::nullopt;
    first = std::min(first, c.recordedAt);
  }
  if (d.candidates.empty()) return std::nullopt;
  std::vector<double> t;
  for (const CandidateRecord& c : d.candidates) t.push_back(c.recordedAt - first);
  return t;
}

// ----------------------------------------------------------------------------------------------
// Charts

struct Box {
  double left, top, width, height;
  double right() const { return left + width; }
  double bottom() const { return top + height; }
};

// Maps [lo, hi] of the data onto [from, to] pixels, linearly or logarithmically.
struct Scale {
  double lo = 0, hi = 1, from = 0, to = 1;
  bool log = false;
  double operator()(double v) const {
    double t = log ? (std::log(std::max(v, lo)) - std::log(lo)) / (std::log(hi) - std::log(lo)) : (v - lo) / (hi - lo);
    return from + t * (to - from);
  }
};

// A scale for values in [lo, hi]: logarithmic when they span more than 20x, with some margin.
Scale makeScale(double lo, double hi, double from, double to, bool allowLog, bool fromZero = false) {
  Scale s;
  s.from = from;
  s.to = to;
  s.log = allowLog && lo > 0 && hi / lo > 20;
  if (s.log) {
    double margin = std::pow(hi / lo, 0.05);
    s.lo = lo / margin;
    s.hi = hi * margin;
  } else {
    if (hi <= lo) {
      double pad = lo != 0 ? std::abs(lo) * 0.5 : 1;
      lo -= pad;
      hi += pad;
    }
    double margin = (hi - lo) * 0.05;
    s.lo = fromZero ? std::min(0.0, lo) : lo - margin;
    s.hi = hi + margin;
  }
  return s;
}

std::vector<double> ticks(const Scale& s) {
  std::vector<double> out;
  if (s.log) {
    for (int e = static_cast<int>(std::floor(std::log10(s.lo))); e <= static_cast<int>(std::ceil(std::log10(s.hi))); ++e)
      for (double m : {1.0, 2.0, 5.0}) {
        double v = m * std::pow(10.0, e);
        if (v >= s.lo && v <= s.hi) out.push_back(v);
      }
    if (out.size() > 12) {  // many decades: keep the powers of ten
      std::vector<double> decades;
      for (double v : out)
        if (std::abs(std::log10(v) - std::round(std::log10(v))) < 1e-9) decades.push_back(v);
      out = decades;
    }
    return out;
  }
  double raw = (s.hi - s.lo) / 6;
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  for (double v = std::ceil(s.lo / step) * step; v <= s.hi + step * 1e-9; v += step)
    out.push_back(std::abs(v) < step * 1e-9 ? 0 : v);
  return out;
}

// Gridlines, tick labels and axis titles of a plot area.
std::string axes(const Box& b, const Scale& x, const Scale& y, const std::string& xTitle, const std::string& yTitle) {
  std::string s;
  s += fmt::format(R"(<rect class="plot" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}"/>)", b.left, b.top,
                   b.width, b.height);
  for (double v : ticks(y)) {
    double py = y(v);
    s += fmt::format(R"(<line class="grid" x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}"/>)", b.left, py, b.right(), py);
    s += fmt::format(R"(<text class="tick" x="{:.1f}" y="{:.1f}" text-anchor="end">{}</text>)", b.left - 6, py + 4,
                     htmlEscape(fmt::format("{:g}", v)));
  }
  for (double v : ticks(x)) {
    double px = x(v);
    s += fmt::format(R"(<line class="grid" x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}"/>)", px, b.top, px, b.bottom());
    s += fmt::format(R"(<text class="tick" x="{:.1f}" y="{:.1f}" text-anchor="middle">{}</text>)", px, b.bottom() + 16,
                     htmlEscape(fmt::format("{:g}", v)));
  }
  s += fmt::format(R"(<text class="axis" x="{:.1f}" y="{:.1f}" text-anchor="middle">{}</text>)", b.left + b.width / 2,
                   b.bottom() + 36, htmlEscape(xTitle));
  s += fmt::format(R"svg(<text class="axis" transform="translate({:.1f},{:.1f}) rotate(-90)" text-anchor="middle">{}</text>)svg",
                   b.left - 52, b.top + b.height / 2, htmlEscape(yTitle + (y.log ? " (log scale)" : "")));
  return s;
}

std::string svgOpen(double width, double height, const std::string& label) {
  return fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {0:g} {1:g}" width="{0:g}" height="{1:g}" )"
                     R"(role="img" aria-label="{2}">)",
                     width, height, htmlEscape(label));
}

std::string cross(double x, double y, double r, const std::string& cls, const std::string& title) {
  return fmt::format(R"(<path class="{}" d="M{:.1f} {:.1f}L{:.1f} {:.1f}M{:.1f} {:.1f}L{:.1f} {:.1f}"><title>{}</title></path>)",
                     cls, x - r, y - r, x + r, y + r, x - r, y + r, x + r, y - r, htmlEscape(title));
}

std::string emptyChart(const std::string& message) {
  return svgOpen(870, 60, message) +
         fmt::format(R"(<text class="axis" x="20" y="35">{}</text></svg>)", htmlEscape(message));
}

bool sameRecord(const std::optional<CandidateRecord>& a, const CandidateRecord& b) {
  return a && a->schedule == b.schedule && a->status == b.status && a->medianMs == b.medianMs;
}

// The time of every candidate in completion order; failures in a band above the plot.
std::string scatterChart(const ReportData& d, const std::optional<CandidateRecord>& best) {
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (const CandidateRecord& c : d.candidates)
    if (c.status == CandidateStatus::Verified && c.medianMs > 0) {
      lo = std::min(lo, c.medianMs);
      hi = std::max(hi, c.medianMs);
    }
  if (d.candidates.empty()) return emptyChart("No candidates.");
  bool anyVerified = hi > 0;
  if (!anyVerified) lo = hi = 1;

  const double width = 870, height = 372;
  Box b{80, 46, 770, 250};
  Scale x = makeScale(1, static_cast<double>(d.candidates.size()), b.left, b.right(), false);
  Scale y = makeScale(lo, hi, b.bottom(), b.top, true);
  double failY = b.top - 20;
  double r = d.candidates.size() > 2000 ? 1.6 : 2.6;

  std::string s = svgOpen(width, height, "time of every candidate in completion order");
  s += axes(b, x, y, "candidate (completion order)", "median time, ms");
  s += fmt::format(R"(<text class="tick" x="{:.1f}" y="{:.1f}" text-anchor="end">failed</text>)", b.left - 6, failY + 4);
  s += fmt::format(R"(<line class="band" x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}"/>)", b.left, failY, b.right(), failY);
  for (size_t i = 0; i < d.candidates.size(); ++i) {
    const CandidateRecord& c = d.candidates[i];
    double px = x(static_cast<double>(i + 1));
    if (c.status != CandidateStatus::Verified) {
      s += cross(px, failY, r + 0.6, "fail", fmt::format("#{} {}: {}", i + 1, statusName(c.status), c.schedule));
      continue;
    }
    std::string title = fmt::format("#{} {}: {}", i + 1, msText(c.medianMs), c.schedule);
    const char* cls = sameRecord(best, c) ? "best" : sameRecord(d.defaultSchedule, c) ? "default" : "ok";
    double rr = std::string(cls) == "ok" ? r : r + 2.5;
    s += fmt::format(R"(<circle class="{}" cx="{:.1f}" cy="{:.1f}" r="{:.1f}"><title>{}</title></circle>)", cls, px,
                     y(c.medianMs), rr, htmlEscape(title));
  }
  // Legend.
  double ly = height - 10;
  s += fmt::format(R"(<circle class="ok" cx="90" cy="{0:.1f}" r="3"/><text class="tick" x="98" y="{1:.1f}">verified</text>)",
                   ly - 4, ly);
  s += fmt::format(R"(<circle class="best" cx="180" cy="{0:.1f}" r="5"/><text class="tick" x="190" y="{1:.1f}">best</text>)",
                   ly - 4, ly);
  s += fmt::format(
      R"(<circle class="default" cx="250" cy="{0:.1f}" r="5"/><text class="tick" x="260" y="{1:.1f}">default schedule</text>)",
      ly - 4, ly);
  s += cross(390, ly - 4, 3.5, "fail", "failed");
  s += fmt::format(R"(<text class="tick" x="398" y="{:.1f}">failed (compile, launch, fault, hang, wrong result)</text>)", ly);
  if (!anyVerified)
    s += fmt::format(R"(<text class="axis" x="{:.1f}" y="{:.1f}" text-anchor="middle">no verified candidate</text>)",
                     b.left + b.width / 2, b.top + b.height / 2);
  return s + "</svg>";
}

// The best verified time so far against the search's wall time, as a step curve.
std::string bestCurveChart(const ReportData& d) {
  std::vector<std::pair<double, double>> points = d.bestOverTime;
  std::optional<std::vector<double>> times = completionTimes(d);
  std::string xTitle = times || !d.bestOverTime.empty() ? "search time, s" : "candidate (completion order)";
  if (points.empty()) {
    double best = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < d.candidates.size(); ++i) {
      const CandidateRecord& c = d.candidates[i];
      if (c.status != CandidateStatus::Verified || c.medianMs <= 0 || c.medianMs >= best) continue;
      best = c.medianMs;
      points.emplace_back(times ? (*times)[i] : static_cast<double>(i + 1), best);
    }
  }
  if (points.empty()) return emptyChart("No verified candidate: no best-so-far curve.");

  double tEnd = points.back().first;
  if (times && !times->empty()) tEnd = std::max(tEnd, *std::max_element(times->begin(), times->end()));
  if (!d.bestOverTime.empty() || times) tEnd = std::max(tEnd, d.wallSeconds);
  if (!times && d.bestOverTime.empty()) tEnd = std::max(tEnd, static_cast<double>(d.candidates.size()));
  double lo = points.front().second, hi = points.front().second;
  for (auto& p : points) {
    lo = std::min(lo, p.second);
    hi = std::max(hi, p.second);
  }
  const double width = 870, height = 320;
  Box b{80, 20, 770, 250};
  Scale x = makeScale(0, std::max(tEnd, points.front().first), b.left, b.right(), false, true);
  Scale y = makeScale(lo, hi, b.bottom(), b.top, true);
  std::string s = svgOpen(width, height, "best time so far over the search");
  s += axes(b, x, y, xTitle, "best median time, ms");
  std::string path = fmt::format("M{:.1f} {:.1f}", x(points[0].first), y(points[0].second));
  for (size_t i = 1; i < points.size(); ++i)
    path += fmt::format("H{:.1f}V{:.1f}", x(points[i].first), y(points[i].second));
  path += fmt::format("H{:.1f}", x(tEnd));
  s += fmt::format(R"(<path class="curve" d="{}"/>)", path);
  for (auto& [t, ms] : points)
    s += fmt::format(R"(<circle class="best" cx="{:.1f}" cy="{:.1f}" r="3"><title>{}</title></circle>)", x(t), y(ms),
                     htmlEscape(fmt::format("{} at {}", msText(ms), num(t))));
  return s + "</svg>";
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct Group {
  std::string value;
  int total = 0;
  std::vector<double> times;  // verified medians
};

// One bar chart per schedule choice that varies: best (dark) and median (light) verified time of
// the candidates making each choice.
std::string breakdownSection(const ReportData& d) {
  std::vector<std::string> order;  // choices in scheduleChoices order
  std::map<std::string, std::map<std::string, Group>> byChoice;
  static const SchedulePlan noPlan{{}, {"none"}, {}};
  for (const CandidateRecord& c : d.candidates) {
    auto plan = d.plans.find(c.schedule);
    for (auto& [choice, value] : scheduleChoices(plan == d.plans.end() ? noPlan : plan->second)) {
      if (!byChoice.count(choice)) order.push_back(choice);
      Group& g = byChoice[choice][value];
      g.value = value;
      ++g.total;
      if (c.status == CandidateStatus::Verified && c.medianMs > 0) g.times.push_back(c.medianMs);
    }
  }
  if (order.empty()) return "<p>No candidates.</p>\n";

  std::string s, constant;
  for (const std::string& choice : order) {
    const auto& groups = byChoice[choice];
    if (groups.size() < 2) {
      constant += fmt::format("{}<b>{}</b> {}", constant.empty() ? "" : "; ", htmlEscape(choice),
                              htmlEscape(groups.begin()->first));
      continue;
    }
    std::vector<Group> rows;
    for (auto& [value, g] : groups) rows.push_back(g);
    std::sort(rows.begin(), rows.end(), [](const Group& a, const Group& b) {
      if (a.times.empty() != b.times.empty()) return b.times.empty();
      if (a.times.empty()) return a.value < b.value;
      return *std::min_element(a.times.begin(), a.times.end()) < *std::min_element(b.times.begin(), b.times.end());
    });
    const size_t kMaxRows = 24;
    size_t hidden = rows.size() > kMaxRows ? rows.size() - kMaxRows : 0;
    rows.resize(std::min(rows.size(), kMaxRows));
    double maxMedian = 0;
    for (const Group& g : rows)
      if (!g.times.empty()) maxMedian = std::max(maxMedian, median(g.times));
    if (maxMedian <= 0) maxMedian = 1;

    const double rowH = 22, labelW = 250, barW = 340;
    double height = 16 + rows.size() * rowH + 8;
    s += fmt::format("<h3>{}</h3>\n", htmlEscape(choice));
    s += svgOpen(870, height, "time by " + choice);
    for (size_t i = 0; i < rows.size(); ++i) {
      const Group& g = rows[i];
      double y = 10 + i * rowH;
      s += fmt::format(R"(<text class="tick" x="{:.1f}" y="{:.1f}" text-anchor="end">{}</text>)", labelW - 8, y + 14,
                       htmlEscape(g.value));
      if (g.times.empty()) {
        s += fmt::format(R"(<text class="tick" x="{:.1f}" y="{:.1f}">no verified candidate ({} failed)</text>)", labelW,
                         y + 14, g.total);
        continue;
      }
      double best = *std::min_element(g.times.begin(), g.times.end());
      double med = median(g.times);
      std::string title = fmt::format("{} = {}: best {}, median {}, {} verified of {}", choice, g.value, msText(best),
                                      msText(med), g.times.size(), g.total);
      s += fmt::format(R"(<rect class="median" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}"><title>{}</title></rect>)",
                       labelW, y + 2, barW * med / maxMedian, rowH - 6, htmlEscape(title));
      s += fmt::format(R"(<rect class="bestbar" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}"><title>{}</title></rect>)",
                       labelW, y + 6, barW * best / maxMedian, rowH - 14, htmlEscape(title));
      s += fmt::format(R"(<text class="tick" x="{:.1f}" y="{:.1f}">best {} · median {} · {}/{} verified</text>)",
                       labelW + barW * std::min(1.0, med / maxMedian) + 8, y + 14, htmlEscape(msText(best)),
                       htmlEscape(msText(med)), g.times.size(), g.total);
    }
    s += "</svg>\n";
    if (hidden) s += fmt::format("<p class=\"note\">{} more values not shown (slowest).</p>\n", hidden);
  }
  if (!constant.empty()) s += fmt::format("<p class=\"note\">The same for every candidate: {}.</p>\n", constant);
  return s;
}

std::string firstLine(const std::string& text, size_t maxChars) {
  std::string line = text.substr(0, text.find('\n'));
  if (line.size() > maxChars) line = line.substr(0, maxChars) + "…";
  return line;
}

std::string row(const std::string& name, const std::string& valueHtml) {
  return fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", htmlEscape(name), valueHtml);
}

const char* kStyle = R"css(
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1d2330; margin: 24px auto; max-width: 1100px; padding: 0 16px; }
h1 { font-size: 22px; margin-bottom: 4px; }
h2 { font-size: 17px; margin-top: 32px; border-bottom: 1px solid #d8dce4; padding-bottom: 4px; }
h3 { font-size: 14px; margin: 18px 0 4px; }
table { border-collapse: collapse; margin: 8px 0; }
th, td { padding: 3px 10px; border-bottom: 1px solid #eceef2; text-align: left; vertical-align: top; }
table.summary th { color: #555d6e; font-weight: 600; white-space: nowrap; }
table.data td.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.data th { background: #f3f5f8; }
code { font: 12.5px ui-monospace, SFMono-Regular, Menlo, monospace; }
pre { font: 12px ui-monospace, SFMono-Regular, Menlo, monospace; background: #f6f7f9; padding: 6px; max-height: 240px; overflow: auto; }
.note { color: #555d6e; }
svg { display: block; margin: 6px 0; }
svg .plot { fill: #fbfcfd; stroke: #c9ced8; }
svg .grid { stroke: #e6e9ef; }
svg .band { stroke: #f1c9c9; stroke-dasharray: 3 3; }
svg .tick { font: 11px system-ui, sans-serif; fill: #555d6e; }
svg .axis { font: 12px system-ui, sans-serif; fill: #1d2330; }
svg .ok { fill: #3b6fd8; fill-opacity: 0.65; }
svg .best { fill: #17a34a; stroke: #0b5d29; }
svg .default { fill: #f59e0b; stroke: #9a5b00; }
svg .fail { stroke: #d62828; stroke-width: 1.4; fill: none; }
svg .curve { fill: none; stroke: #17a34a; stroke-width: 2; }
svg .median { fill: #b9cdf3; }
svg .bestbar { fill: #2451a8; }
)css";

}  // namespace

std::string renderSearchReport(const ReportData& d) {
  // The best: as given, else the fastest verified candidate.
  std::optional<CandidateRecord> best = d.best;
  std::vector<const CandidateRecord*> verified;
  std::map<std::string, int> byStatus;
  for (const CandidateRecord& c : d.candidates) {
    ++byStatus[statusName(c.status)];
    if (c.status == CandidateStatus::Verified) verified.push_back(&c);
  }
  std::stable_sort(verified.begin(), verified.end(),
                   [](const CandidateRecord* a, const CandidateRecord* b) { return a->medianMs < b->medianMs; });
  if (!best && !verified.empty()) best = *verified.front();

  std::string title = fmt::format("rtcg search: {}{}", d.kernelName, d.sizes.empty() ? "" : " (" + d.sizes + ")");
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  h += fmt::format("<title>{}</title>\n<style>{}</style>\n</head>\n<body>\n", htmlEscape(title), kStyle);
  h += fmt::format("<h1>{}</h1>\n", htmlEscape(title));

  // Summary.
  h += "<h2>Summary</h2>\n<table class=\"summary\">\n";
  h += row("kernel", fmt::format("{} <code>{}</code>", htmlEscape(d.kernelName), htmlEscape(d.kernelHash)));
  h += row("sizes", htmlEscape(d.sizes.empty() ? "-" : d.sizes));
  h += row("device", htmlEscape(d.arch.empty() ? d.device : fmt::format("{} ({})", d.device, d.arch)));
  if (!d.settings.empty()) h += row("settings", htmlEscape(d.settings));
  h += row("candidates",
           htmlEscape(fmt::format("{} enumerated, {} pruned, {} generated, {} compiled, {} failed to compile, "
                                  "{} verified, {} failed",
                                  d.enumerated, d.pruned, d.generated, d.compiled, d.compileFailed, d.verified, d.failed)));
  std::string statuses;
  for (auto& [name, count] : byStatus) statuses += fmt::format("{}{} {}", statuses.empty() ? "" : ", ", name, count);
  h += row("outcomes", htmlEscape(statuses.empty() ? "none" : statuses));
  h += row("wall time", htmlEscape(fmt::format("{} s", num(d.wallSeconds))));
  h += row("compile throughput",
           htmlEscape(fmt::format("{} candidates/s ({} s compiling)", num(d.compilesPerSecond), num(d.compileSeconds))));
  if (best) {
    h += row("best schedule", fmt::format("<code>{}</code>", htmlEscape(best->schedule)));
    std::string rates = fmt::format("{}, {} GF/s, {} GB/s", msText(best->medianMs), num(best->gflops), num(best->gbytes));
    if (auto f = rooflineFraction(*best, d.peakGflops, d.peakGbytesPerSecond))
      rates += fmt::format(", {:.1f}% of roofline", *f * 100);
    h += row("best time", htmlEscape(rates));
  } else {
    h += row("best schedule", "no verified candidate");
  }
  if (d.defaultSchedule) {
    std::string v = d.defaultSchedule->status == CandidateStatus::Verified
                        ? msText(d.defaultSchedule->medianMs)
                        : fmt::format("{} ({})", statusName(d.defaultSchedule->status),
                                      firstLine(d.defaultSchedule->reason, 200));
    if (best && d.defaultSchedule->status == CandidateStatus::Verified && best->medianMs > 0)
      v += fmt::format("; best is {:.2f}x faster", d.defaultSchedule->medianMs / best->medianMs);
    h += row("default schedule", fmt::format("{} <code>{}</code>", htmlEscape(v), htmlEscape(d.defaultSchedule->schedule)));
  }
  h += "</table>\n";

  h += "<h2>Time of every candidate</h2>\n" + scatterChart(d, best) + "\n";
  h += "<h2>Best so far</h2>\n" + bestCurveChart(d) + "\n";
  h += "<h2>By schedule choice</h2>\n<p class=\"note\">Dark: best verified time; light: median verified time of the "
       "candidates making that choice (shorter is faster).</p>\n";
  h += breakdownSection(d);

  // Top candidates.
  size_t top = std::min(verified.size(), static_cast<size_t>(std::max(0, d.topCount)));
  h += fmt::format("<h2>Top {} of {} verified</h2>\n", top, verified.size());
  if (top > 0) {
    h += "<table class=\"data\">\n<tr><th>#</th><th>schedule</th><th>ms</th><th>GF/s</th><th>GB/s</th>"
         "<th>% roofline</th><th>registers</th><th>spill B</th><th>shared B</th><th>occupancy</th></tr>\n";
    for (size_t i = 0; i < top; ++i) {
      const CandidateRecord& c = *verified[i];
      auto f = rooflineFraction(c, d.peakGflops, d.peakGbytesPerSecond);
      h += fmt::format(
          "<tr><td class=\"n\">{}</td><td><code>{}</code></td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
          "<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
          "<td class=\"n\">{}</td><td class=\"n\">{}</td></tr>\n",
          i + 1, htmlEscape(c.schedule), num(c.medianMs), num(c.gflops), num(c.gbytes),
          f ? fmt::format("{:.1f}", *f * 100) : "-", c.registers, c.spillBytes, c.sharedBytes,
          fmt::format("{:.0f}%", c.occupancy * 100));
    }
    h += "</table>\n";
  }

  // Failures.
  std::vector<size_t> failures;
  for (size_t i = 0; i < d.candidates.size(); ++i)
    if (d.candidates[i].status != CandidateStatus::Verified) failures.push_back(i);
  h += fmt::format("<h2>Failed candidates ({})</h2>\n", failures.size());
  if (!failures.empty()) {
    const size_t kMaxFailures = 200;
    h += "<table class=\"data\">\n<tr><th>#</th><th>status</th><th>schedule</th><th>reason</th></tr>\n";
    for (size_t k = 0; k < std::min(failures.size(), kMaxFailures); ++k) {
      const CandidateRecord& c = d.candidates[failures[k]];
      std::string reason = htmlEscape(firstLine(c.reason, 300));
      if (c.reason.find('\n') != std::string::npos || c.reason.size() > 300)
        reason += fmt::format("<details><summary>full text</summary><pre>{}</pre></details>", htmlEscape(c.reason));
      h += fmt::format("<tr><td class=\"n\">{}</td><td>{}</td><td><code>{}</code></td><td>{}</td></tr>\n",
                       failures[k] + 1, statusName(c.status), htmlEscape(c.schedule), reason);
    }
    h += "</table>\n";
    if (failures.size() > kMaxFailures)
      h += fmt::format("<p class=\"note\">{} more not shown.</p>\n", failures.size() - kMaxFailures);
  }

  if (!d.prunedReasons.empty()) {
    h += fmt::format("<h2>Pruned by the static model ({})</h2>\n", d.pruned);
    h += "<table class=\"data\">\n<tr><th>candidates</th><th>reason</th></tr>\n";
    for (auto& [reason, count] : d.prunedReasons)
      h += fmt::format("<tr><td class=\"n\">{}</td><td>{}</td></tr>\n", count, htmlEscape(reason));
    h += "</table>\n";
  }

  h += "<p class=\"note\">Generated by rtcg.</p>\n</body>\n</html>\n";
  return h;
}

}  // namespace rtcg
