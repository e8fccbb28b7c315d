// The library outside src/kernels/<tier>/ is compiled for FRONTIER_ARCH (CMakeLists.txt; default x86-64-v3, i.e.
// AVX2 + FMA + BMI2). On a CPU below that baseline, any function may hold an instruction the CPU lacks, so this file
// alone is compiled for plain x86-64 and checks the CPU in a constructor that runs before main and before the other
// static initialisers (priority 101): a one-line error and exit 1 instead of SIGILL somewhere later.
#include <cstdio>
#include <cstdlib>

namespace {

__attribute__((constructor(101))) void frontier_check_baseline_isa() {
#if defined(FRONTIER_BASELINE_AVX2) && defined(__x86_64__)
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") || !__builtin_cpu_supports("bmi2")) {
    std::fputs("error: this Frontier binary was built for x86-64-v3 (AVX2, FMA, BMI2) and this CPU lacks them; "
               "rebuild with cmake -DFRONTIER_ARCH=x86-64-v2\n", stderr);
    std::_Exit(1);
  }
#endif
}

}  // namespace

// Referenced from isa.cpp so that the linker keeps this object (and its constructor) from the static library.
extern "C" int frontier_baseline_check_linked() { return 1; }
