// The one byte-size grammar (torchprobe/units.h): every spelling it accepts, every near-miss it refuses, and the
// edges of its range. No LibTorch: links torchprobe::base only.
#include "torchprobe/units.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace units = torchprobe::units;

TEST(Units, ByteSizesReadOneWayEverywhere) {
  EXPECT_EQ(units::parse_bytes("512 KiB"), 512 * 1024);
  EXPECT_EQ(units::parse_bytes("2GiB"), std::int64_t{2} << 30);
  EXPECT_EQ(units::parse_bytes("2.00 GiB"), std::int64_t{2} << 30);
  EXPECT_EQ(units::parse_bytes("1048576"), 1048576);
  EXPECT_EQ(units::parse_bytes("123 bytes"), 123);
  EXPECT_EQ(units::parse_bytes("0"), 0);
  for (const char* bad : {"lots", "", "-1", "1.", "5 MB", "2GiBs", "99999999999999999999999", "1e30", "8TiB8", "16000000TiB"}) {
    EXPECT_FALSE(units::parse_bytes(bad).has_value()) << bad;
  }
  EXPECT_EQ(units::format_bytes(1.5 * (1 << 30)), "1.50 GiB");
  EXPECT_EQ(units::format_bytes(512), "512 B");
}

// Each accepted spelling: B, bytes, the binary units KiB to TiB, decimals, spaces around the number and the unit.
TEST(Units, EveryAcceptedSpelling) {
  const std::int64_t kKi = 1024;
  const std::vector<std::pair<std::string, std::int64_t>> accepted = {
      {"0", 0},
      {"7", 7},
      {"7B", 7},
      {"7 B", 7},
      {"7 bytes", 7},
      {"7bytes", 7},
      {"1KiB", kKi},
      {"3 KiB", 3 * kKi},
      {"1 MiB", kKi * kKi},
      {"1 GiB", kKi * kKi * kKi},
      {"1 TiB", kKi * kKi * kKi * kKi},
      {"0.5 KiB", 512},
      {"1.5 GiB", 3 * (kKi * kKi * kKi) / 2},
      {"2.25MiB", 9 * kKi * kKi / 4},
      {"0.0 B", 0},
      {"007 KiB", 7 * kKi},
      {"  64 KiB", 64 * kKi},
      {"64 KiB  ", 64 * kKi},
      {"64\tKiB", 64 * kKi},
      {" 64   KiB ", 64 * kKi},
  };
  for (const auto& [text, bytes] : accepted) EXPECT_EQ(units::parse_bytes(text), std::optional<std::int64_t>(bytes)) << "'" << text << "'";
}

// Decimal (SI) units are refused, never read as binary ones: "KB" is not 1024 bytes (nor 1000); so are the wrong case,
// bare prefixes, signs, exponents, numbers without digits on one side of the point, and anything after the unit.
TEST(Units, EveryRefusedSpelling) {
  for (const char* bad :
       {"1 KB", "1KB", "1 kB", "1 kb", "1 MB", "1 GB", "1 TB", "1 kib", "1 KIB", "1 mib", "1 gib", "1 K", "1 M", "1 G",
        "1 T", "1 Ki", "1 b", "1 byte", "1 Bytes", "1 BYTES", "-1", "-1 KiB", "+1", "+1 KiB", "", " ", "B", "KiB", "1e3",
        "1E3", "1e3 B", "1.", "1. KiB", ".5", ".5 KiB", "1.5.", "1..5", "5 MiB x", "5MiBx", "5 MiB 5", "5 MiB/s", "1,024",
        "1 024", "0x10", "nan", "inf", "1 KiB KiB", "1\n2"}) {
    EXPECT_EQ(units::parse_bytes(bad), std::nullopt) << "'" << bad << "'";
  }
}

// The range ends at 2^63 - 1 bytes: whole numbers are exact to the last byte (a double would round them), and 2^63 or
// more is refused in every unit.
TEST(Units, TheLargestSizeIsExactAndOneMoreIsRefused) {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  EXPECT_EQ(units::parse_bytes("9223372036854775807"), kMax);
  EXPECT_EQ(units::parse_bytes("9223372036854775807 B"), kMax);
  EXPECT_EQ(units::parse_bytes("9223372036854775806"), kMax - 1);
  EXPECT_EQ(units::parse_bytes("9223372036854775808"), std::nullopt);
  EXPECT_EQ(units::parse_bytes("18446744073709551616"), std::nullopt);  // 2^64: no wrap-around
  EXPECT_EQ(units::parse_bytes("8388607 TiB"), (std::int64_t{8388607}) << 40);  // 2^63 - 2^40
  EXPECT_EQ(units::parse_bytes("8388608 TiB"), std::nullopt);                    // 2^63
  EXPECT_EQ(units::parse_bytes("8589934591 GiB"), (std::int64_t{8589934591}) << 30);
  EXPECT_EQ(units::parse_bytes("8589934592 GiB"), std::nullopt);
  EXPECT_EQ(units::parse_bytes("8388607.5 TiB"), (std::int64_t{16777215}) << 39);
  EXPECT_EQ(units::parse_bytes("8388608.0 TiB"), std::nullopt);
}

// Each unit from exactly its size on: 1023 B, 1.0 KiB at 1024; the next unit at 1024 of the one before.
TEST(Units, FormattedSizesChangeUnitExactlyAtEachPowerOf1024) {
  EXPECT_EQ(units::format_bytes(0), "0 B");
  EXPECT_EQ(units::format_bytes(1023), "1023 B");
  EXPECT_EQ(units::format_bytes(1024), "1.0 KiB");
  EXPECT_EQ(units::format_bytes(-1024), "-1.0 KiB");
  EXPECT_EQ(units::format_bytes(std::nextafter(1024.0 * 1024, 0.0)), "1024.0 KiB");
  EXPECT_EQ(units::format_bytes(1024.0 * 1024), "1.0 MiB");
  EXPECT_EQ(units::format_bytes(std::nextafter(1024.0 * 1024 * 1024, 0.0)), "1024.0 MiB");
  EXPECT_EQ(units::format_bytes(1024.0 * 1024 * 1024), "1.00 GiB");
  EXPECT_EQ(units::format_bytes(5.0 * 1024 * 1024 * 1024 * 1024), "5120.00 GiB");
}
