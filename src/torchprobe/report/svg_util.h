#pragma once
// What every SVG chart shares: escaping, a conservative estimate of how wide a label renders (so a chart
// sizes its margins from its own text instead of fixed offsets: no browser measures for us), axis ticks.
#include <string>
#include <vector>

#include "torchprobe/escape.h"

namespace torchprobe::report {

using torchprobe::xml_escape;  // the one XML escaping (torchprobe/escape.h), under the name the printers use

/// An upper bound of the width in px of `text` in a sans-serif font of `font_size` px: per-character
/// widths of DejaVu Sans (the widest common sans-serif; Arial and Liberation Sans are narrower), rounded up.
double text_width(const std::string& text, double font_size);

/// `text` when it has at most `max_chars` characters (UTF-8 aware), else its first `max_chars` and "...".
std::string shorten(const std::string& text, size_t max_chars);

/// `text` in lines of at most `max_width` px by text_width (words longer than that stand alone on their line).
std::vector<std::string> wrap_text(const std::string& text, double font_size, double max_width);

/// Ticks of a linear axis from `lo` to at least `hi` on a 1-2-5 step, about `target` of them; at least one
/// for any input (a range a double cannot step through gives `lo` alone).
std::vector<double> linear_ticks(double lo, double hi, int target);

/// Ticks of a log axis for values from `lo` to `hi` (0 < lo <= hi): each power of ten from the one at or below
/// `lo` to the one at or above `hi`; at least one for any input, and only finite, positive ones.
std::vector<double> log_ticks(double lo, double hi);

/// The charts' colours (Tableau 10), cycled.
const char* palette(size_t index);
/// A tick's label: integers with SI-style thousands spaces, otherwise the shortest form; then `suffix`.
std::string tick_label(double v, const std::string& suffix = "");
/// A standalone SVG document of `width` x `height` px on white around `body`.
std::string svg_document(double width, double height, const std::string& body);
/// The chart's title, bold, at the top left; kTitleFont px.
constexpr double kTitleFont = 16, kChartPad = 10;
std::string title_text(const std::string& title);

}  // namespace torchprobe::report
