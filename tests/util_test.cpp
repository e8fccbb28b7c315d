#include <random>

#include "test_util.h"
#include "util/base64.h"
#include "util/file.h"
#include "util/sha256.h"
#include "util/utf8.h"

using namespace frontier;
using namespace frontier::testing;

TEST(Base64, RoundTripAndRfcVectors) {
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_encode("f"), "Zg==");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
  std::string out;
  EXPECT_TRUE(base64_decode("Zm9vYg==", &out));
  EXPECT_EQ(out, "foob");
  EXPECT_FALSE(base64_decode("Zm9", &out));
  EXPECT_FALSE(base64_decode("Zm=v", &out));
  std::mt19937 rng(1);
  for (int t = 0; t < 200; t++) {
    std::string s(rng() % 40, 0);
    for (auto& c : s) c = static_cast<char>(rng());
    ASSERT_TRUE(base64_decode(base64_encode(s), &out));
    ASSERT_EQ(out, s);
  }
}

TEST(Sha256, KnownVector) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Utf8, ValidAndInvalid) {
  EXPECT_EQ(utf8_first_invalid("plain ascii text, long enough for the fast path"), std::string::npos);
  EXPECT_EQ(utf8_first_invalid("caf\xC3\xA9 \xF0\x9F\x98\x80"), std::string::npos);
  EXPECT_EQ(utf8_first_invalid("ab\xC0\xAF"), 2u);          // overlong
  EXPECT_EQ(utf8_first_invalid("\xED\xA0\x80"), 0u);        // surrogate
  EXPECT_EQ(utf8_first_invalid("x\xF4\x90\x80\x80"), 1u);   // > U+10FFFF
  EXPECT_EQ(utf8_first_invalid("abcdefgh\xE2\x82"), 8u);    // truncated
}

// The replacement rule must be WHATWG's (maximal subparts), which is also Python's errors="replace": compare with
// python3 on random byte strings heavy in UTF-8 lead and continuation bytes.
TEST(Utf8, ReplacementMatchesPython) {
  std::mt19937 rng(7);
  std::string dir = make_temp_dir("utf8");
  std::string inputs;
  std::vector<std::string> cases;
  const unsigned char pool[] = {'a', ' ', 0x80, 0x8F, 0x90, 0xA0, 0xBF, 0xC0, 0xC2, 0xDF, 0xE0, 0xED,
                                0xEF, 0xF0, 0xF4, 0xF5, 0xFF, 0x9F, 0xC3, 0xA9, 0xE2, 0x82, 0xAC};
  for (int t = 0; t < 300; t++) {
    std::string s(1 + rng() % 12, 0);
    for (auto& c : s) c = static_cast<char>(pool[rng() % sizeof(pool)]);
    cases.push_back(s);
    inputs += base64_encode(s) + "\n";
  }
  write_text(dir + "/in.txt", inputs);
  auto r = run_cmd("python3 -c \"import sys,base64\nfor l in open(sys.argv[1]):\n"
                   "  print(base64.b64encode(base64.b64decode(l.strip()).decode('utf-8','replace').encode()).decode())\" " +
                   dir + "/in.txt");
  ASSERT_EQ(r.rc, 0) << r.out;
  std::istringstream lines(r.out);
  std::string line, want;
  for (const auto& c : cases) {
    ASSERT_TRUE(std::getline(lines, line));
    ASSERT_TRUE(base64_decode(line, &want));
    EXPECT_EQ(utf8_replace_invalid(c), want) << base64_encode(c);
    EXPECT_EQ(utf8_first_invalid(utf8_replace_invalid(c)), std::string::npos);
  }
  std::filesystem::remove_all(dir);
}

TEST(AtomicFile, UncommittedLeavesNothing) {
  std::string dir = make_temp_dir("atomic");
  {
    AtomicFile f;
    ASSERT_TRUE(f.open(dir + "/x.bin").ok());
    ASSERT_TRUE(f.write("abc", 3).ok());
  }  // destroyed without commit, as when a run is interrupted
  EXPECT_FALSE(file_exists(dir + "/x.bin"));
  EXPECT_FALSE(file_exists(dir + "/x.bin.tmp"));
  ASSERT_TRUE(write_file_atomic(dir + "/y.bin", "hello").ok());
  std::string s;
  ASSERT_TRUE(read_file(dir + "/y.bin", &s).ok());
  EXPECT_EQ(s, "hello");
  EXPECT_FALSE(write_file_atomic("/nonexistent_dir/z", "x").ok());
  std::filesystem::remove_all(dir);
}
