#pragma once
// Helpers shared by the report's test files (report_*_test.cpp): the committed fixture, finding a result, checks
// of the SVG charts' XML. Needs TORCHPROBE_FIXTURE_DIR (tests/fixtures/report).
#include <gtest/gtest.h>

#include <cctype>
#include <iomanip>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "torchprobe/report/printers.h"
#include "torchprobe/report/results.h"

namespace report = torchprobe::report;

inline const std::string kFixtures = TORCHPROBE_FIXTURE_DIR;

inline report::ResultSet fixture() { return report::load_results({kFixtures + "/results.json"}); }

inline const report::Result& find(const report::ResultSet& set, const std::string& name) {
  for (const auto& r : set.results) {
    if (r.name == name) return r;
  }
  throw std::runtime_error("no result " + name);
}

// Minimal XML well-formedness: balanced, properly nested tags, quoted attributes, escaped text.
inline bool well_formed_xml(const std::string& xml, std::string& why) {
  std::vector<std::string> open;
  size_t i = 0;
  bool root_seen = false;
  while (i < xml.size()) {
    if (xml[i] != '<') {
      if (xml[i] == '&') {
        const auto semi = xml.find(';', i);
        static const std::regex entity("&(amp|lt|gt|quot|apos|#[0-9]+);");
        if (semi == std::string::npos || !std::regex_match(xml.substr(i, semi - i + 1), entity)) {
          why = "bare & at " + std::to_string(i);
          return false;
        }
      }
      if (open.empty() && root_seen && !std::isspace(static_cast<unsigned char>(xml[i]))) {
        why = "text after the root element";
        return false;
      }
      ++i;
      continue;
    }
    const auto close = xml.find('>', i);
    if (close == std::string::npos) {
      why = "unterminated tag";
      return false;
    }
    std::string tag = xml.substr(i + 1, close - i - 1);
    i = close + 1;
    if (tag.front() == '?') continue;  // XML declaration
    if (tag.front() == '/') {
      if (open.empty() || open.back() != tag.substr(1)) {
        why = "mismatched </" + tag.substr(1) + ">";
        return false;
      }
      open.pop_back();
      continue;
    }
    const bool self_closing = tag.back() == '/';
    if (self_closing) tag.pop_back();
    static const std::regex element(R"(([A-Za-z_][\w:.-]*)(\s+[\w:.-]+="[^"<&]*(&(amp|lt|gt|quot);[^"<&]*)*")*\s*)");
    std::smatch m;
    if (!std::regex_match(tag, m, element)) {
      why = "malformed tag <" + tag + ">";
      return false;
    }
    if (open.empty() && root_seen) {
      why = "second root element";
      return false;
    }
    root_seen = true;
    if (!self_closing) open.push_back(m[1]);
  }
  if (!open.empty()) why = "unclosed <" + open.back() + ">";
  return open.empty() && root_seen;
}

inline size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// A double as JSON that reads back as the same double.
inline std::string exact(double value) {
  std::ostringstream out;
  out << std::setprecision(17) << value;
  return out.str();
}

// The two training charts of a report, in order, and every chart well-formed XML.
inline void expect_the_two_charts(const std::vector<report::Chart>& charts) {
  std::vector<std::string> training;
  for (const auto& chart : charts) {
    if (chart.section == "training") training.push_back(chart.file);
    std::string why;
    EXPECT_TRUE(well_formed_xml(chart.svg, why)) << chart.file << ": " << why;
  }
  EXPECT_EQ(training, (std::vector<std::string>{"images_per_s.svg", "speedup_vs_cpu.svg"}));
}
