// Escaping for each output (torchprobe/escape.h) and the SHA-256 behind the dashboard's CSP (torchprobe/digest.h).
#include <gtest/gtest.h>

#include <string>

#include "torchprobe/digest.h"
#include "torchprobe/escape.h"

namespace {

using torchprobe::csv_field;
using torchprobe::markdown_code;
using torchprobe::markdown_text;
using torchprobe::terminal_line;
using torchprobe::terminal_text;
using torchprobe::xml_escape;

const std::string kFffd = "\xEF\xBF\xBD";

std::string hex(const std::string& bytes) {
  static const char* const kDigits = "0123456789abcdef";
  std::string out;
  for (const char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    out += kDigits[b >> 4];
    out += kDigits[b & 0x0F];
  }
  return out;
}

TEST(EscapeMarkdown, NoNewLineRowColumnOrMarkupCanStart) {
  // A newline would end the table row and start a heading; | a new column.
  EXPECT_EQ(markdown_text("op/a\n## injected|x"), "op/a\\n## injected\\|x");
  EXPECT_EQ(markdown_text("a\r\nb"), "a\\r\\nb");
  EXPECT_EQ(markdown_text("[x](javascript:alert(1))"), "\\[x\\](javascript:alert(1))");
  EXPECT_EQ(markdown_text("<img src=x onerror=alert(1)>"), "\\<img src=x onerror=alert(1)\\>");
  EXPECT_EQ(markdown_text("a`b\\c"), "a\\`b\\\\c");
  EXPECT_EQ(markdown_text("\x1b[31mred\x7f"), "\\x1b\\[31mred\\x7f");
  EXPECT_EQ(markdown_text("p < 0.05"), "p \\< 0.05");
  // Plain names pass unchanged; UTF-8 stays, a stray byte becomes U+FFFD.
  EXPECT_EQ(markdown_text("train_step/net/cpu/batch:64 ±3.1% µs"), "train_step/net/cpu/batch:64 ±3.1% µs");
  EXPECT_EQ(markdown_text("a\xff" "b"), "a" + kFffd + "b");
  EXPECT_EQ(markdown_text("bidi\xE2\x80\xAE" "txt"), "bidi\\u202etxt");
}

TEST(EscapeMarkdown, CodeSpansHoldAnyTextOnOneLine) {
  EXPECT_EQ(markdown_code("train_step/net"), "`train_step/net`");
  EXPECT_EQ(markdown_code("a`b"), "``a`b``");
  EXPECT_EQ(markdown_code("a``b`"), "``` a``b` ```");
  EXPECT_EQ(markdown_code("`x"), "`` `x ``");
  EXPECT_EQ(markdown_code(" x"), "`  x `");
  EXPECT_EQ(markdown_code(""), "`  `");  // spaces only: shown as they are
  EXPECT_EQ(markdown_code("n\n## injected"), "`n\\n## injected`");
  EXPECT_EQ(markdown_code("x\xc0\xaf"), "`x" + kFffd + kFffd + "`");  // an overlong '/' is not UTF-8
}

TEST(EscapeCsv, QuotesAndNeutralisesFormulasButKeepsNumbers) {
  EXPECT_EQ(csv_field("plain"), "plain");
  EXPECT_EQ(csv_field(""), "");
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_field("two\nlines"), "\"two\nlines\"");
  // OWASP: a cell starting with = + - @ TAB or CR is shown as text.
  EXPECT_EQ(csv_field("=HYPERLINK(\"http://x\")"), "\"'=HYPERLINK(\"\"http://x\"\")\"");
  EXPECT_EQ(csv_field("=1+2"), "'=1+2");
  EXPECT_EQ(csv_field("+cmd|' /C calc'!A0"), "'+cmd|' /C calc'!A0");
  EXPECT_EQ(csv_field("-2+3+cmd|' /C calc'!A0"), "'-2+3+cmd|' /C calc'!A0");
  EXPECT_EQ(csv_field("@SUM(A1)"), "'@SUM(A1)");
  EXPECT_EQ(csv_field("\t=1"), "'\t=1");
  EXPECT_EQ(csv_field("\r=1"), "\"'\r=1\"");
  // Numbers are no formulas.
  EXPECT_EQ(csv_field("-12.5"), "-12.5");
  EXPECT_EQ(csv_field("+3"), "+3");
  EXPECT_EQ(csv_field("-1e-05"), "-1e-05");
  EXPECT_EQ(csv_field("-.5"), "-.5");
  EXPECT_EQ(csv_field("-"), "-");
  EXPECT_EQ(csv_field("-e5"), "'-e5");
  EXPECT_EQ(csv_field("-1e"), "'-1e");
  EXPECT_EQ(csv_field("--"), "'--");
}

TEST(EscapeXml, EntitiesAndOnlyCharactersXml10Allows) {
  EXPECT_EQ(xml_escape(R"(<a & "b" 'c'>)"), "&lt;a &amp; &quot;b&quot; &apos;c&apos;&gt;");
  EXPECT_EQ(xml_escape("tab\tlf\ncr\r"), "tab\tlf\ncr\r");
  EXPECT_EQ(xml_escape(std::string("nul\0esc\x1b", 8)), "nul" + kFffd + "esc" + kFffd);
  EXPECT_EQ(xml_escape("a\xEF\xBF\xBE" "b\xEF\xBF\xBF"), "a" + kFffd + "b" + kFffd);  // U+FFFE, U+FFFF
  EXPECT_EQ(xml_escape("\xED\xA0\x80"), kFffd + kFffd + kFffd);                        // a lone surrogate, CESU-style
  EXPECT_EQ(xml_escape("\xff\xfe"), kFffd + kFffd);
  EXPECT_EQ(xml_escape("cut \xE2\x82"), "cut " + kFffd + kFffd);  // a character cut short
  // What XML allows passes, up to the last plane.
  EXPECT_EQ(xml_escape("µ ± \xEF\xBF\xBD \xF0\x9F\x98\x80 \xF4\x8F\xBF\xBF"), "µ ± \xEF\xBF\xBD \xF0\x9F\x98\x80 \xF4\x8F\xBF\xBF");
  EXPECT_EQ(xml_escape("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);  // above U+10FFFF
}

TEST(EscapeTerminal, NoControlCharacterReachesTheTerminal) {
  EXPECT_EQ(terminal_line("\x1b]0;owned\x07name\x1b[2J"), "\\x1b]0;owned\\x07name\\x1b[2J");
  EXPECT_EQ(terminal_line("a\nb\rc\td\x7f"), "a\\nb\\rc\\td\\x7f");
  EXPECT_EQ(terminal_line("csi\xC2\x9B" "31m"), "csi\\u009b31m");  // C1 CSI, as UTF-8
  EXPECT_EQ(terminal_line("raw\x9b" "31m"), "raw\\x9b31m");       // and as a stray byte
  EXPECT_EQ(terminal_line("rev\xE2\x80\xAE" "txt\xE2\x81\xA6"), "rev\\u202etxt\\u2066");
  EXPECT_EQ(terminal_line("C:\\path µs ±"), "C:\\path µs ±");
  EXPECT_EQ(terminal_line(terminal_line("\x1b")), "\\x1b");  // escaping twice changes nothing more
  EXPECT_EQ(terminal_text("line 1\n\tline 2\x1b[0m\r\n"), "line 1\n\tline 2\\x1b[0m\\r\n");
}

// Each range of what a terminal acts on, at both ends and just outside: C1 U+0080-U+009F, the bidi embeddings and
// overrides U+202A-U+202E, the isolates U+2066-U+2069.
TEST(EscapeTerminal, EveryActedOnRangeIsEscapedToItsEnds) {
  EXPECT_EQ(terminal_line("\xC2\x80"
                          "a"
                          "\xC2\x9F"
                          "b"
                          "\xC2\xA0"),
            "\\u0080a\\u009fb\xC2\xA0");
  EXPECT_EQ(terminal_line("\xE2\x80\xA9"
                          "\xE2\x80\xAA"
                          "a"
                          "\xE2\x80\xAE"
                          "\xE2\x80\xAF"),
            "\xE2\x80\xA9\\u202aa\\u202e\xE2\x80\xAF");
  EXPECT_EQ(terminal_line("\xE2\x81\xA5"
                          "\xE2\x81\xA6"
                          "b"
                          "\xE2\x81\xA9"
                          "\xE2\x81\xAA"),
            "\xE2\x81\xA5\\u2066b\\u2069\xE2\x81\xAA");
  EXPECT_EQ(terminal_line(std::string("\x00\x1f\x20\x7e\x7f", 5)), "\\x00\\x1f ~\\x7f");
  for (const char* bidi : {"\xE2\x80\xAA", "\xE2\x81\xA9", "\xC2\x9F"}) {
    EXPECT_EQ(markdown_text(std::string("x") + bidi).find(bidi), std::string::npos) << "markdown keeps it out too";
  }
}

TEST(Digest, Sha256AndBase64MatchTheStandardVectors) {
  EXPECT_EQ(hex(torchprobe::sha256("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hex(torchprobe::sha256("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hex(torchprobe::sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(hex(torchprobe::sha256(std::string(1000000, 'a'))),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  EXPECT_EQ(torchprobe::base64(torchprobe::sha256("abc")), "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=");
  EXPECT_EQ(torchprobe::base64(""), "");
  EXPECT_EQ(torchprobe::base64("f"), "Zg==");
  EXPECT_EQ(torchprobe::base64("fo"), "Zm8=");
  EXPECT_EQ(torchprobe::base64("foo"), "Zm9v");
}

}  // namespace
