// libFuzzer target: the results loader (Google Benchmark JSON -> the result schema) and the printers
// that read what it loads. Bad documents must be refused with an InputError naming the file.
#include <cstddef>
#include <cstdint>
#include <string>

#include "torchprobe/input_error.h"
#include "torchprobe/report/compare.h"
#include "torchprobe/report/printers.h"
#include "torchprobe/report/results.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, size_t size) {
  using namespace torchprobe::report;
  try {
    const ResultSet set = parse_results(std::string(reinterpret_cast<const char*>(data), size), "fuzz.json");
    (void)to_csv(set);
    (void)to_markdown(set, make_charts(set), ReportOptions{});
    (void)to_console_summary(set, ReportOptions{});
    if (!set.results.empty()) {
      const CompareReport report = compare_results(set, set, CompareOptions{});
      (void)compare_console(report, CompareOptions{});
      (void)compare_chart(report, CompareOptions{});  // the forest plot, as compare --md writes it
    }
  } catch (const torchprobe::InputError&) {
  }
  return 0;
}
