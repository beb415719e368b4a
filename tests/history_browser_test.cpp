// The dashboard in a real browser: Debian's chromium, headless, loads index.html from disk with no network.
// The page checks itself (#selftest=...: charts, the filter, every <text> inside its SVG's viewBox, script
// errors) and writes its findings into the DOM, which --dump-dom prints; the screenshot is decoded here.
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "history_docs.h"
#include "test_util.h"
#include "torchprobe/history/analysis.h"
#include "torchprobe/history/dashboard.h"
#include "torchprobe/history/store.h"
#include "torchprobe/io.h"
#include "torchprobe/report/compare.h"
#include "torchprobe/report/memory_chart.h"
#include "torchprobe/report/printers.h"
#include "torchprobe/report/results.h"
#include "torchprobe/subprocess.h"

namespace history = torchprobe::history;
namespace docs = torchprobe::history_docs;
namespace report = torchprobe::report;
using nlohmann::json;

namespace {

const std::string kChromium = TORCHPROBE_CHROMIUM;  // found when the build was configured

void require_chromium() {
  if (!std::filesystem::exists(kChromium)) {
    GTEST_FAIL() << "chromium was not found when this build was configured (" << kChromium
                 << "): install it (apt-get install chromium; scripts/setup.sh does) and re-run cmake";
  }
}

struct Page {
  int status = -1;
  std::string dom;
  std::vector<std::string> console;  // "CONSOLE" lines chromium logs: console.* calls, uncaught errors, CSP violations
};

// Loads `url` in headless chromium and prints its DOM after the page's scripts ran (or does what `extra`
// says, e.g. --screenshot=FILE); a hung browser is stopped after 90 s (exit status 124).
Page open_page(const std::string& url, const std::vector<std::string>& extra = {"--dump-dom"}) {
  TempDir profile("torchprobe-chromium");
  std::vector<std::string> argv = {"/usr/bin/timeout", "90", kChromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                   "--user-data-dir=" + profile.path().string(), "--disable-background-networking",
                                   "--disable-component-update", "--disable-sync", "--host-resolver-rules=MAP * ~NOTFOUND",
                                   "--enable-logging=stderr", "--v=0"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.push_back(url);
  Page page;
  torchprobe::subprocess::Options options;
  options.on_stdout_line = [&](const std::string& line) { page.dom += line + "\n"; };
  options.on_stderr_line = [&](const std::string& line) {
    if (line.find(":CONSOLE") != std::string::npos) page.console.push_back(line);
  };
  page.status = torchprobe::subprocess::run(argv, options);
  return page;
}

std::string unescape_html(std::string text) {
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{{"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&amp;", "&"}}) {
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) text.replace(at, from.size(), to);
  }
  return text;
}

json selftest_of(const Page& page) {
  const std::string open = "<pre id=\"selftest\" hidden=\"\">";
  const size_t start = page.dom.find(open);
  const size_t end = page.dom.find("</pre>", start);
  if (start == std::string::npos || end == std::string::npos) return nullptr;
  const std::string text = unescape_html(page.dom.substr(start + open.size(), end - start - open.size()));
  return text.empty() ? json(nullptr) : json::parse(text);
}

// An 8-bit RGB or RGBA, non-interlaced PNG (what chromium writes) as RGB triples.
struct Image {
  std::uint32_t width = 0, height = 0;
  std::vector<std::uint8_t> rgb;
};

std::uint32_t be32(const std::string& s, size_t at) {
  return static_cast<std::uint32_t>(static_cast<unsigned char>(s[at])) << 24 | static_cast<std::uint32_t>(static_cast<unsigned char>(s[at + 1])) << 16 |
         static_cast<std::uint32_t>(static_cast<unsigned char>(s[at + 2])) << 8 | static_cast<unsigned char>(s[at + 3]);
}

Image decode_png(const std::string& file) {
  if (file.size() < 8 || file.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) throw std::runtime_error("not a PNG");
  Image image;
  int channels = 0;
  std::string idat;
  for (size_t at = 8; at + 8 <= file.size();) {
    const std::uint32_t length = be32(file, at);
    const std::string type = file.substr(at + 4, 4);
    if (type == "IHDR") {
      image.width = be32(file, at + 8);
      image.height = be32(file, at + 12);
      const int depth = file[at + 16], colour = file[at + 17], interlace = file[at + 20];
      if (depth != 8 || (colour != 2 && colour != 6) || interlace != 0) throw std::runtime_error("unsupported PNG format");
      channels = colour == 6 ? 4 : 3;
    } else if (type == "IDAT") {
      idat += file.substr(at + 8, length);
    }
    at += 12 + length;
  }
  const size_t stride = static_cast<size_t>(image.width) * static_cast<size_t>(channels);
  std::vector<std::uint8_t> raw((stride + 1) * image.height);
  uLongf raw_size = raw.size();
  if (uncompress(raw.data(), &raw_size, reinterpret_cast<const Bytef*>(idat.data()), idat.size()) != Z_OK || raw_size != raw.size()) {
    throw std::runtime_error("PNG data does not inflate");
  }
  std::vector<std::uint8_t> previous(stride, 0), line(stride);
  for (std::uint32_t y = 0; y < image.height; ++y) {
    const std::uint8_t filter = raw[y * (stride + 1)];
    const std::uint8_t* in = &raw[y * (stride + 1) + 1];
    for (size_t x = 0; x < stride; ++x) {
      const int a = x >= static_cast<size_t>(channels) ? line[x - static_cast<size_t>(channels)] : 0, b = previous[x];
      const int c = x >= static_cast<size_t>(channels) ? previous[x - static_cast<size_t>(channels)] : 0;
      int predicted = 0;
      switch (filter) {
        case 1: predicted = a; break;
        case 2: predicted = b; break;
        case 3: predicted = (a + b) / 2; break;
        case 4: {
          const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
          predicted = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
          break;
        }
        default: break;
      }
      line[x] = static_cast<std::uint8_t>(in[x] + predicted);
    }
    for (size_t x = 0; x < stride; x += static_cast<size_t>(channels)) image.rgb.insert(image.rgb.end(), &line[x], &line[x] + 3);
    previous = line;
  }
  return image;
}

// A store with three benchmarks on a CPU host (one slows down by 12% at run 20; long configuration labels)
// and a newest run on a GPU host, so the device table and both report charts appear.
class HistoryBrowser : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("torchprobe-dashboard");
    history::Store store(dir_->file("h.sqlite"), history::Store::Mode::kCreate);
    std::mt19937_64 rng(11);
    const std::string net = "train_step/net/cpu/batch:64/dtype:fp32/layout:nchw";
    const std::string resnet = "train_step/resnet18/cpu/batch:64/dtype:bf16/layout:cl";
    for (int i = 0; i < 30; ++i) {
      const double net_ms = i < 20 ? 4.0 : 4.48;
      const std::string doc = docs::document(
          "ci-cpu", docs::run_date(i),
          {{net, docs::samples(rng, net_ms, 0.01, 5), {{"images_per_s", 64000 / net_ms}, {"epoch_s", net_ms * 0.78}}},
           {resnet, docs::samples(rng, 590.0, 0.02, 3), {{"images_per_s", 108.0}, {"epoch_s", 460.0}}},
           {"op/matmul/cpu/n:1024/dtype:fp32", docs::samples(rng, 12.0, 0.01, 5), {}}});
      store.add_documents({{"run.json", doc}}, {fmt::format("{:07x}{}", 0xabc000 + i, "deadbeef"), "main", ""});
    }
    const std::string gpu = R"(, \"cuda\": {\"devices\": [{\"device\": \"cuda:0\", \"name\": \"Test GPU\"}]})";
    store.add_documents({{"gpu.json", docs::document("gpu-box", docs::run_date(40),
                                                     {{"train_step/net/cuda:0/batch:64/dtype:fp32/layout:nchw/cudnn:off/graph:off",
                                                       docs::samples(rng, 0.4, 0.02, 5), {{"images_per_s", 160000.0}, {"epoch_s", 0.35}}},
                                                      {net, docs::samples(rng, 4.1, 0.01, 5), {{"images_per_s", 15600.0}}}},
                                                     gpu)}},
                        {"ffff000deadbeef", "main", ""});
    reports_ = new std::vector<history::SeriesReport>(history::analyze(store.series({}), {}));
    history::DashboardOptions options;
    options.usd_per_hour = history::parse_prices("cuda:0@gpu-box=2.5,cpu@ci-cpu=0.1");
    torchprobe::io::write_text_file(dir_->file("site/index.html"), history::dashboard_html(*reports_, store.latest_runs({}), options));
  }
  static void TearDownTestSuite() {
    delete reports_;
    delete dir_;
  }
  static std::string url(const std::string& fragment) { return "file://" + dir_->file("site/index.html") + fragment; }

  static TempDir* dir_;
  static std::vector<history::SeriesReport>* reports_;
};
TempDir* HistoryBrowser::dir_ = nullptr;
std::vector<history::SeriesReport>* HistoryBrowser::reports_ = nullptr;

}  // namespace

TEST_F(HistoryBrowser, EveryChartRendersWithinItsBoundsAndTheFilterWorks) {
  require_chromium();
  size_t resnet = 0, changes = 0;
  for (const auto& r : *reports_) {
    resnet += r.series.name.find("resnet18") != std::string::npos ? 1 : 0;
    changes += r.changes.size();
  }
  ASSERT_EQ(reports_->size(), 5u);
  ASSERT_EQ(resnet, 1u);
  ASSERT_GE(changes, 1u);  // the 12% slowdown is drawn
  const Page page = open_page(url("#selftest=filter:RESNET18"));
  ASSERT_EQ(page.status, 0) << torchprobe::subprocess::describe_status(page.status);
  const json result = selftest_of(page);
  ASSERT_TRUE(result.is_object()) << "the page's self-check wrote nothing:\n" << page.dom.substr(0, 2000);
  EXPECT_EQ(result["charts_total"], reports_->size());
  EXPECT_EQ(result["charts_visible"], resnet) << "the filter box did not hide the other charts";
  EXPECT_TRUE(result["clipped"].empty()) << "text outside its chart: " << result["clipped"].dump(1);
  EXPECT_GE(result["texts_checked"].get<int>(), 40);
  EXPECT_TRUE(result["errors"].empty()) << result["errors"].dump();
  EXPECT_TRUE(page.console.empty()) << "console: " << page.console.front();
  // The quick report's charts (long configuration labels, a log axis) were among those checked.
  EXPECT_NE(page.dom.find("id=\"device-images_per_s\""), std::string::npos);
  EXPECT_NE(page.dom.find("id=\"device-speedup_vs_cpu\""), std::string::npos);
  EXPECT_NE(page.dom.find("resnet18 batch:64 dtype:bf16/layout:cl"), std::string::npos);
  EXPECT_NE(page.dom.find("images/s (higher is better, log scale)"), std::string::npos);
}

// The clip check is not vacuous: a text placed past the right edge is reported.
TEST_F(HistoryBrowser, TheClipCheckSeesTextPastTheEdge) {
  require_chromium();
  const json result = selftest_of(open_page(url("#selftest=filter:,clip-canary")));
  ASSERT_TRUE(result.is_object());
  ASSERT_EQ(result["clipped"].size(), 1u) << result.dump(1);
  EXPECT_EQ(result["clipped"][0]["text"], "canary text past the edge");
  EXPECT_EQ(result["charts_visible"], reports_->size());  // an empty filter shows every chart
}

TEST_F(HistoryBrowser, TheScreenshotShowsTheCharts) {
  require_chromium();
  const std::string shot = dir_->file("shot.png");
  const Page page = open_page(url(""), {"--screenshot=" + shot, "--window-size=1000,1400", "--hide-scrollbars"});
  ASSERT_EQ(page.status, 0);
  const Image image = decode_png(torchprobe::io::read_text_file(shot));
  EXPECT_EQ(image.width, 1000u);
  size_t ink = 0, chart_blue = 0;
  for (size_t i = 0; i + 2 < image.rgb.size(); i += 3) {
    const int r = image.rgb[i], g = image.rgb[i + 1], b = image.rgb[i + 2];
    ink += r < 200 || g < 200 || b < 200 ? 1 : 0;
    chart_blue += std::abs(r - 0x4e) < 24 && std::abs(g - 0x79) < 24 && std::abs(b - 0xa7) < 24 ? 1 : 0;  // bars, median lines
  }
  const double pixels = static_cast<double>(image.width) * image.height;
  EXPECT_GT(static_cast<double>(ink) / pixels, 0.01) << "the screenshot is (nearly) blank";
  EXPECT_GT(chart_blue, 500u) << "no chart colour in the screenshot";
}

// The console check is not vacuous either: a page that logs an error is caught.
TEST_F(HistoryBrowser, ConsoleErrorsAreSeen) {
  require_chromium();
  torchprobe::io::write_text_file(dir_->file("bad.html"), "<!DOCTYPE html><html><body><script>undefined_function();</script></body></html>");
  const Page page = open_page("file://" + dir_->file("bad.html"));
  ASSERT_FALSE(page.console.empty());
  EXPECT_NE(page.console.front().find("undefined_function"), std::string::npos) << page.console.front();
}

// ---- The report's pictures (issue 37) in the same browser: every chart the report, compare and diagnose memory
// write, inlined in one page whose script measures each text as rendered (rotated axis titles included).

namespace {

const std::string kReportFixtures = TORCHPROBE_REPORT_FIXTURE_DIR;
const std::string kCompareFixtures = TORCHPROBE_COMPARE_FIXTURE_DIR;

const char* const kChartCheck = R"(<script>
(function () {
  var out = {charts: 0, texts: 0, labels: 0, clipped: [], overlaps: [], empty: []};
  Array.prototype.forEach.call(document.querySelectorAll('svg'), function (svg) {
    out.charts++;
    var box = svg.getBoundingClientRect(), labels = [];
    if (box.width < 50 || box.height < 50) out.empty.push(svg.id);
    Array.prototype.forEach.call(svg.querySelectorAll('text'), function (t) {
      var b = t.getBoundingClientRect();
      out.texts++;
      if (b.left < box.left - 0.5 || b.top < box.top - 0.5 || b.right > box.right + 0.5 || b.bottom > box.bottom + 0.5) {
        out.clipped.push({chart: svg.id, text: t.textContent, left: b.left - box.left, right: b.right - box.left,
                          top: b.top - box.top, bottom: b.bottom - box.top, width: box.width, height: box.height});
      }
      if (t.getAttribute('class') === 'label') labels.push({text: t.textContent, b: b});
    });
    out.labels += labels.length;
    for (var i = 0; i < labels.length; i++) {
      for (var j = i + 1; j < labels.length; j++) {
        var a = labels[i].b, c = labels[j].b;
        if (a.left < c.right - 0.5 && c.left < a.right - 0.5 && a.top < c.bottom - 0.5 && c.top < a.bottom - 0.5) {
          out.overlaps.push({chart: svg.id, a: labels[i].text, b: labels[j].text});
        }
      }
    }
  });
  document.getElementById('selftest').textContent = JSON.stringify(out);
})();
</script>)";

// The chart without its XML declaration, with an id, for inlining in HTML.
std::string inline_svg(const std::string& id, const std::string& svg) {
  std::string body = svg.substr(svg.find("<svg"));
  return "<div>" + body.replace(0, 4, "<svg id=\"" + id + "\"") + "</div>\n";
}

}  // namespace

TEST(ReportChartsInABrowser, EveryTextStaysInsideItsChartAndNoPointLabelCoversAnother) {
  require_chromium();
  std::vector<std::pair<std::string, std::string>> charts;  // id, svg
  for (const std::string fixture : {"results.json", "trust.json", "dist_scaling.json"}) {
    for (const auto& chart : report::make_charts(report::load_results({kReportFixtures + "/" + fixture}))) {
      charts.emplace_back(fixture + "-" + chart.file, chart.svg);
    }
  }
  const report::CompareOptions options;
  const auto compared = report::compare_results(report::load_results({kCompareFixtures + "/baseline.json"}),
                                                report::load_results({kCompareFixtures + "/current.json"}), options);
  charts.emplace_back("compare", report::compare_chart(compared, options));
  report::MemoryChartInput memory;  // resnet18 on an H100 (reports/nvidia-h100), and the same on a CPU budget
  memory.model = "resnet18";
  memory.device = "cuda:0";
  memory.device_name = "NVIDIA H100 80GB HBM3";
  memory.gpu = true;
  memory.capacity_bytes = 85'045'870'592;
  for (std::int64_t b = 1; b <= 16384; b *= 2) memory.trials.push_back({b, true, 2'900'000'000 + 4'520'000 * b});
  memory.trials.push_back({32768, false, 0});
  memory.trials.push_back({17333, true, 2'900'000'000 + 4'520'000LL * 17333});
  memory.fit_intercept = 2.9e9, memory.fit_slope = 4.52e6, memory.fit_points = 16;
  memory.largest = 17333, memory.smallest_failing = 17679;
  charts.emplace_back("memory-gpu", report::memory_chart(memory));
  memory.gpu = false, memory.device = "cpu", memory.device_name = "AMD EPYC 9B14", memory.capacity_bytes = 2LL << 30;
  charts.emplace_back("memory-cpu", report::memory_chart(memory));

  TempDir dir("torchprobe-charts");
  std::string page = "<!DOCTYPE html><html><head><meta charset=\"utf-8\"></head><body>\n";
  for (const auto& [id, svg] : charts) page += inline_svg(id, svg);
  page += "<pre id=\"selftest\" hidden></pre>\n" + std::string(kChartCheck) + "</body></html>\n";
  torchprobe::io::write_text_file(dir.file("charts.html"), page);
  const Page loaded = open_page("file://" + dir.file("charts.html"));
  ASSERT_EQ(loaded.status, 0) << torchprobe::subprocess::describe_status(loaded.status);
  const json result = selftest_of(loaded);
  ASSERT_TRUE(result.is_object()) << "the page's check wrote nothing:\n" << loaded.dom.substr(0, 2000);
  std::vector<std::string> ids;
  for (const auto& chart : charts) ids.push_back(chart.first);
  for (const std::string expected : {"results.json-phases.svg", "results.json-roofline_cuda_0.svg",
                                     "trust.json-roofline_cpu.svg", "dist_scaling.json-scaling.svg",
                                     "dist_scaling.json-allreduce_busbw.svg", "compare", "memory-gpu", "memory-cpu"}) {
    EXPECT_NE(std::find(ids.begin(), ids.end(), expected), ids.end()) << expected;
  }
  EXPECT_EQ(result["charts"], charts.size());
  EXPECT_TRUE(result["empty"].empty()) << result["empty"].dump();
  EXPECT_TRUE(result["clipped"].empty()) << "text outside its chart: " << result["clipped"].dump(1);
  EXPECT_TRUE(result["overlaps"].empty()) << "point labels over each other: " << result["overlaps"].dump(1);
  EXPECT_GE(result["texts"].get<int>(), 200);
  EXPECT_GE(result["labels"].get<int>(), 10);
  EXPECT_TRUE(loaded.console.empty()) << "console: " << loaded.console.front();

  // The check is not vacuous: a text past a chart's right edge and two labels on one spot are reported.
  const std::string canary =
      R"(<svg id="canary" xmlns="http://www.w3.org/2000/svg" width="100" height="100" viewBox="0 0 100 100">)"
      R"(<text x="90" y="20">past the edge</text><text class="label" x="10" y="60">one</text>)"
      R"(<text class="label" x="12" y="61">two</text></svg>)";
  torchprobe::io::write_text_file(
      dir.file("canary.html"),
      "<!DOCTYPE html><html><body>" + canary + "<pre id=\"selftest\" hidden></pre>" + kChartCheck + "</body></html>");
  const json bad = selftest_of(open_page("file://" + dir.file("canary.html")));
  ASSERT_TRUE(bad.is_object());
  ASSERT_EQ(bad["clipped"].size(), 1u) << bad.dump(1);
  EXPECT_EQ(bad["clipped"][0]["text"], "past the edge");
  EXPECT_EQ(bad["overlaps"].size(), 1u) << bad.dump(1);
}
