#include "torchprobe/report/memory_chart.h"

#include <fmt/format.h>

#include <algorithm>

#include "torchprobe/report/plot.h"
#include "torchprobe/units.h"

namespace torchprobe::report {

std::string memory_chart(const MemoryChartInput& in) {
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  const auto gib = [](double bytes) { return bytes / kGiB; };
  const std::string budget = in.gpu ? "device memory" : "address-space budget (--cpu-limit)";
  XYPlot plot{fmt::format("Memory vs batch: {} on {}{}", in.model, in.device,
                          in.device_name.empty() ? "" : " (" + in.device_name + ")"),
              {"batch size (images per step)", false, true},
              {"peak memory of one step, GiB", false, true},
              {},
              {}};
  PlotSeries ran{"a step ran: its peak", {}, false, true, false, false, 0};
  PlotSeries failed{"out of memory (drawn at the budget)", {}, false, true, false, true, 3};
  double most = 0.0;
  for (const auto& t : in.trials) most = std::max(most, static_cast<double>(t.batch));
  for (const auto& t : in.trials) {
    if (t.fits) {
      ran.points.push_back(
          {static_cast<double>(t.batch), gib(static_cast<double>(t.peak_bytes)), "",
           fmt::format("batch {}: peak {}", t.batch, units::format_bytes(static_cast<double>(t.peak_bytes)))});
    } else if (in.capacity_bytes > 0) {
      failed.points.push_back({static_cast<double>(t.batch), gib(static_cast<double>(in.capacity_bytes)), "",
                               fmt::format("batch {}: out of memory", t.batch)});
    }
  }
  plot.series.push_back(std::move(ran));
  if (!failed.points.empty()) plot.series.push_back(std::move(failed));
  if (in.fit_slope > 0.0) {
    plot.series.push_back(
        {fmt::format("fit: {} + {} per image (over {} batch sizes)", units::format_bytes(in.fit_intercept),
                     units::format_bytes(in.fit_slope), in.fit_points),
         {{0.0, gib(in.fit_intercept), "", ""}, {most, gib(in.fit_intercept + in.fit_slope * most), "", ""}},
         true,
         false,
         true,
         false,
         1});
  }
  if (in.capacity_bytes > 0) {
    const double cap = gib(static_cast<double>(in.capacity_bytes));
    plot.series.push_back({fmt::format("{}: {}", budget, units::format_bytes(static_cast<double>(in.capacity_bytes))),
                           {{0.0, cap, "", ""}, {most, cap, "", ""}},
                           true,
                           false,
                           false,
                           false,
                           7});
    if (in.largest > 0) {
      plot.series.push_back({fmt::format("largest batch that ran: {}", in.largest),
                             {{static_cast<double>(in.largest), 0.0, "", ""},
                              {static_cast<double>(in.largest), cap, fmt::format("largest {}", in.largest), ""}},
                             true,
                             false,
                             true,
                             false,
                             2});
    }
  }
  if (in.smallest_failing > 0) {
    plot.notes.push_back(fmt::format("The smallest batch that ran out of memory: {}.", in.smallest_failing));
  }
  return xy_plot(plot);
}

}  // namespace torchprobe::report
