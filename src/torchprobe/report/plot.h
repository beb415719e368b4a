#pragma once
// Charts beyond the bar charts, as standalone SVG: an x-y plot (points with labels, lines, log or linear axes: the
// roofline, scaling, memory vs batch) and a forest plot (one row per item: a point, its interval, a band). Sizes come
// from the text they hold (svg_util.h's text_width), so every label stays inside the canvas; a point label that
// would overlap another is left out and the chart says how many were (each point keeps its name as a tooltip).
#include <string>
#include <vector>

namespace torchprobe::report {

struct PlotAxis {
  std::string title;  ///< the quantity and unit, e.g. "arithmetic intensity (FLOP/byte, log scale)"
  bool log = false;
  bool include_zero = false;  ///< linear axes: start at 0 whatever the data
};

struct PlotPoint {
  double x = 0.0, y = 0.0;
  std::string label;    ///< drawn next to the point ("" none)
  std::string tooltip;  ///< the point's <title> ("" : the label)
};

struct PlotSeries {
  std::string name;  ///< the legend entry ("" none)
  std::vector<PlotPoint> points;
  bool line = false;    ///< joined in order
  bool markers = true;  ///< a dot per point
  bool dashed = false;
  bool cross = false;  ///< markers are crosses (e.g. a failed trial), not dots
  int colour = 0;      ///< index into the palette
};

struct XYPlot {
  std::string title;
  PlotAxis x, y;
  std::vector<PlotSeries> series;
  std::vector<std::string> notes;  ///< lines under the legend, e.g. what a roof is
};

/// The plot as a standalone SVG document. Points that a log axis cannot show (<= 0) or that are not finite are left
/// out and counted in a note.
std::string xy_plot(const XYPlot& plot);

struct ForestRow {
  std::string label;
  double value = 0.0;         ///< NaN: no point (the note says why)
  double lo = 0.0, hi = 0.0;  ///< the interval; NaN: none
  std::string value_text;     ///< printed right of the row, e.g. "+12.3% SLOWER"
  bool highlight = false;     ///< drawn in the alarm colour
};

struct ForestPlot {
  std::string title;
  std::string axis_title;               ///< e.g. "change of the median, % (> 0 is slower)"
  double band_lo = 0.0, band_hi = 0.0;  ///< a shaded band, e.g. the threshold (-5%, +5%); equal: none
  std::string band_label;
  std::vector<ForestRow> rows;
  std::vector<std::string> notes;
};

/// One row per item: its interval as a line, its value as a dot, a vertical line at 0 and the band shaded.
std::string forest_plot(const ForestPlot& plot);

}  // namespace torchprobe::report
