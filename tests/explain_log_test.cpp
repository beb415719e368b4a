// explain on what users paste: very long lines, whole logs, binary input (layer 0, run by every build). The
// classifier's rules are in explain_test, the corpora in explain_corpus_test.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "diagnostics/classify.h"
#include "diagnostics/explanations.h"
#include "diagnostics/oom.h"
#include "test_util.h"

using namespace torchprobe;
using namespace torchprobe::diagnostics;
namespace dx = torchprobe::diagnostics;

namespace {

// A line of `size` bytes: an error, then an args=(...) dump as long logs have after it.
std::string long_line(std::size_t size) {
  std::string line =
      "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
      "cuda:0 and cpu! (when checking argument for argument mat1 in method wrapper_CUDA_addmm) args=(";
  while (line.size() < size) line += "tensor([[0.1, 0.2], [0.3, 0.4]], device='cuda:0'), ";
  return line + ")";
}

}  // namespace

TEST(ExplainRobustness, AOneMegabyteLineClassifiesAndItsMessageIsShortened) {
  const Diagnosis d = explain_error(long_line(std::size_t{1} << 20));
  EXPECT_EQ(kind_name(d.kind), "device_mismatch");
  EXPECT_EQ(d.devices.front(), "cuda:0");
  EXPECT_EQ(d.argument.value_or(""), "mat1");
  EXPECT_LT(d.message.size(), 4096u);
  EXPECT_NE(d.message.find("more bytes]"), std::string::npos);
  // One 1 MB line without any error word, and one of a single repeated character.
  EXPECT_EQ(kind_name(explain_error(std::string(std::size_t{1} << 20, '(')).kind), "unknown");
  EXPECT_EQ(kind_name(explain_error(std::string(std::size_t{1} << 20, 'a') + " CUDA out of memory").kind),
            "out_of_memory_gpu");
}

// Devices are looked for in a message's first 4 KB, cut at a blank, in at most 256 matches: each search may read
// to the end of the text, and 32 000 ".a" in one message (found by fuzz_explain) made that quadratic. A device
// whose name ends at byte 4096 is found; one a byte further is not; nor one after 256 other matches.
TEST(ExplainRobustness, DevicesAreLookedForInTheMessagesFirstFourKilobytes) {
  const std::string head =
      "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu! ";
  // The message (what follows "RuntimeError: ") with "cuda:1" ending at byte `end`, a blank on each side.
  const auto ending_at = [&](std::size_t end) {
    std::string message = head + std::string(end - 7 - head.size(), 'x') + " cuda:1";
    EXPECT_EQ(message.size(), end);
    return explain_error("RuntimeError: " + message + " " + std::string(1000, 'y'));
  };
  const std::vector<std::string> three{"cuda:0", "cpu", "cuda:1"}, two{"cuda:0", "cpu"};
  EXPECT_EQ(ending_at(4095).devices, three);
  EXPECT_EQ(ending_at(4096).devices, three);
  const Diagnosis beyond = ending_at(4097);
  EXPECT_EQ(kind_name(beyond.kind), "device_mismatch");
  EXPECT_EQ(beyond.devices, two);
  // head names two devices in two matches; each " .a" is one more match.
  const auto after_dots = [&](int dots) {
    std::string message = head;
    for (int i = 0; i < dots; ++i) message += " .a";
    return explain_error("RuntimeError: " + message + " cuda:1");
  };
  EXPECT_EQ(after_dots(253).devices, three);  // cuda:1 is the 256th match
  EXPECT_EQ(after_dots(254).devices, two);    // the 257th
}

// A state_dict report's paragraphs (blank lines between) stay one entry also when "state_dict" is first named on a
// wrapped line: whether the entry names it is kept as lines join, not searched for again at each line.
TEST(Explain, AStateDictNamedOnAWrappedLineKeepsItsKeyParagraphs) {
  const Diagnosis d = explain_error(
      "RuntimeError: Error(s) in loading the checkpoint saved at epoch 12 into the model's\n"
      "state_dict for ResNet:\n"
      "\n"
      "\tMissing key(s) in state_dict: \"conv1.weight\", \"bn1.weight\".\n"
      "\n"
      "\tUnexpected key(s) in state_dict: \"module.conv1.weight\", \"module.bn1.weight\".\n");
  EXPECT_EQ(kind_name(d.kind), "state_dict_prefix");
  EXPECT_EQ(d.message.rfind("Error(s) in loading the checkpoint saved at epoch 12 into the model's state_dict for "
                            "ResNet: Missing key(s) in state_dict:",
                            0),
            0u)
      << d.message;
  EXPECT_NE(d.message.find("Unexpected key(s) in state_dict: \"module.conv1.weight\""), std::string::npos) << d.message;
}

TEST(ExplainRobustness, AFiftyMegabyteLogIsReadToItsEnd) {
  std::string log;
  log.reserve(std::size_t{51} << 20);
  const std::string step = "2024-05-01 12:00:00,000 INFO train.py:88] epoch 3 step 1200 loss 0.4312 lr 1.0e-04\n";
  while (log.size() < (std::size_t{50} << 20)) log += step;
  log +=
      "Traceback (most recent call last):\n  File \"train.py\", line 90, in <module>\n    loss.backward()\n"
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB "
      "of which 1.06 GiB is free.\n";
  const Diagnosis d = explain_error(log);
  EXPECT_EQ(kind_name(d.kind), "out_of_memory_gpu");
  EXPECT_EQ(d.memory.requested, std::int64_t{2} << 30);
  std::istringstream in(log);
  const LogScan scan = scan_log(in);
  ASSERT_EQ(scan.findings.size(), 1u);
  EXPECT_EQ(scan.findings[0].line, scan.lines);
  EXPECT_EQ(kind_name(scan.findings[0].diagnosis.kind), "out_of_memory_gpu");
}

TEST(ExplainRobustness, BinaryInputInvalidUtf8AndNulBytesGiveValidJson) {
  std::string binary;
  for (int i = 0; i < 1 << 16; ++i) binary += static_cast<char>((i * 7919) & 0xFF);
  const std::string invalid = std::string(
                                  "RuntimeError: Expected all tensors to be on the same device, but found at "
                                  "least two devices, cuda:0 and cpu! \xff\xfe\xc3\x28 ") +
                              std::string("\0\0\x80", 3) + "\n" + binary;
  for (const std::string& text : {binary, invalid, std::string(1000, '\0'), std::string("\xe2\x82", 2)}) {
    const Diagnosis d = explain_error(text);
    nlohmann::json j;
    ASSERT_NO_THROW(j = nlohmann::json::parse(diagnosis_json(d)));
    EXPECT_TRUE(j.at("message").is_string());
    std::istringstream in(text);
    nlohmann::json scanned;
    ASSERT_NO_THROW(scanned = nlohmann::json::parse(log_scan_json(scan_log(in))));
    EXPECT_TRUE(scanned.is_array() || scanned.is_object());
  }
  const Diagnosis d = explain_error(invalid);
  EXPECT_EQ(kind_name(d.kind), "device_mismatch");
  const auto j = nlohmann::json::parse(diagnosis_json(d));
  EXPECT_NE(j.at("message").get<std::string>().find("\xef\xbf\xbd"), std::string::npos)
      << "invalid bytes become U+FFFD";
}

TEST(ExplainLog, ListsEachDistinctErrorWithItsFirstLineAndCount) {
  std::istringstream log(
      "epoch 1 step 10 loss 2.30\n"
      "[rank1]: Traceback (most recent call last):\n"
      "[rank1]:   File \"train.py\", line 42, in <module>\n"
      "[rank1]:     out = model(x)\n"
      "[rank1]: RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:1 "
      "and cpu! (when checking argument for argument mat1 in method wrapper_CUDA_addmm)\n"
      "[rank0]: RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total capacity)\n"
      "[rank1]: RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:1 "
      "and cpu! (when checking argument for argument mat1 in method wrapper_CUDA_addmm)\n"
      "RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)\n"
      "AttributeError: 'list' object has no attribute 'cuda'\n");
  const LogScan scan = scan_log(log);
  EXPECT_EQ(scan.lines, 9u);
  ASSERT_EQ(scan.findings.size(), 3u) << log_scan_text(scan);
  EXPECT_EQ(kind_name(scan.findings[0].diagnosis.kind), "device_mismatch");
  EXPECT_EQ(scan.findings[0].line, 5u);
  EXPECT_EQ(scan.findings[0].count, 2u);
  EXPECT_EQ(scan.findings[0].diagnosis.devices, (std::vector<std::string>{"cuda:1", "cpu"}));
  EXPECT_EQ(kind_name(scan.findings[1].diagnosis.kind), "out_of_memory_gpu");
  EXPECT_EQ(scan.findings[1].line, 6u);
  EXPECT_EQ(scan.findings[1].count, 1u);
  EXPECT_EQ(kind_name(scan.findings[2].diagnosis.kind), "not_a_tensor");
  EXPECT_EQ(scan.findings[2].line, 9u);
  const std::string text = log_scan_text(scan);
  EXPECT_NE(text.find("3 distinct errors in 9 lines"), std::string::npos) << text;
  EXPECT_NE(text.find("line 5, 2 times:"), std::string::npos) << text;
  EXPECT_EQ(scan.error_lines, 4u);
  EXPECT_FALSE(scan.listing_stopped);
  const auto j = nlohmann::json::parse(log_scan_json(scan));
  EXPECT_EQ(j.at("lines"), 9);
  EXPECT_EQ(j.at("error_lines"), 4);
  EXPECT_EQ(j.at("distinct_errors"), 3);
  EXPECT_TRUE(j.at("listing_stopped_at").is_null());
  const auto& errors = j.at("errors");
  ASSERT_TRUE(errors.is_array());
  EXPECT_EQ(errors[0].at("line"), 5);
  EXPECT_EQ(errors[0].at("count"), 2);
  EXPECT_EQ(errors[1].at("kind"), "out_of_memory_gpu");
  std::istringstream quiet("epoch 1 step 10 loss 2.30\n");
  EXPECT_EQ(log_scan_text(scan_log(quiet)), "no device or memory error torchprobe recognises in 1 line\n");
}

// Past kMaxLogFindings distinct errors the listing stops, says so, and every line and error is still counted.
TEST(ExplainLog, CountsEveryErrorAfterItStopsListing) {
  constexpr std::size_t kDistinct = kMaxLogFindings + 500;
  std::string log = "epoch 1 step 10 loss 2.30\n";
  for (std::size_t i = 1; i <= kDistinct; ++i) {
    log += "RuntimeError: CUDA out of memory. Tried to allocate " + std::to_string(i) + ".00 MiB\n";
  }
  log += "RuntimeError: CUDA out of memory. Tried to allocate 1.00 MiB\n";  // the first, after the stop: still counted
  std::istringstream in(log);
  const LogScan scan = scan_log(in);
  EXPECT_EQ(scan.lines, kDistinct + 2);
  ASSERT_EQ(scan.findings.size(), kMaxLogFindings);
  EXPECT_TRUE(scan.listing_stopped);
  EXPECT_EQ(scan.error_lines, kDistinct + 1);
  EXPECT_EQ(scan.unlisted_error_lines, 500u);
  EXPECT_EQ(scan.findings[0].count, 2u);
  EXPECT_EQ(scan.findings.back().line, kMaxLogFindings + 1);
  const std::string text = log_scan_text(scan);
  EXPECT_EQ(text.substr(0, text.find('\n')),
            "stopped listing at 1000 distinct errors: 1501 error lines in 1502 lines, 500 of them not listed:");
  const auto j = nlohmann::json::parse(log_scan_json(scan));
  EXPECT_EQ(j.at("lines"), kDistinct + 2);
  EXPECT_EQ(j.at("error_lines"), kDistinct + 1);
  EXPECT_EQ(j.at("distinct_errors"), kMaxLogFindings);
  EXPECT_EQ(j.at("listing_stopped_at"), kMaxLogFindings);
  EXPECT_EQ(j.at("unlisted_error_lines"), 500);
  EXPECT_EQ(j.at("errors").size(), kMaxLogFindings);

  // Exactly as many distinct errors as may be listed: nothing left out, nothing said.
  std::istringstream three(
      "RuntimeError: CUDA out of memory. Tried to allocate 1.00 MiB\n"
      "RuntimeError: CUDA out of memory. Tried to allocate 2.00 MiB\n"
      "RuntimeError: CUDA out of memory. Tried to allocate 1.00 MiB\n");
  const LogScan all = scan_log(three, /*max_findings=*/2);
  EXPECT_FALSE(all.listing_stopped);
  EXPECT_EQ(all.error_lines, 3u);
  EXPECT_EQ(log_scan_text(all).substr(0, 27), "2 distinct errors in 3 line");
}
