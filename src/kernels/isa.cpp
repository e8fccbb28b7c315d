#include "kernels/isa.h"

#include <cpuid.h>
#include <cpuinfo.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "kernels/gemm.h"

extern "C" int frontier_baseline_check_linked();  // isa_baseline_check.cpp

namespace frontier {

namespace {
std::atomic<int> g_active{-1};

// AMX: cpuid leaf 7 (EDX bit 24 AMX-TILE, bit 22 AMX-BF16), the OS saving tile state (XCR0 bits 17 and 18), and
// this process granted the tile data (Linux >= 5.16: arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA); without
// it the first tile instruction faults). Asked once, at detection.
bool detect_amx() {
  unsigned a, b, c, d;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  if (!(d & (1u << 24)) || !(d & (1u << 22))) return false;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return false;  // OSXSAVE
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if ((lo & (3u << 17)) != (3u << 17)) return false;
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}
std::once_flag g_init;
}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = [] {
    CpuFeatures c;
    if (!cpuinfo_initialize()) return c;  // unknown CPU: the reference tier only
    c.avx2_fma = cpuinfo_has_x86_avx2() && cpuinfo_has_x86_fma3();
    c.avx512 = cpuinfo_has_x86_avx512f() && cpuinfo_has_x86_avx512bw() && cpuinfo_has_x86_avx512vl() &&
               cpuinfo_has_x86_avx512dq();
    c.avx512bf16 = c.avx512 && cpuinfo_has_x86_avx512bf16();
    c.amx = c.avx512bf16 && detect_amx();
    const cpuinfo_package* p = cpuinfo_get_package(0);
    if (p) c.cpu_name = p->name;
    if (const cpuinfo_cache* l1 = cpuinfo_get_l1d_cache(0)) c.l1d_kb = static_cast<int>(l1->size / 1024);
    if (const cpuinfo_cache* l2 = cpuinfo_get_l2_cache(0)) c.l2_kb = static_cast<int>(l2->size / 1024);
    if (const cpuinfo_cache* l3 = cpuinfo_get_l3_cache(0)) c.l3_kb = static_cast<int>(l3->size / 1024);
    c.cores = static_cast<int>(cpuinfo_get_cores_count());
    return c;
  }();
  return f;
}

const char* isa_name(Isa t) {
  switch (t) {
    case Isa::kRef: return "ref";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
    case Isa::kAvx512Bf16: return "avx512bf16";
    case Isa::kAmx: return "amx";
  }
  return "?";
}

bool isa_supported(Isa t) {
  const CpuFeatures& f = cpu_features();
  switch (t) {
    case Isa::kRef: return true;
    case Isa::kAvx2: return f.avx2_fma;
    case Isa::kAvx512: return f.avx2_fma && f.avx512;
    case Isa::kAvx512Bf16: return f.avx2_fma && f.avx512bf16;
    case Isa::kAmx: return f.avx2_fma && f.avx512bf16 && f.amx;
  }
  return false;
}

Isa best_isa() {
  for (Isa t : {Isa::kAmx, Isa::kAvx512Bf16, Isa::kAvx512, Isa::kAvx2})
    if (isa_supported(t)) return t;
  return Isa::kRef;
}

std::string cpu_feature_list() {
  const CpuFeatures& f = cpu_features();
  std::string s;
  if (f.avx2_fma) s += "avx2 fma";
  if (f.avx512) s += " avx512(f,bw,vl,dq)";
  if (f.avx512bf16) s += " avx512bf16";
  if (f.amx) s += " amx(tile,bf16)";
  return s.empty() ? "none of avx2/avx512" : s;
}

Status parse_isa(const std::string& name, Isa* out) {
  for (Isa t : {Isa::kRef, Isa::kAvx2, Isa::kAvx512, Isa::kAvx512Bf16, Isa::kAmx}) {
    if (name != isa_name(t)) continue;
    if (!isa_supported(t))
      return Status::error("FRONTIER_ISA=" + name + " but this CPU lacks it (it has: " + cpu_feature_list() +
                           "); unset FRONTIER_ISA or choose a tier up to " + isa_name(best_isa()));
    *out = t;
    return ok_status();
  }
  return Status::error("FRONTIER_ISA=" + name + " is not a tier; choose one of ref, avx2, avx512, avx512bf16, amx");
}

Status isa_from_env(Isa* out) {
  const char* env = std::getenv("FRONTIER_ISA");
  if (!env || !*env) {
    *out = best_isa();
    return ok_status();
  }
  return parse_isa(env, out);
}

void isa_init_or_exit() {
  std::call_once(g_init, [] {
    FRONTIER_CHECK(frontier_baseline_check_linked() == 1);
    Isa t;
    Status s = isa_from_env(&t);
    if (!s.ok()) {
      std::fprintf(stderr, "error: %s\n", s.message().c_str());
      std::exit(1);
    }
    int expected = -1;
    g_active.compare_exchange_strong(expected, static_cast<int>(t));
  });
}

Isa active_isa() {
  int v = g_active.load(std::memory_order_relaxed);
  if (v < 0) {
    isa_init_or_exit();
    v = g_active.load();
  }
  return static_cast<Isa>(v);
}

void set_active_isa(Isa t) {
  FRONTIER_CHECK(isa_supported(t));
  isa_init_or_exit();
  g_active.store(static_cast<int>(t));
}

std::string kernels_banner() {
  std::string s = std::string("kernels: ") + isa_name(active_isa()) + " (fp32 gemm: " +
                  gemm_kernel(Precision::kFp32).name + ", bf16 gemm: " + gemm_kernel(Precision::kBf16).name + ")";
  const CpuFeatures& f = cpu_features();
  if (!f.cpu_name.empty()) s += " cpu: " + f.cpu_name;
  return s;
}

}  // namespace frontier
