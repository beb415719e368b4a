#include <fmt/format.h>

#include <cmath>

#include "torchprobe/escape.h"
#include "torchprobe/phases.h"
#include "torchprobe/report/printers.h"
#include "torchprobe/report/views.h"

namespace torchprobe::report {
namespace {

std::string csv_number(double value) { return std::isfinite(value) ? fmt::format("{:.6g}", value) : ""; }

}  // namespace

std::string to_csv(const ResultSet& results) {
  std::string out =
      "suite,name,subject,device,device_name,batch,dtype,phase,median_ms,cv_pct,images_per_s,gflop_per_s,gb_per_s,"
      "pct_of_peak,bound,mfu_pct,roof_label,peak_mem_mib,repetitions,threads,libtorch_version,host,date,error,samples,"
      "noise_pct\n";
  for (const auto& r : results.results) {
    const RunContext& ctx = results.contexts[r.context];
    const OpMetrics op = op_metrics(r);
    const auto row = [&](const std::string& phase, double ms, bool headline) {
      const auto only = [&](double v) { return headline ? csv_number(v) : std::string(); };
      const std::vector<std::string> fields = {r.suite,
                                               r.name,
                                               r.subject,
                                               r.device_label,
                                               r.device_name,
                                               r.batch > 0 ? std::to_string(r.batch) : "",
                                               r.dtype,
                                               phase,
                                               r.failed() ? "" : csv_number(ms),
                                               only(r.cv_pct >= 0 ? r.cv_pct : NAN),
                                               only(r.counter("images_per_s")),
                                               only(op.gflop_per_s),
                                               only(op.gb_per_s),
                                               only(op.pct_of_roof),
                                               headline ? op.bound : "",
                                               only(r.counter("mfu_pct")),
                                               headline ? (op.label.empty() ? mfu_label(r) : op.label) : "",
                                               only(r.counter("peak_mem_mib")),
                                               std::to_string(r.repetitions),
                                               r.has("threads") ? csv_number(r.counter("threads")) : ctx.threads,
                                               ctx.libtorch_version,
                                               ctx.host,
                                               ctx.date,
                                               r.error,
                                               only(r.counter("samples")),
                                               only(r.counter("noise_pct"))};
      std::string line;
      for (size_t i = 0; i < fields.size(); ++i) line += (i ? "," : "") + csv_field(fields[i]);
      out += line + "\n";
    };
    row(r.suite == "train_step" ? "step" : "", r.median_ms, /*headline=*/true);
    if (r.failed()) continue;
    for (const std::string phase : kPhaseNames) {
      if (r.has(phase + "_ms")) row(phase, r.counter(phase + "_ms"), /*headline=*/false);
    }
  }
  return out;
}

}  // namespace torchprobe::report
