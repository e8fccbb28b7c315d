// Runtime ISA dispatch: the tier chosen, FRONTIER_ISA forcing and its errors, and the binary's promise to run on any
// x86-64 CPU: outside the tier folders no function the linker may share between translation units contains
// AVX/AVX-512 instructions, and the kernel test suites pass again with every tier this CPU supports forced.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>

#include "kernels/gemm.h"
#include "kernels/isa.h"
#include "test_util.h"

using namespace frontier;
using namespace frontier::testing;

TEST(Isa, BestTierIsTheHighestSupportedAndNamesParse) {
  const Isa best = best_isa();
  EXPECT_TRUE(isa_supported(best));
  for (Isa t : {Isa::kAvx2, Isa::kAvx512, Isa::kAvx512Bf16, Isa::kAmx})
    if (static_cast<int>(t) > static_cast<int>(best)) {
      EXPECT_FALSE(isa_supported(t)) << isa_name(t);
    }
  for (Isa t : {Isa::kRef, Isa::kAvx2, Isa::kAvx512, Isa::kAvx512Bf16, Isa::kAmx}) {
    Isa got;
    Status s = parse_isa(isa_name(t), &got);
    EXPECT_EQ(s.ok(), isa_supported(t)) << isa_name(t) << ": " << s.message();
    if (!s.ok()) {
      EXPECT_NE(s.message().find("this CPU lacks it"), std::string::npos) << s.message();
    }
  }
  Isa got;
  Status s = parse_isa("sse9", &got);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("choose one of ref, avx2, avx512, avx512bf16, amx"), std::string::npos) << s.message();
}

// The CLI: an unknown tier is a one-line error and exit 1; a supported one is printed by calibrate.
TEST(Isa, FrontierIsaEnvironmentForcesATierOrFailsClearly) {
  auto r = run_cmd("FRONTIER_ISA=sse9 " + frontier_bin() + " calibrate --threads 1");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.out.find("error: FRONTIER_ISA=sse9 is not a tier"), 0u) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  if (!isa_supported(Isa::kAvx512Bf16)) {
    r = run_cmd("FRONTIER_ISA=avx512bf16 " + frontier_bin() + " train --list-keys");
    EXPECT_EQ(r.rc, 1);
    EXPECT_NE(r.out.find("this CPU lacks it"), std::string::npos) << r.out;
  }
  r = run_cmd("FRONTIER_ISA=ref " + frontier_bin() + " train --list-keys");
  EXPECT_EQ(r.rc, 0) << r.out;
}

// One binary runs everywhere only if no code outside the tier folders executes a vector instruction the CPU may
// lack. Tier code lives in namespaces frontier::tier_<isa> or in functions with internal linkage; the danger is an
// inline or template function (external, "vague" linkage) compiled into a tier's file with its flags and then
// picked by the linker for everyone. So: every global or weak function in the binary that uses registers beyond the
// baseline (zmm over an AVX2 baseline, FRONTIER_ARCH=x86-64-v3; ymm or zmm over an SSE one) must be a tier entry
// point.
TEST(Isa, NoSharedFunctionOutsideTheTiersUsesAvx) {
  auto nm = run_cmd("nm -C --defined-only " + frontier_bin());
  ASSERT_EQ(nm.rc, 0) << "nm (binutils) is needed: " << nm.out;
  std::map<std::string, char> kind;  // demangled name -> nm type letter
  std::istringstream in(nm.out);
  for (std::string line; std::getline(in, line);) {
    if (line.size() < 20) continue;
    kind[line.substr(19)] = line[17];
  }
  auto od = run_cmd("objdump -d -C --no-show-raw-insn " + frontier_bin());
  ASSERT_EQ(od.rc, 0);
  std::set<std::string> offenders;
  std::string fn;
  int avx_functions = 0;
  std::istringstream dis(od.out);
  for (std::string line; std::getline(dis, line);) {
    if (line.size() > 19 && line.back() == ':' && line.find(" <") != std::string::npos) {
      fn = line.substr(line.find(" <") + 2);
      fn.resize(fn.size() - 2);  // ">:"
      continue;
    }
#ifdef FRONTIER_BASELINE_AVX2
    const bool beyond = line.find("%zmm") != std::string::npos || line.find("{%k") != std::string::npos;
#else
    const bool beyond = line.find("%ymm") != std::string::npos || line.find("%zmm") != std::string::npos;
#endif
    if (fn.empty() || !beyond) continue;
    const char k = kind.count(fn) ? kind[fn] : '?';
    const bool shared = k == 'T' || k == 'W' || k == 'V';
    const bool tier = fn.find("tier_") != std::string::npos || fn.find("peak_loop_") != std::string::npos ||
                      fn.find("vmath::impl_avx2") != std::string::npos || fn.find("vmath::impl_avx512") != std::string::npos;
    avx_functions++;
    if (shared && !tier) offenders.insert(fn);
    fn.clear();  // one report per function
  }
  EXPECT_GT(avx_functions, 0) << "no code beyond the baseline found at all: are the tier kernels compiled?";
  for (const auto& f : offenders) ADD_FAILURE() << "shared function with AVX outside the tiers: " << f;
}

// The kernel and model test suites again at every other tier this CPU supports (the default run covers the best
// one): each tier's kernels against the reference, end to end through attention, fused ops, the architecture
// variants' ops and the model (with its levers, against PyTorch).
TEST(Isa, KernelSuitesPassAtEveryTierThisCpuHas) {
  const std::string filter =
      "Gemm.*:FlashAttention*:FusedOps*:Ops*:GptTorch*:PolarExpress*:VariantOps*:EmbedOps*:MoeFast*:MoeReference*:"
      "VariantTorch.NanochatCurrent:VariantTorch.Swiglu:VariantTorch.MixtureOfExperts:VariantTorch.NgramTables";
  for (Isa t : {Isa::kRef, Isa::kAvx2, Isa::kAvx512, Isa::kAvx512Bf16, Isa::kAmx}) {
    if (!isa_supported(t) || t == best_isa()) continue;
    auto r = run_cmd(std::string("FRONTIER_ISA=") + isa_name(t) + " " + FRONTIER_TESTS_BINARY +
                     " --gtest_brief=1 --gtest_filter='" + filter + "'");
    EXPECT_EQ(r.rc, 0) << "tier " << isa_name(t) << ":\n" << r.out;
    EXPECT_NE(r.out.find("tier " + std::string(isa_name(t))), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("PASSED"), std::string::npos) << r.out;
  }
}
