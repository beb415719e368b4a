#include "torchprobe/report/svg_util.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "torchprobe/report/table.h"

namespace torchprobe::report {

double text_width(const std::string& text, double font_size) {
  // Advance widths in em, DejaVu Sans rounded up per class; anything else (CJK, symbols) counts as 1 em.
  double em = 0.0;
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if ((c & 0xC0) == 0x80) continue;  // a UTF-8 continuation byte: counted with its lead byte
    if (c >= 0x80) {
      em += 1.0;
    } else if (std::strchr("il.,:;|!'`", c) != nullptr) {
      em += 0.33;
    } else if (std::strchr(" ()[]{}/\\-ftjr", c) != nullptr) {
      em += 0.45;
    } else if (std::strchr("mwMW@%", c) != nullptr) {
      em += 1.0;
    } else if (c >= 'A' && c <= 'Z') {
      em += 0.80;
    } else {
      em += 0.66;  // lower-case letters, digits, _, +, =, #
    }
  }
  return em * font_size;
}

std::string shorten(const std::string& text, size_t max_chars) {
  size_t chars = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) continue;
    if (++chars > max_chars) return text.substr(0, i) + "...";
  }
  return text;
}

std::vector<std::string> wrap_text(const std::string& text, double font_size, double max_width) {
  std::vector<std::string> lines;
  std::string line;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    const std::string longer = line.empty() ? word : line + " " + word;
    if (!line.empty() && text_width(longer, font_size) > max_width) {
      lines.push_back(line);
      line = word;
    } else {
      line = longer;
    }
    start = end + 1;
  }
  if (!line.empty() || lines.empty()) lines.push_back(line);
  return lines;
}

std::vector<double> linear_ticks(double lo, double hi, int target) {
  std::vector<double> ticks;
  if (!std::isfinite(lo)) lo = 0.0;
  if (!(hi > lo) || !std::isfinite(hi)) hi = lo + 1.0;
  target = std::max(target, 1);
  const double raw = (hi - lo) / target, mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double step = raw / mag < 2 ? 2 * mag : raw / mag < 5 ? 5 * mag : 10 * mag;
  // Near a double's limits the step can overflow, underflow to 0 (a subnormal span) or not advance t (a span
  // below lo's precision): such ranges get the ticks the bounded loop reaches, at least `lo`, never a hang.
  if (std::isfinite(step) && step > 0.0) {
    const long long most = 4LL * target + 4;  // a 1-2-5 step gives at most target + 2
    double t = std::ceil(lo / step - 1e-9) * step;
    for (long long i = 0; i < most && std::isfinite(t) && t <= hi + step * 1e-6; ++i, t += step) {
      if (!ticks.empty() && !(t > ticks.back())) break;  // the step is below t's precision
      ticks.push_back(t == 0.0 ? 0.0 : t);  // no "-0"
    }
  }
  if (ticks.empty()) ticks.push_back(lo);
  return ticks;
}

std::vector<double> log_ticks(double lo, double hi) {
  std::vector<double> ticks;
  if (lo > 0.0 && hi >= lo && std::isfinite(hi)) {
    const double first = std::pow(10.0, std::floor(std::log10(lo)));
    const double last = std::pow(10.0, std::ceil(std::log10(hi)));
    // 10^floor underflows to 0 below 1e-323 and 10^ceil overflows above 1e308: t must stay finite and positive.
    constexpr size_t kMostDecades = 700;  // 1e-324 to 1e308, with room
    for (double t = first; t > 0.0 && std::isfinite(t) && t <= last * 1.001 && ticks.size() < kMostDecades; t *= 10.0) {
      ticks.push_back(t);
    }
  }
  if (ticks.empty()) ticks.push_back(lo > 0.0 && std::isfinite(lo) ? lo : 1.0);
  return ticks;
}

const char* palette(size_t index) {
  static const char* const kPalette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759",
                                         "#76b7b2", "#edc948", "#b07aa1", "#9c755f"};
  return kPalette[index % 8];
}

std::string tick_label(double v, const std::string& suffix) {
  if (v == std::floor(v)) return (std::fabs(v) >= 1000.0 ? format_rate(v) : fmt::format("{:.0f}", v)) + suffix;
  return fmt::format("{:g}", v) + suffix;
}

std::string svg_document(double width, double height, const std::string& body) {
  return fmt::format(
      R"(<?xml version="1.0" encoding="UTF-8"?>)"
      "\n"
      R"(<svg xmlns="http://www.w3.org/2000/svg" width="{0:.0f}" height="{1:.0f}" viewBox="0 0 {0:.0f} {1:.0f}" font-family="sans-serif">)"
      "\n"
      R"(<rect width="100%" height="100%" fill="white"/>)"
      "\n{2}</svg>\n",
      width, height, body);
}

std::string title_text(const std::string& title) {
  return fmt::format(R"(<text x="{}" y="24" font-size="{}" font-weight="bold">{}</text>)"
                     "\n",
                     kChartPad, kTitleFont, xml_escape(title));
}

}  // namespace torchprobe::report
