// The C API: argument checking in the caller's terms, then the dispatcher.
// No exception crosses this boundary; failures become a status plus a
// thread-local message.
#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <optional>
#include <string>
#include <thread>

#include "cache/cache_tiers.hpp"
#include "convjit/convjit.h"
#include "dispatcher/backends/jit/jit_module_cache.hpp"
#include "dispatcher/backends/jit/nvrtc_library.hpp"
#include "dispatcher/c_api/api_call.hpp"
#include "dispatcher/c_api/api_guard.hpp"
#include "dispatcher/c_api/c_enum.hpp"
#include "dispatcher/cuda/gpu_arch.hpp"
#include "dispatcher/descriptor/descriptor_builder.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "dispatcher/descriptor/descriptor_validation.hpp"
#include "dispatcher/dispatcher.hpp"
#include "dispatcher/preload/collective_preload.hpp"
#include "dispatcher/rules/active_rules.hpp"
#include "dispatcher/settings.hpp"
#include "version.hpp"

using namespace convjit;

namespace {

Direction conv_direction(convjit_conv_direction_t direction) {
  switch (direction) {
    case CONVJIT_CONV_BWDDATA:
      return Direction::bwddata;
    case CONVJIT_CONV_BWDFILT:
      return Direction::bwdfilt;
    default:
      return Direction::fwd;
  }
}

Status check_conv_direction(const convjit_conv_direction_t& direction) {
  if (const int raw = raw_c_enum(direction); raw < CONVJIT_CONV_FWD || raw > CONVJIT_CONV_BWDFILT)
    return Status::invalid(fmt::format("direction = {} is not a convjit_conv_direction_t", raw));
  return Status::ok();
}

// Each requested gradient is validated in its own role, as the standalone
// call computing it would: dy is an input to all three, so it may have any
// non-negative strides (PyTorch's gradient of y.sum() is an expanded,
// zero-stride tensor), and only a written tensor must not overlap.  With
// nothing requested the shapes are still checked, as for dx.
Status check_backward_roles(const convjit_conv_params_t* params,
                            const convjit_tensor_desc_t* x_desc,
                            const convjit_tensor_desc_t* w_desc,
                            const convjit_tensor_desc_t* dy_desc, unsigned grad_mask) {
  const bool want_dw = (grad_mask & CONVJIT_GRAD_WEIGHT) != 0;
  if ((grad_mask & CONVJIT_GRAD_INPUT) != 0 || !want_dw)
    if (auto dx = make_conv_descriptor(params, Direction::bwddata, x_desc, w_desc, dy_desc);
        !dx.is_ok())
      return dx.status();
  if (want_dw)
    if (auto dw = make_conv_descriptor(params, Direction::bwdfilt, x_desc, w_desc, dy_desc);
        !dw.is_ok())
      return dw.status();
  if ((grad_mask & CONVJIT_GRAD_BIAS) != 0)
    if (auto db = make_bias_grad_descriptor(dy_desc); !db.is_ok()) return db.status();
  return Status::ok();
}

}  // namespace

extern "C" {

const char* convjit_version_string(void) { return kVersionString; }

const char* convjit_status_string(convjit_status_t status) {
  switch (raw_c_enum(status)) {
    case CONVJIT_STATUS_SUCCESS:
      return "success";
    case CONVJIT_STATUS_INVALID_ARGUMENT:
      return "invalid argument";
    case CONVJIT_STATUS_UNSUPPORTED:
      return "unsupported";
    case CONVJIT_STATUS_NOT_AVAILABLE:
      return "not available";
    case CONVJIT_STATUS_OUT_OF_MEMORY:
      return "out of memory";
    case CONVJIT_STATUS_EXECUTION_FAILED:
      return "execution failed";
    case CONVJIT_STATUS_INTERNAL_ERROR:
      return "internal error";
  }
  return "unknown status";
}

const char* convjit_last_error_message(void) { return last_error_message().c_str(); }

const char* convjit_last_backend(void) { return last_backend(); }

namespace {
std::optional<std::string> optional_text(const char* text) {
  return text ? std::optional<std::string>(text) : std::nullopt;
}

// A log or record file the caller names must be appendable now: later
// writes happen deep inside calls that cannot report a failure.  Tried by
// opening it; a file created for the try is removed again, so nothing
// appears on disk until something is written.
Status check_appendable(const char* path, const char* what) {
  if (path == nullptr) return Status::ok();
  if (*path == '\0')
    return Status::invalid(fmt::format("the {} path is empty; pass NULL for the default", what));
  int fd = ::open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  const bool created = fd >= 0;
  if (!created && errno == EEXIST) fd = ::open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0)
    return Status::invalid(
        fmt::format("cannot open the {} {} for appending: {}; pass a writable "
                    "path",
                    what, path, std::strerror(errno)));
  ::close(fd);
  if (created) ::unlink(path);
  return Status::ok();
}
}  // namespace

convjit_status_t convjit_set_cache_path(const char* search_path) {
  return guarded([&]() -> Status {
    if (search_path != nullptr && split_search_path(search_path).empty())
      return Status::invalid("the cache path lists no directory; pass NULL for the default");
    SettingsStore::instance().set_cache_path(optional_text(search_path));
    return Status::ok();
  });
}

convjit_status_t convjit_set_local_cache_path(const char* path) {
  return guarded([&]() -> Status {
    if (path == nullptr) {
      SettingsStore::instance().set_local_cache_path(std::nullopt);
      return Status::ok();
    }
    const std::string_view text(path);
    if (text != "none" && (text.empty() || text.front() != '/'))
      return Status::invalid(fmt::format(
          "local cache path '{}' is neither an absolute path nor \"none\"; pass NULL for the "
          "default",
          text));
    SettingsStore::instance().set_local_cache_path(text == "none" ? "" : std::string(text));
    return Status::ok();
  });
}

convjit_status_t convjit_set_verbose(int level) {
  return guarded([&]() -> Status {
    if (level > 2) return Status::invalid(fmt::format("verbose level {} is not 0, 1 or 2", level));
    SettingsStore::instance().set_verbose(level < 0 ? std::nullopt : std::optional<int>(level));
    return Status::ok();
  });
}

convjit_status_t convjit_set_log_file(const char* path) {
  return guarded([&] {
    if (Status s = check_appendable(path, "log file"); !s.is_ok()) return s;
    SettingsStore::instance().set_log_file(optional_text(path));
    return Status::ok();
  });
}

convjit_status_t convjit_set_record_file(const char* path) {
  return guarded([&] {
    if (Status s = check_appendable(path, "record file"); !s.is_ok()) return s;
    SettingsStore::instance().set_record_file(optional_text(path));
    return Status::ok();
  });
}

convjit_status_t convjit_set_policy(const char* policy) {
  return guarded([&]() -> Status {
    if (policy == nullptr) {
      SettingsStore::instance().set_policy(std::nullopt);
      return Status::ok();
    }
    const auto parsed = parse_policy(policy);
    if (!parsed)
      return Status::invalid(fmt::format(
          "policy '{}' is not one of auto, jit, cudnn, onednn, reference, tuned, emulate", policy));
    SettingsStore::instance().set_policy(parsed);
    return Status::ok();
  });
}

convjit_status_t convjit_set_arch(const char* arch) {
  return guarded([&]() -> Status {
    if (arch != nullptr && !is_valid_arch(arch))
      return Status::invalid(fmt::format("arch '{}' is not of the form sm_XX (e.g. sm_90)", arch));
    SettingsStore::instance().set_arch(optional_text(arch));
    return Status::ok();
  });
}

convjit_status_t convjit_set_rules_file(const char* paths) {
  return guarded([&]() -> Status {
    if (paths == nullptr) {
      SettingsStore::instance().set_rules_files(std::nullopt);
      return Status::ok();
    }
    if (Status s = rules::ActiveRules::instance().install(split_search_path(paths)); !s.is_ok())
      return s;
    SettingsStore::instance().set_rules_files(std::string(paths));
    return Status::ok();
  });
}

convjit_status_t convjit_set_allow_tf32(int allow) {
  return guarded([&]() -> Status {
    if (allow > 1) return Status::invalid(fmt::format("allow_tf32 {} is not 0 or 1", allow));
    SettingsStore::instance().set_allow_tf32(allow < 0 ? std::nullopt
                                                       : std::optional<bool>(allow == 1));
    return Status::ok();
  });
}

convjit_status_t convjit_rescan(void) {
  return guarded([] {
    Dispatcher::instance().rescan();
    return Status::ok();
  });
}

convjit_status_t convjit_tensor_desc_init(convjit_tensor_desc_t* desc, convjit_dtype_t dtype,
                                          int rank, const int64_t* dims, convjit_layout_t layout) {
  return guarded([&]() -> Status {
    if (desc == nullptr || dims == nullptr) return Status::invalid("desc or dims is NULL");
    if (rank < 3 || rank > kMaxRank)
      return Status::invalid(fmt::format("rank = {} must be 3, 4 or 5", rank));
    if (const int raw = raw_c_enum(dtype); !is_valid_dtype(raw))
      return Status::invalid(fmt::format("dtype = {} is not a convjit_dtype_t", raw));
    if (const int raw = raw_c_enum(layout);
        raw != CONVJIT_LAYOUT_NCHW && raw != CONVJIT_LAYOUT_NHWC)
      return Status::invalid(fmt::format("layout = {} is not a convjit_layout_t", raw));
    Dims5 d{};
    int64_t count = 1;
    for (int i = 0; i < rank; ++i) {
      if (dims[i] <= 0)
        return Status::invalid(fmt::format("dims[{}] = {} must be positive", i, dims[i]));
      if (__builtin_mul_overflow(count, dims[i], &count))
        return Status::invalid("the element count of dims overflows 64 bits");
      d[static_cast<size_t>(i)] = dims[i];
    }
    const Dims5 strides = contiguous_strides(d, rank, layout == CONVJIT_LAYOUT_NHWC);
    *desc = convjit_tensor_desc_t{};
    desc->dtype = dtype;
    desc->rank = rank;
    for (int i = 0; i < rank; ++i) {
      desc->dims[i] = d[static_cast<size_t>(i)];
      desc->strides[i] = strides[static_cast<size_t>(i)];
    }
    return Status::ok();
  });
}

convjit_status_t convjit_conv_params_init(convjit_conv_params_t* params, int spatial_dims) {
  return guarded([&]() -> Status {
    if (params == nullptr) return Status::invalid("params is NULL");
    if (spatial_dims < 1 || spatial_dims > kMaxSpatialDims)
      return Status::invalid(fmt::format("spatial_dims = {} must be 1, 2 or 3", spatial_dims));
    *params = convjit_conv_params_t{};
    params->spatial_dims = spatial_dims;
    params->groups = 1;
    for (int i = 0; i < spatial_dims; ++i) params->stride[i] = params->dilation[i] = 1;
    return Status::ok();
  });
}

convjit_status_t convjit_pool_params_init(convjit_pool_params_t* params, int spatial_dims,
                                          convjit_pool_mode_t mode) {
  return guarded([&]() -> Status {
    if (params == nullptr) return Status::invalid("params is NULL");
    if (spatial_dims < 1 || spatial_dims > kMaxSpatialDims)
      return Status::invalid(fmt::format("spatial_dims = {} must be 1, 2 or 3", spatial_dims));
    if (const int raw = raw_c_enum(mode);
        raw < CONVJIT_POOL_MAX || raw > CONVJIT_POOL_AVG_INCLUDE_PAD)
      return Status::invalid(fmt::format(
          "mode = {} is not a convjit_pool_mode_t (CONVJIT_POOL_MAX, CONVJIT_POOL_AVG_EXCLUDE_PAD "
          "or CONVJIT_POOL_AVG_INCLUDE_PAD)",
          raw));
    *params = convjit_pool_params_t{};
    params->spatial_dims = spatial_dims;
    params->mode = mode;
    for (int i = 0; i < spatial_dims; ++i)
      params->window[i] = params->stride[i] = params->dilation[i] = 1;
    return Status::ok();
  });
}

convjit_status_t convjit_conv_output_dims(const convjit_conv_params_t* params,
                                          const convjit_tensor_desc_t* x_desc,
                                          const convjit_tensor_desc_t* w_desc, int64_t* y_dims) {
  return guarded([&] {
    return write_dims(make_conv_descriptor(params, Direction::fwd, x_desc, w_desc, nullptr),
                      y_dims);
  });
}

convjit_status_t convjit_pool_output_dims(const convjit_pool_params_t* params,
                                          const convjit_tensor_desc_t* x_desc, int ceil_mode,
                                          int64_t* y_dims) {
  return guarded([&] {
    return write_dims(make_pool_descriptor(params, Direction::fwd, x_desc, nullptr, ceil_mode != 0),
                      y_dims);
  });
}

convjit_status_t convjit_conv_descriptor_name(const convjit_conv_params_t* params,
                                              convjit_conv_direction_t direction,
                                              const convjit_tensor_desc_t* x_desc,
                                              const convjit_tensor_desc_t* w_desc,
                                              const convjit_tensor_desc_t* y_desc,
                                              int symbolic_batch, char* buf, size_t buf_size,
                                              size_t* required) {
  return guarded([&]() -> Status {
    if (Status s = check_conv_direction(direction); !s.is_ok()) return s;
    return write_name(
        make_conv_descriptor(params, conv_direction(direction), x_desc, w_desc, y_desc),
        symbolic_batch, buf, buf_size, required);
  });
}

convjit_status_t convjit_pool_descriptor_name(const convjit_pool_params_t* params,
                                              convjit_pool_direction_t direction,
                                              const convjit_tensor_desc_t* x_desc,
                                              const convjit_tensor_desc_t* y_desc,
                                              int symbolic_batch, char* buf, size_t buf_size,
                                              size_t* required) {
  return guarded([&]() -> Status {
    if (const int raw = raw_c_enum(direction); raw != CONVJIT_POOL_FWD && raw != CONVJIT_POOL_BWD)
      return Status::invalid(fmt::format("direction = {} is not a convjit_pool_direction_t", raw));
    const Direction dir = direction == CONVJIT_POOL_FWD ? Direction::fwd : Direction::bwd;
    return write_name(make_pool_descriptor(params, dir, x_desc, y_desc), symbolic_batch, buf,
                      buf_size, required);
  });
}

convjit_status_t convjit_conv_fused_descriptor_name(const convjit_conv_params_t* params,
                                                    const convjit_tensor_desc_t* x_desc,
                                                    const convjit_tensor_desc_t* w_desc,
                                                    const convjit_epilogue_t* epilogue,
                                                    const convjit_tensor_desc_t* y_desc,
                                                    int symbolic_batch, char* buf, size_t buf_size,
                                                    size_t* required) {
  return guarded([&] {
    return write_name(make_fused_conv_descriptor(params, x_desc, w_desc, epilogue, y_desc),
                      symbolic_batch, buf, buf_size, required);
  });
}

namespace {

// The architecture a preload compiles for (`arch`, else the setting), once
// NVRTC, which names every key, is known to be there.
Result<std::string> preload_target(const char* arch, const Settings& settings) {
  const std::string target = arch != nullptr ? arch : settings.arch.value;
  if (target.empty())
    return Status::invalid(
        "no architecture to compile for: pass arch (e.g. \"sm_90\") or set CONVJIT_ARCH");
  if (!is_valid_arch(target))
    return Status::invalid(fmt::format("arch '{}' is not of the form sm_XX (e.g. sm_90)", target));
  if (const Status& nvrtc = NvrtcLibrary::instance().available(); !nvrtc.is_ok()) return nvrtc;
  return target;
}

}  // namespace

convjit_status_t convjit_preload(const char* descriptor_name, const char* arch, int* compiled) {
  return guarded([&]() -> Status {
    if (descriptor_name == nullptr) return null_argument("descriptor name");
    auto desc = parse_descriptor_name(descriptor_name);
    if (!desc.is_ok()) return desc.status();
    const auto settings = SettingsStore::instance().snapshot();
    auto target = preload_target(arch, *settings);
    if (!target.is_ok()) return target.status();
    JitCache cache(jit_cache_tiers(*settings));
    auto prepared = prepare_jit_module(cache, desc.value(), target.value());
    if (!prepared.is_ok()) return prepared.status();
    if (compiled != nullptr) *compiled = prepared.value().compiled ? 1 : 0;
    return Status::ok();
  });
}

convjit_status_t convjit_preload_collective(const convjit_communicator_t* comm,
                                            const char* const* descriptor_names, size_t count,
                                            const char* arch, int jobs,
                                            convjit_preload_summary_t* summary) {
  return guarded([&]() -> Status {
    if (comm == nullptr) return null_argument("communicator");
    auto wrapped = Communicator::wrap(*comm);
    if (!wrapped.is_ok()) return wrapped.status();
    const auto settings = SettingsStore::instance().snapshot();
    PreloadRequest request;
    request.jobs =
        jobs > 0 ? jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    auto target = preload_target(arch, *settings);
    // A local problem is not returned at once: the other ranks must hear of it.
    if (count > 0 && descriptor_names == nullptr)
      request.setup = null_argument("descriptor names");
    else if (!target.is_ok())
      request.setup = target.status();
    for (size_t i = 0; request.setup.is_ok() && i < count; ++i) {
      if (descriptor_names[i] == nullptr)
        request.setup = Status::invalid(fmt::format("descriptor name {} is NULL", i));
      else
        request.names.emplace_back(descriptor_names[i]);
    }
    JitCache cache(jit_cache_tiers(*settings));
    const auto compiler = nvrtc_preload_compiler(target.is_ok() ? target.value() : std::string(),
                                                 cache.primary_directory());
    auto report = collective_preload(wrapped.value(), cache, *compiler, request);
    if (!report.is_ok()) return report.status();
    const PreloadReport& r = report.value();
    if (summary != nullptr)
      *summary = {r.distinct,    r.compiled,      r.copied_from_shared + r.copied_from_node,
                  r.cached,      r.unsupported,   r.failed,
                  r.compiled_here, r.local_entries, r.seconds};
    if (r.failed == 0) return Status::ok();
    return {CONVJIT_STATUS_EXECUTION_FAILED,
            fmt::format("{} of {} descriptors failed: {}", r.failed, r.distinct,
                        fmt::join(r.problems, "; "))};
  });
}

convjit_status_t convjit_bias_grad_descriptor_name(const convjit_tensor_desc_t* dy_desc,
                                                   int symbolic_batch, char* buf, size_t buf_size,
                                                   size_t* required) {
  return guarded([&] {
    return write_name(make_bias_grad_descriptor(dy_desc), symbolic_batch, buf, buf_size, required);
  });
}

namespace {

// A conv forward, plain (epilogue null) or fused.
Status conv_forward(const convjit_conv_params_t* params, const convjit_tensor_desc_t* x_desc,
                    const void* x, const convjit_tensor_desc_t* w_desc, const void* w,
                    const convjit_epilogue_t* epilogue, const convjit_tensor_desc_t* y_desc,
                    void* y, double alpha, double beta, const convjit_exec_t* exec) {
  if (const char* missing = first_null({{x, "x"},
                                        {w, "w"},
                                        {y, "y"},
                                        {params, "conv params"},
                                        {x_desc, "x descriptor"},
                                        {w_desc, "w descriptor"},
                                        {y_desc, "y descriptor"}}))
    return null_argument(missing);
  if (epilogue != nullptr && epilogue->residual == y)
    return Status::invalid(
        "epilogue residual is y itself; pass another tensor, or use beta = 1 to add y's "
        "previous contents");
  ExecArgs args = exec_args(exec, alpha, beta);
  args.x = x, args.w = w, args.out = y;
  ApiCallKey key;
  key.add(static_cast<std::int64_t>(epilogue ? ApiOp::conv_fwd_fused : ApiOp::conv_fwd))
      .add(*params)
      .add(*x_desc)
      .add(*w_desc)
      .add(*y_desc);
  if (epilogue != nullptr) {
    args.bias = epilogue->bias, args.residual = epilogue->residual;
    key.add(std::int64_t{raw_c_enum(epilogue->activation)} << 2 |
            std::int64_t{epilogue->bias != nullptr} |
            std::int64_t{epilogue->residual != nullptr} << 1);
  }
  return run_api_call(key, exec, args, [&] {
    return make_fused_conv_descriptor(params, x_desc, w_desc, epilogue, y_desc);
  });
}

}  // namespace

convjit_status_t convjit_conv_forward(const convjit_conv_params_t* params,
                                      const convjit_tensor_desc_t* x_desc, const void* x,
                                      const convjit_tensor_desc_t* w_desc, const void* w,
                                      const convjit_tensor_desc_t* y_desc, void* y, double alpha,
                                      double beta, const convjit_exec_t* exec) {
  return guarded([&] {
    return conv_forward(params, x_desc, x, w_desc, w, nullptr, y_desc, y, alpha, beta, exec);
  });
}

convjit_status_t convjit_conv_forward_fused(const convjit_conv_params_t* params,
                                            const convjit_tensor_desc_t* x_desc, const void* x,
                                            const convjit_tensor_desc_t* w_desc, const void* w,
                                            const convjit_epilogue_t* epilogue,
                                            const convjit_tensor_desc_t* y_desc, void* y,
                                            double alpha, double beta, const convjit_exec_t* exec) {
  return guarded([&] {
    return conv_forward(params, x_desc, x, w_desc, w, epilogue, y_desc, y, alpha, beta, exec);
  });
}

convjit_status_t convjit_conv_backward_data(const convjit_conv_params_t* params,
                                            const convjit_tensor_desc_t* dy_desc, const void* dy,
                                            const convjit_tensor_desc_t* w_desc, const void* w,
                                            const convjit_tensor_desc_t* dx_desc, void* dx,
                                            double alpha, double beta, const convjit_exec_t* exec) {
  return guarded([&]() -> Status {
    if (const char* missing = first_null({{dy, "dy"},
                                          {w, "w"},
                                          {dx, "dx"},
                                          {params, "conv params"},
                                          {dy_desc, "dy descriptor"},
                                          {w_desc, "w descriptor"},
                                          {dx_desc, "dx descriptor"}}))
      return null_argument(missing);
    ExecArgs args = exec_args(exec, alpha, beta);
    args.dy = dy, args.w = w, args.out = dx;
    ApiCallKey key;
    key.add(static_cast<std::int64_t>(ApiOp::conv_bwddata))
        .add(*params)
        .add(*dx_desc)
        .add(*w_desc)
        .add(*dy_desc);
    return run_api_call(key, exec, args, [&] {
      return make_conv_descriptor(params, Direction::bwddata, dx_desc, w_desc, dy_desc);
    });
  });
}

convjit_status_t convjit_conv_backward_filter(const convjit_conv_params_t* params,
                                              const convjit_tensor_desc_t* x_desc, const void* x,
                                              const convjit_tensor_desc_t* dy_desc, const void* dy,
                                              const convjit_tensor_desc_t* dw_desc, void* dw,
                                              double alpha, double beta,
                                              const convjit_exec_t* exec) {
  return guarded([&]() -> Status {
    if (const char* missing = first_null({{x, "x"},
                                          {dy, "dy"},
                                          {dw, "dw"},
                                          {params, "conv params"},
                                          {x_desc, "x descriptor"},
                                          {dw_desc, "dw descriptor"},
                                          {dy_desc, "dy descriptor"}}))
      return null_argument(missing);
    ExecArgs args = exec_args(exec, alpha, beta);
    args.x = x, args.dy = dy, args.out = dw;
    ApiCallKey key;
    key.add(static_cast<std::int64_t>(ApiOp::conv_bwdfilt))
        .add(*params)
        .add(*x_desc)
        .add(*dw_desc)
        .add(*dy_desc);
    return run_api_call(key, exec, args, [&] {
      return make_conv_descriptor(params, Direction::bwdfilt, x_desc, dw_desc, dy_desc);
    });
  });
}

convjit_status_t convjit_conv_backward_bias(const convjit_tensor_desc_t* dy_desc, const void* dy,
                                            void* db, double alpha, double beta,
                                            const convjit_exec_t* exec) {
  return guarded([&]() -> Status {
    if (const char* missing = first_null({{dy, "dy"}, {db, "db"}, {dy_desc, "dy descriptor"}}))
      return null_argument(missing);
    ExecArgs args = exec_args(exec, alpha, beta);
    args.dy = dy, args.out = db;
    ApiCallKey key;
    key.add(static_cast<std::int64_t>(ApiOp::bias_grad)).add(*dy_desc);
    return run_api_call(key, exec, args, [&] { return make_bias_grad_descriptor(dy_desc); });
  });
}

convjit_status_t convjit_conv_backward(const convjit_conv_params_t* params,
                                       const convjit_tensor_desc_t* x_desc, const void* x,
                                       const convjit_tensor_desc_t* w_desc, const void* w,
                                       const convjit_tensor_desc_t* dy_desc, const void* dy,
                                       unsigned grad_mask, void* dx, void* dw, void* db,
                                       const convjit_exec_t* exec) {
  constexpr unsigned kAll = CONVJIT_GRAD_INPUT | CONVJIT_GRAD_WEIGHT | CONVJIT_GRAD_BIAS;
  if (grad_mask & ~kAll)
    return guarded([&] {
      return Status::invalid(
          fmt::format("grad_mask = {:#x} has bits outside CONVJIT_GRAD_INPUT | "
                      "CONVJIT_GRAD_WEIGHT | CONVJIT_GRAD_BIAS",
                      grad_mask));
    });
  // Validate every requested output before writing any, so a bad argument
  // never leaves some gradients written and others not.
  convjit_status_t status = guarded([&]() -> Status {
    const bool want_dx = grad_mask & CONVJIT_GRAD_INPUT, want_dw = grad_mask & CONVJIT_GRAD_WEIGHT;
    for (Status s :
         {require_pointer(dy, "dy"),
          want_dx ? require_pointer(dx, "dx (CONVJIT_GRAD_INPUT is set)") : Status(),
          want_dx ? require_pointer(w, "w (needed for dx)") : Status(),
          want_dw ? require_pointer(dw, "dw (CONVJIT_GRAD_WEIGHT is set)") : Status(),
          want_dw ? require_pointer(x, "x (needed for dw)") : Status(),
          grad_mask & CONVJIT_GRAD_BIAS ? require_pointer(db, "db (CONVJIT_GRAD_BIAS is set)")
                                        : Status()})
      if (!s.is_ok()) return s;
    return check_backward_roles(params, x_desc, w_desc, dy_desc, grad_mask);
  });
  if (status != CONVJIT_STATUS_SUCCESS) return status;
  if ((grad_mask & CONVJIT_GRAD_INPUT) != 0) {
    status = convjit_conv_backward_data(params, dy_desc, dy, w_desc, w, x_desc, dx, 1.0, 0.0, exec);
    if (status != CONVJIT_STATUS_SUCCESS) return status;
  }
  if ((grad_mask & CONVJIT_GRAD_WEIGHT) != 0) {
    status =
        convjit_conv_backward_filter(params, x_desc, x, dy_desc, dy, w_desc, dw, 1.0, 0.0, exec);
    if (status != CONVJIT_STATUS_SUCCESS) return status;
  }
  if ((grad_mask & CONVJIT_GRAD_BIAS) != 0)
    status = convjit_conv_backward_bias(dy_desc, dy, db, 1.0, 0.0, exec);
  return status;
}

convjit_status_t convjit_pool_forward(const convjit_pool_params_t* params,
                                      const convjit_tensor_desc_t* x_desc, const void* x,
                                      const convjit_tensor_desc_t* y_desc, void* y, double alpha,
                                      double beta, const convjit_exec_t* exec) {
  return guarded([&]() -> Status {
    if (const char* missing = first_null({{x, "x"},
                                          {y, "y"},
                                          {params, "pool params"},
                                          {x_desc, "x descriptor"},
                                          {y_desc, "y descriptor"}}))
      return null_argument(missing);
    ExecArgs args = exec_args(exec, alpha, beta);
    args.x = x, args.out = y;
    ApiCallKey key;
    key.add(static_cast<std::int64_t>(ApiOp::pool_fwd)).add(*params).add(*x_desc).add(*y_desc);
    return run_api_call(key, exec, args,
               [&] { return make_pool_descriptor(params, Direction::fwd, x_desc, y_desc); });
  });
}

convjit_status_t convjit_pool_backward(const convjit_pool_params_t* params,
                                       const convjit_tensor_desc_t* x_desc, const void* x,
                                       const convjit_tensor_desc_t* dy_desc, const void* dy,
                                       void* dx, double alpha, double beta,
                                       const convjit_exec_t* exec) {
  return guarded([&]() -> Status {
    if (params != nullptr && raw_c_enum(params->mode) == CONVJIT_POOL_MAX)
      if (Status s = require_pointer(x, "x (max pooling recomputes the argmax from it)");
          !s.is_ok())
        return s;
    if (const char* missing = first_null({{dy, "dy"},
                                          {dx, "dx"},
                                          {params, "pool params"},
                                          {x_desc, "x descriptor"},
                                          {dy_desc, "dy descriptor"}}))
      return null_argument(missing);
    ExecArgs args = exec_args(exec, alpha, beta);
    args.x = x, args.dy = dy, args.out = dx;
    ApiCallKey key;
    key.add(static_cast<std::int64_t>(ApiOp::pool_bwd)).add(*params).add(*x_desc).add(*dy_desc);
    return run_api_call(key, exec, args,
               [&] { return make_pool_descriptor(params, Direction::bwd, x_desc, dy_desc); });
  });
}

}  // extern "C"
