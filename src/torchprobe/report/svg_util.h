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

/// Ticks of a linear axis from `lo` to at least `hi` on a 1-2-5 step, about `target` of them.
std::vector<double> linear_ticks(double lo, double hi, int target);

}  // namespace torchprobe::report
