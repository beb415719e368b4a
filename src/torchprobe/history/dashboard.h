#pragma once
// The history dashboard: one self-contained HTML page (inline SVG, a little plain JavaScript, no network).
#include <map>
#include <string>
#include <vector>

#include "torchprobe/history/analysis.h"
#include "torchprobe/report/results.h"

namespace torchprobe::history {

struct DashboardOptions {
  /// Device label ("cpu", "cuda:0", "cpu@host") -> rental price in USD per hour: adds cost per epoch and per
  /// million images to the device table.
  std::map<std::string, double> usd_per_hour;
};

/// "cpu=0.10,cuda:0=2.50" -> {cpu: 0.10, cuda:0: 2.50}. Throws InputError naming --price for a bad item.
std::map<std::string, double> parse_prices(const std::string& text);

/// The page: one chart per series (median per run, a CV band, change points marked with their commit), a
/// filter box, and the latest runs' device comparison (a table of images/s per device, with costs when
/// priced, and the report's charts). Loaded with "#selftest=filter:TEXT" (optionally ",clip-canary") it
/// checks itself and writes JSON into <pre id="selftest">: charts_total, charts_visible after the filter,
/// texts_checked, clipped (every <text> whose box leaves its SVG's viewBox), errors (uncaught script errors).
std::string dashboard_html(const std::vector<SeriesReport>& reports, const report::ResultSet& latest,
                           const DashboardOptions& options);

}  // namespace torchprobe::history
