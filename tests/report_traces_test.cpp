#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "torchprobe/input_error.h"
#include "torchprobe/report/traces.h"

namespace report = torchprobe::report;

// report --traces: self time is an event's duration less the events directly inside it on its thread, per
// profiled step (forward phases), largest first, ties by name; exact on a hand-made trace (microseconds). An event
// that starts when the previous one ends follows it, not inside it.
TEST(ReportTraces, SelfTimePerStepFromAChromeTrace) {
  const std::string text = R"({"traceEvents": [
    {"name": "forward", "cat": "torchprobe", "ph": "X", "ts": 0, "dur": 100, "tid": 1},
    {"name": "aten::conv2d", "cat": "aten", "ph": "X", "ts": 10, "dur": 50, "tid": 1},
    {"name": "aten::mkldnn_convolution", "cat": "aten", "ph": "X", "ts": 15, "dur": 40, "tid": 1},
    {"name": "aten::relu", "cat": "aten", "ph": "X", "ts": 70, "dur": 10, "tid": 1},
    {"name": "aten::add_", "cat": "aten", "ph": "X", "ts": 80, "dur": 5, "tid": 1},
    {"name": "backward", "cat": "torchprobe", "ph": "X", "ts": 100, "dur": 100, "tid": 1},
    {"name": "aten::convolution_backward", "cat": "aten", "ph": "X", "ts": 110, "dur": 80, "tid": 1},
    {"name": "a mark", "ph": "i", "ts": 5, "tid": 1}],
    "displayTimeUnit": "ms"})";
  const auto s = report::summarize_trace("train_step/net/cpu/batch:4", "t.json", text, /*top=*/5);
  EXPECT_EQ(s.steps, 1);
  EXPECT_DOUBLE_EQ(s.step_ms, 0.2);
  ASSERT_EQ(s.top.size(), 5u);
  EXPECT_EQ(s.top[0].name, "aten::convolution_backward");
  EXPECT_DOUBLE_EQ(s.top[0].self_ms_per_step, 0.08);
  EXPECT_EQ(s.top[1].name, "aten::mkldnn_convolution");
  EXPECT_DOUBLE_EQ(s.top[1].self_ms_per_step, 0.04);
  EXPECT_EQ(s.top[2].name, "aten::conv2d");  // 10 us, tied with relu: by name
  EXPECT_DOUBLE_EQ(s.top[2].self_ms_per_step, 0.01);
  EXPECT_DOUBLE_EQ(s.top[2].calls_per_step, 1.0);
  // add_ starts the moment relu ends: back to back, not inside it, so relu keeps its 10 us.
  EXPECT_EQ(s.top[3].name, "aten::relu");
  EXPECT_DOUBLE_EQ(s.top[3].self_ms_per_step, 0.01);
  EXPECT_EQ(s.top[4].name, "aten::add_");
  EXPECT_DOUBLE_EQ(s.top[4].self_ms_per_step, 0.005);
  const std::string md = report::traces_markdown({s});
  EXPECT_NE(md.find("## Where a step's time goes"), std::string::npos) << md;
  EXPECT_NE(md.find("trace: [t.json](t.json)"), std::string::npos) << md;
  EXPECT_NE(md.find("| aten::convolution_backward | 1 | 80.0 us | 40.0% |"), std::string::npos) << md;
  EXPECT_EQ(report::traces_markdown({}), "");
  EXPECT_THROW(report::summarize_trace("b", "t.json", "not json", 8), torchprobe::InputError);
  EXPECT_THROW(report::summarize_trace("b", "t.json", R"({"events": []})", 8), torchprobe::InputError);
  EXPECT_THROW(report::summarize_trace("b", "t.json",
                                       R"({"traceEvents": [{"name": "aten::mm", "ph": "X", "ts": 0, "dur": 1}]})", 8),
               torchprobe::InputError);  // no training phase
}

// Events that start at the same instant nest the longer outside the shorter, whatever the file's order: LibTorch
// writes aten::linear and the aten::addmm it calls with one timestamp, and the child first when it ends first.
TEST(ReportTraces, EventsStartingTogetherNestTheLongerOutside) {
  const std::string text = R"({"traceEvents": [
    {"name": "aten::addmm", "cat": "aten", "ph": "X", "ts": 0, "dur": 50, "tid": 1},
    {"name": "aten::linear", "cat": "aten", "ph": "X", "ts": 0, "dur": 60, "tid": 1},
    {"name": "forward", "cat": "torchprobe", "ph": "X", "ts": 0, "dur": 100, "tid": 1},
    {"name": "aten::relu", "cat": "aten", "ph": "X", "ts": 60, "dur": 30, "tid": 1}]})";
  const auto s = report::summarize_trace("train_step/net/cpu/batch:4", "t.json", text, /*top=*/5);
  EXPECT_EQ(s.steps, 1);
  EXPECT_DOUBLE_EQ(s.step_ms, 0.1);
  ASSERT_EQ(s.top.size(), 3u);
  EXPECT_EQ(s.top[0].name, "aten::addmm");
  EXPECT_DOUBLE_EQ(s.top[0].self_ms_per_step, 0.05);
  EXPECT_EQ(s.top[1].name, "aten::relu");
  EXPECT_DOUBLE_EQ(s.top[1].self_ms_per_step, 0.03);
  EXPECT_EQ(s.top[2].name, "aten::linear");  // 60 us less the 50 us of addmm inside it
  EXPECT_DOUBLE_EQ(s.top[2].self_ms_per_step, 0.01);
}

// --trace profiles several steps: every figure is per step (forward phases), and ops nest per thread only.
TEST(ReportTraces, FiguresArePerStepAndNestingIsPerThread) {
  const std::string text = R"({"traceEvents": [
    {"name": "forward", "cat": "torchprobe", "ph": "X", "ts": 0, "dur": 100, "tid": 1},
    {"name": "aten::mm", "cat": "aten", "ph": "X", "ts": 10, "dur": 50, "tid": 1},
    {"name": "aten::copy_", "cat": "aten", "ph": "X", "ts": 20, "dur": 30, "tid": 2},
    {"name": "forward", "cat": "torchprobe", "ph": "X", "ts": 200, "dur": 100, "tid": 1},
    {"name": "aten::mm", "cat": "aten", "ph": "X", "ts": 210, "dur": 50, "tid": 1},
    {"name": "aten::copy_", "cat": "aten", "ph": "X", "ts": 220, "dur": 30, "tid": 2}]})";
  const auto s = report::summarize_trace("train_step/net/cpu/batch:4", "t.json", text, /*top=*/8);
  EXPECT_EQ(s.steps, 2);
  EXPECT_DOUBLE_EQ(s.step_ms, 0.1);
  ASSERT_EQ(s.top.size(), 2u);
  EXPECT_EQ(s.top[0].name, "aten::mm");  // the copy on the data loader's thread is not inside it
  EXPECT_DOUBLE_EQ(s.top[0].self_ms_per_step, 0.05);
  EXPECT_DOUBLE_EQ(s.top[0].calls_per_step, 1.0);
  EXPECT_EQ(s.top[1].name, "aten::copy_");
  EXPECT_DOUBLE_EQ(s.top[1].self_ms_per_step, 0.03);
  EXPECT_NE(report::traces_markdown({s}).find("| aten::mm | 1 | 50.0 us | 50.0% |"), std::string::npos)
      << report::traces_markdown({s});
}

// The top N: the N ops with the most self time, the rest left out; fewer ops than N are all listed.
TEST(ReportTraces, TheTopKeepsTheLargestN) {
  std::string text =
      R"({"traceEvents": [{"name": "forward", "cat": "torchprobe", "ph": "X", "ts": 0, "dur": 1000, "tid": 1})";
  for (int i = 1; i <= 6; ++i) {
    text += fmt::format(R"(, {{"name": "op{}", "cat": "aten", "ph": "X", "ts": {}, "dur": {}, "tid": 1}})", i, i * 100,
                        i * 10);
  }
  text += "]}";
  const auto five = report::summarize_trace("b", "t.json", text, /*top=*/5);
  ASSERT_EQ(five.top.size(), 5u);
  EXPECT_EQ(five.top.front().name, "op6");
  EXPECT_EQ(five.top.back().name, "op2");
  EXPECT_EQ(report::summarize_trace("b", "t.json", text, /*top=*/8).top.size(), 6u);
  EXPECT_EQ(report::summarize_trace("b", "t.json", text, /*top=*/6).top.size(), 6u);
}
