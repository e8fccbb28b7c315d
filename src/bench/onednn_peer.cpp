#include "bench/onednn_peer.h"

#include <dlfcn.h>
#include <oneapi/dnnl/dnnl.h>  // types, enums and prototypes only: every call goes through dlsym'd pointers
#include <oneapi/dnnl/dnnl_debug.h>  // dnnl_status2str

#include <cstdio>
#include <type_traits>
#include <utility>
#include <vector>

#include "util/bf16.h"

namespace frontier {

namespace {

// The oneDNN C API functions we use, resolved with dlsym. decltype of the prototypes keeps the signatures
// exact without referencing the symbols (so nothing links against libdnnl).
struct DnnlApi {
#define FRONTIER_DNNL_FN(name) decltype(&::name) name = nullptr
  FRONTIER_DNNL_FN(dnnl_version);
  FRONTIER_DNNL_FN(dnnl_engine_create);
  FRONTIER_DNNL_FN(dnnl_engine_destroy);
  FRONTIER_DNNL_FN(dnnl_stream_create);
  FRONTIER_DNNL_FN(dnnl_stream_wait);
  FRONTIER_DNNL_FN(dnnl_stream_destroy);
  FRONTIER_DNNL_FN(dnnl_memory_desc_init_by_strides);
  FRONTIER_DNNL_FN(dnnl_memory_create);
  FRONTIER_DNNL_FN(dnnl_memory_set_data_handle);
  FRONTIER_DNNL_FN(dnnl_memory_destroy);
  FRONTIER_DNNL_FN(dnnl_matmul_desc_init);
  FRONTIER_DNNL_FN(dnnl_primitive_desc_create);
  FRONTIER_DNNL_FN(dnnl_primitive_desc_query);
  FRONTIER_DNNL_FN(dnnl_primitive_desc_destroy);
  FRONTIER_DNNL_FN(dnnl_primitive_create);
  FRONTIER_DNNL_FN(dnnl_primitive_execute);
  FRONTIER_DNNL_FN(dnnl_primitive_destroy);
#undef FRONTIER_DNNL_FN
  decltype(&::dnnl_status2str) status2str = nullptr;  // dnnl_debug.h; optional (messages only)
};

std::string dnnl_status_text(const DnnlApi& api, dnnl_status_t st) {
  if (api.status2str) return api.status2str(st);
  return "status " + std::to_string(static_cast<int>(st));
}

}  // namespace

struct OneDnnMatmul::State {
  DnnlApi api;
  std::string path, error;
  dnnl_engine_t engine = nullptr;
  dnnl_stream_t stream = nullptr;
  // The prepared problem.
  dnnl_primitive_t prim = nullptr;
  dnnl_memory_t src = nullptr, weights = nullptr, dst = nullptr;
  std::vector<uint16_t> a16;  // op(A)'s storage in bf16: (M, lda) or, trans_a, (K, lda)
  std::vector<uint16_t> b16;  // op(B)'s storage in bf16: (K, ldb) or, trans_b, (N, ldb)
  std::string impl;

  // OK if st is dnnl_success, else "oneDNN <call> failed: <status>".
  Status check(dnnl_status_t st, const char* call) const {
    if (st == dnnl_success) return ok_status();
    return Status::error(std::string("oneDNN ") + call + " failed: " + dnnl_status_text(api, st));
  }

  void release_problem() {
    if (prim) api.dnnl_primitive_destroy(prim);
    for (dnnl_memory_t m : {src, weights, dst})
      if (m) api.dnnl_memory_destroy(m);
    prim = nullptr;
    src = weights = dst = nullptr;
    a16.clear();
    b16.clear();
    impl.clear();
  }

  ~State() {
    if (!error.empty()) return;  // the API may be incomplete; nothing was created
    release_problem();
    if (stream) api.dnnl_stream_destroy(stream);
    if (engine) api.dnnl_engine_destroy(engine);
  }
};

OneDnnMatmul::OneDnnMatmul(const std::string& library) : s_(std::make_unique<State>()) {
  State& s = *s_;
  std::vector<std::string> names = {library};
  if (library.empty()) names = {"libdnnl.so.2", "libdnnl.so"};
  void* h = nullptr;
  for (const std::string& name : names) {
    h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h) {
      s.path = name;
      break;
    }
  }
  if (!h) {
    const char* why = dlerror();
    s.error = "oneDNN not found (dlopen " + names[0] + (names.size() > 1 ? " / " + names[1] : "") + ": " +
              (why ? why : "?") + "); install libdnnl-dev with scripts/install_deps.sh";
    return;
  }
  DnnlApi& a = s.api;
  std::string missing;
  auto resolve = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name));
    if (!fn) missing += std::string(missing.empty() ? "" : ", ") + name;
  };
#define FRONTIER_DNNL_RESOLVE(name) resolve(a.name, #name)
  FRONTIER_DNNL_RESOLVE(dnnl_version);
  FRONTIER_DNNL_RESOLVE(dnnl_engine_create);
  FRONTIER_DNNL_RESOLVE(dnnl_engine_destroy);
  FRONTIER_DNNL_RESOLVE(dnnl_stream_create);
  FRONTIER_DNNL_RESOLVE(dnnl_stream_wait);
  FRONTIER_DNNL_RESOLVE(dnnl_stream_destroy);
  FRONTIER_DNNL_RESOLVE(dnnl_memory_desc_init_by_strides);
  FRONTIER_DNNL_RESOLVE(dnnl_memory_create);
  FRONTIER_DNNL_RESOLVE(dnnl_memory_set_data_handle);
  FRONTIER_DNNL_RESOLVE(dnnl_memory_destroy);
  FRONTIER_DNNL_RESOLVE(dnnl_matmul_desc_init);
  FRONTIER_DNNL_RESOLVE(dnnl_primitive_desc_create);
  FRONTIER_DNNL_RESOLVE(dnnl_primitive_desc_query);
  FRONTIER_DNNL_RESOLVE(dnnl_primitive_desc_destroy);
  FRONTIER_DNNL_RESOLVE(dnnl_primitive_create);
  FRONTIER_DNNL_RESOLVE(dnnl_primitive_execute);
  FRONTIER_DNNL_RESOLVE(dnnl_primitive_destroy);
#undef FRONTIER_DNNL_RESOLVE
  a.status2str = reinterpret_cast<decltype(a.status2str)>(dlsym(h, "dnnl_status2str"));
  if (!missing.empty()) {
    s.error = s.path + " lacks " + missing + " (oneDNN 2.x C API expected; Debian 12's libdnnl-dev is 2.6)";
    return;
  }
  Status st = s.check(a.dnnl_engine_create(&s.engine, dnnl_cpu, 0), "dnnl_engine_create(cpu)");
  if (st.ok())
    st = s.check(a.dnnl_stream_create(&s.stream, s.engine, dnnl_stream_default_flags), "dnnl_stream_create");
  if (!st.ok()) {
    if (s.engine) a.dnnl_engine_destroy(s.engine);
    s.engine = nullptr;
    s.error = st.message();
  }
}

OneDnnMatmul::~OneDnnMatmul() = default;
OneDnnMatmul::OneDnnMatmul(OneDnnMatmul&&) noexcept = default;
OneDnnMatmul& OneDnnMatmul::operator=(OneDnnMatmul&&) noexcept = default;

bool OneDnnMatmul::available() const {
  return s_ && s_->error.empty();
}
const std::string& OneDnnMatmul::error() const {
  static const std::string moved = "OneDnnMatmul was moved from";
  return s_ ? s_->error : moved;
}
std::string OneDnnMatmul::path() const {
  return s_ ? s_->path : "";
}

std::string OneDnnMatmul::description() const {
  if (!available()) return "oneDNN (unavailable)";
  const dnnl_version_t* v = s_->api.dnnl_version();
  const char* runtime = v->cpu_runtime == DNNL_RUNTIME_OMP          ? "OpenMP"
                        : v->cpu_runtime == DNNL_RUNTIME_TBB        ? "TBB"
                        : v->cpu_runtime == DNNL_RUNTIME_SEQ        ? "sequential"
                        : v->cpu_runtime == DNNL_RUNTIME_THREADPOOL ? "threadpool"
                                                                    : "unknown";
  char buf[256];
  std::snprintf(buf, sizeof(buf), "oneDNN %d.%d.%d (%s, %s runtime)", v->major, v->minor, v->patch,
                s_->path.c_str(), runtime);
  return buf;
}

std::string OneDnnMatmul::impl() const {
  return s_ ? s_->impl : "";
}

Status OneDnnMatmul::prepare(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A,
                             int64_t lda, const float* B, int64_t ldb, int64_t ldc) {
  if (!available()) return Status::error(error());
  State& s = *s_;
  const DnnlApi& a = s.api;
  if (M <= 0 || N <= 0 || K <= 0) return Status::error("OneDnnMatmul::prepare: M, N, K must be positive");
  if (lda < (trans_a ? M : K) || ldb < (trans_b ? K : N) || ldc < N)
    return Status::error("OneDnnMatmul::prepare: a leading dimension is below its row length");
  s.release_problem();

  // bf16 copies in the callers' layouts (same leading dimensions; the gaps between rows stay zero).
  const int64_t a_rows = trans_a ? K : M, a_cols = trans_a ? M : K;
  const int64_t b_rows = trans_b ? N : K, b_cols = trans_b ? K : N;
  s.a16.assign(static_cast<size_t>(a_rows * lda), 0);
  s.b16.assign(static_cast<size_t>(b_rows * ldb), 0);
  for (int64_t r = 0; r < a_rows; r++)
    for (int64_t c = 0; c < a_cols; c++) s.a16[r * lda + c] = to_bf16(A[r * lda + c]);
  for (int64_t r = 0; r < b_rows; r++)
    for (int64_t c = 0; c < b_cols; c++) s.b16[r * ldb + c] = to_bf16(B[r * ldb + c]);

  // Logical shapes src (M, K), weights (K, N), dst (M, N); the transposes are only strides.
  const dnnl_dims_t src_dims = {M, K}, wei_dims = {K, N}, dst_dims = {M, N};
  const dnnl_dims_t src_strides = {trans_a ? 1 : lda, trans_a ? lda : 1};
  const dnnl_dims_t wei_strides = {trans_b ? 1 : ldb, trans_b ? ldb : 1};
  const dnnl_dims_t dst_strides = {ldc, 1};
  dnnl_memory_desc_t src_md, wei_md, dst_md;
  FRONTIER_RETURN_IF_ERROR(
      s.check(a.dnnl_memory_desc_init_by_strides(&src_md, 2, src_dims, dnnl_bf16, src_strides),
              "dnnl_memory_desc_init_by_strides(src)"));
  FRONTIER_RETURN_IF_ERROR(
      s.check(a.dnnl_memory_desc_init_by_strides(&wei_md, 2, wei_dims, dnnl_bf16, wei_strides),
              "dnnl_memory_desc_init_by_strides(weights)"));
  FRONTIER_RETURN_IF_ERROR(
      s.check(a.dnnl_memory_desc_init_by_strides(&dst_md, 2, dst_dims, dnnl_f32, dst_strides),
              "dnnl_memory_desc_init_by_strides(dst)"));
  dnnl_matmul_desc_t desc;
  FRONTIER_RETURN_IF_ERROR(
      s.check(a.dnnl_matmul_desc_init(&desc, &src_md, &wei_md, nullptr, &dst_md), "dnnl_matmul_desc_init"));
  dnnl_primitive_desc_t pd = nullptr;
  FRONTIER_RETURN_IF_ERROR(s.check(a.dnnl_primitive_desc_create(&pd, &desc, nullptr, s.engine, nullptr),
                                   "dnnl_primitive_desc_create"));
  const char* impl = nullptr;
  if (a.dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl)
    s.impl = impl;
  Status st = s.check(a.dnnl_primitive_create(&s.prim, pd), "dnnl_primitive_create");
  a.dnnl_primitive_desc_destroy(pd);
  if (st.ok())
    st = s.check(a.dnnl_memory_create(&s.src, &src_md, s.engine, s.a16.data()), "dnnl_memory_create(src)");
  if (st.ok())
    st = s.check(a.dnnl_memory_create(&s.weights, &wei_md, s.engine, s.b16.data()),
                 "dnnl_memory_create(weights)");
  if (st.ok())
    st =
        s.check(a.dnnl_memory_create(&s.dst, &dst_md, s.engine, DNNL_MEMORY_NONE), "dnnl_memory_create(dst)");
  if (!st.ok()) s.release_problem();
  return st;
}

Status OneDnnMatmul::run(float* C) {
  if (!available()) return Status::error(error());
  State& s = *s_;
  if (!s.prim) return Status::error("OneDnnMatmul::run: no problem prepared (call prepare first)");
  FRONTIER_RETURN_IF_ERROR(
      s.check(s.api.dnnl_memory_set_data_handle(s.dst, C), "dnnl_memory_set_data_handle(dst)"));
  const dnnl_exec_arg_t args[] = {
      {DNNL_ARG_SRC, s.src}, {DNNL_ARG_WEIGHTS, s.weights}, {DNNL_ARG_DST, s.dst}};
  FRONTIER_RETURN_IF_ERROR(
      s.check(s.api.dnnl_primitive_execute(s.prim, s.stream, 3, args), "dnnl_primitive_execute"));
  return s.check(s.api.dnnl_stream_wait(s.stream), "dnnl_stream_wait");
}

}  // namespace frontier
