#include "torchprobe/report/svg_util.h"

#include <cmath>
#include <cstring>

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

std::vector<double> linear_ticks(double lo, double hi, int target) {
  std::vector<double> ticks;
  if (!(hi > lo)) hi = lo + 1.0;
  const double raw = (hi - lo) / target, mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double step = raw / mag < 2 ? 2 * mag : raw / mag < 5 ? 5 * mag : 10 * mag;
  for (double t = std::ceil(lo / step - 1e-9) * step; t <= hi + step * 1e-6; t += step) ticks.push_back(t == 0.0 ? 0.0 : t);  // no "-0"
  return ticks;
}

}  // namespace torchprobe::report
