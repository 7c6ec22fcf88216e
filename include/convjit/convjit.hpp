// convjit C++ API: a thin, header-only layer over the C API (convjit.h), so
// C and C++ callers are served by the same dispatcher through the same ABI.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "convjit/convjit.h"
#include "convjit/status.hpp"

namespace convjit {

using DType = convjit_dtype_t;
using Layout = convjit_layout_t;
using PoolMode = convjit_pool_mode_t;
using ConvDirection = convjit_conv_direction_t;
using PoolDirection = convjit_pool_direction_t;

namespace detail {
inline Status status_from(convjit_status_t code) {
  if (code == CONVJIT_STATUS_SUCCESS) return Status::ok();
  return {code, convjit_last_error_message()};
}
}  // namespace detail

inline std::string version() { return convjit_version_string(); }

// The backend that served the last successful call on this thread.
inline std::string last_backend() { return convjit_last_backend(); }

struct Device {
  static convjit_device_t host() { return {CONVJIT_DEVICE_HOST, 0}; }
  static convjit_device_t cuda(int ordinal) { return {CONVJIT_DEVICE_CUDA, ordinal}; }
};

struct Exec : convjit_exec_t {
  Exec() : convjit_exec_t{Device::host(), nullptr, nullptr, 0, 0} {}
  explicit Exec(convjit_device_t on, void* cuda_stream = nullptr, void* scratch = nullptr,
                size_t scratch_bytes = 0, std::uint64_t filters_version = 0)
      : convjit_exec_t{on, cuda_stream, scratch, scratch_bytes, filters_version} {}
};

struct TensorDesc : convjit_tensor_desc_t {
  TensorDesc() : convjit_tensor_desc_t{} {}

  // Contiguous in `layout`; dims are logical (N, C, spatial...).
  static Status contiguous(TensorDesc& out, DType dtype, std::initializer_list<int64_t> dims,
                           Layout layout = CONVJIT_LAYOUT_NCHW) {
    std::array<int64_t, CONVJIT_MAX_RANK> d{};
    int rank = 0;
    for (int64_t v : dims) {
      if (rank == CONVJIT_MAX_RANK) {
        ++rank;
        break;
      }
      d[static_cast<size_t>(rank++)] = v;
    }
    return detail::status_from(convjit_tensor_desc_init(&out, dtype, rank, d.data(), layout));
  }

  // Every stride given explicitly, e.g. a halo buffer.
  static TensorDesc strided(DType dtype, std::initializer_list<int64_t> dims,
                            std::initializer_list<int64_t> strides) {
    TensorDesc t;
    t.dtype = dtype;
    t.rank = static_cast<int>(dims.size());
    int i = 0;
    for (int64_t v : dims)
      if (i < CONVJIT_MAX_RANK) t.dims[i++] = v;
    i = 0;
    for (int64_t v : strides)
      if (i < CONVJIT_MAX_RANK) t.strides[i++] = v;
    return t;
  }
};

struct ConvParams : convjit_conv_params_t {
  explicit ConvParams(int spatial = 2) : convjit_conv_params_t{} {
    (void)convjit_conv_params_init(this, spatial);
  }
};

struct PoolParams : convjit_pool_params_t {
  explicit PoolParams(int spatial = 2, PoolMode pool_mode = CONVJIT_POOL_MAX)
      : convjit_pool_params_t{} {
    (void)convjit_pool_params_init(this, spatial, pool_mode);
  }
};

// Epsilon 1e-5, momentum 0.1, PyTorch's running update, no activation.
struct BatchNormParams : convjit_batchnorm_params_t {
  BatchNormParams() : convjit_batchnorm_params_t{} { (void)convjit_batchnorm_params_init(this); }
};

// PyTorch's coordinates for `mode` (asymmetric nearest, half-pixel linear).
struct ResizeParams : convjit_resize_params_t {
  explicit ResizeParams(int spatial = 2, convjit_resize_mode_t resize_mode = CONVJIT_RESIZE_NEAREST)
      : convjit_resize_params_t{} {
    (void)convjit_resize_params_init(this, spatial, resize_mode);
  }
};

// act(alpha conv + bias [+ residual]) + beta y; bias and residual may be null.
struct Epilogue : convjit_epilogue_t {
  explicit Epilogue(convjit_activation_t act = CONVJIT_ACTIVATION_IDENTITY,
                    const void* bias_data = nullptr, const void* residual_data = nullptr)
      : convjit_epilogue_t{act, bias_data, residual_data} {}
};

inline Status conv_output_dims(const ConvParams& p, const TensorDesc& x, const TensorDesc& w,
                               int64_t* y_dims) {
  return detail::status_from(convjit_conv_output_dims(&p, &x, &w, y_dims));
}

inline Status pool_output_dims(const PoolParams& p, const TensorDesc& x, bool ceil_mode,
                               int64_t* y_dims) {
  return detail::status_from(convjit_pool_output_dims(&p, &x, ceil_mode ? 1 : 0, y_dims));
}

namespace detail {
// Calls a C name function twice: once for the size, once to fill.
template <class NameFn>
Status query_name(NameFn&& fn, std::string& name) {
  size_t required = 0;
  auto code = fn(nullptr, 0, &required);
  if (code != CONVJIT_STATUS_SUCCESS) return status_from(code);
  name.resize(required);
  code = fn(name.data(), name.size(), &required);
  name.resize(code == CONVJIT_STATUS_SUCCESS ? required - 1 : 0);
  return status_from(code);
}
}  // namespace detail

inline Status conv_descriptor_name(const ConvParams& p, ConvDirection direction,
                                   const TensorDesc& x, const TensorDesc& w, const TensorDesc& y,
                                   bool symbolic_batch, std::string& name) {
  return detail::query_name(
      [&](char* buf, size_t size, size_t* required) {
        return convjit_conv_descriptor_name(&p, direction, &x, &w, &y, symbolic_batch, buf, size,
                                            required);
      },
      name);
}

inline Status conv_fused_descriptor_name(const ConvParams& p, const TensorDesc& x,
                                         const TensorDesc& w, const Epilogue& epilogue,
                                         const TensorDesc& y, bool symbolic_batch,
                                         std::string& name) {
  return detail::query_name(
      [&](char* buf, size_t size, size_t* required) {
        return convjit_conv_fused_descriptor_name(&p, &x, &w, &epilogue, &y, symbolic_batch, buf,
                                                  size, required);
      },
      name);
}

inline Status bias_grad_descriptor_name(const TensorDesc& dy, bool symbolic_batch,
                                        std::string& name) {
  return detail::query_name(
      [&](char* buf, size_t size, size_t* required) {
        return convjit_bias_grad_descriptor_name(&dy, symbolic_batch, buf, size, required);
      },
      name);
}

inline Status pool_descriptor_name(const PoolParams& p, PoolDirection direction,
                                   const TensorDesc& x, const TensorDesc& y, bool symbolic_batch,
                                   std::string& name) {
  return detail::query_name(
      [&](char* buf, size_t size, size_t* required) {
        return convjit_pool_descriptor_name(&p, direction, &x, &y, symbolic_batch, buf, size,
                                            required);
      },
      name);
}

inline Status batchnorm_descriptor_name(const BatchNormParams& p, convjit_direction_t direction,
                                        unsigned flags, unsigned grad_mask, const TensorDesc& x,
                                        const TensorDesc& y, bool symbolic_batch,
                                        std::string& name) {
  return detail::query_name(
      [&](char* buf, size_t size, size_t* required) {
        return convjit_batchnorm_descriptor_name(&p, direction, flags, grad_mask, &x, &y,
                                                 symbolic_batch, buf, size, required);
      },
      name);
}

inline Status resize_descriptor_name(const ResizeParams& p, convjit_direction_t direction,
                                     const TensorDesc& x, const TensorDesc& y, bool symbolic_batch,
                                     std::string& name) {
  return detail::query_name(
      [&](char* buf, size_t size, size_t* required) {
        return convjit_resize_descriptor_name(&p, direction, &x, &y, symbolic_batch, buf, size,
                                              required);
      },
      name);
}

inline Status resize_output_dims(const ResizeParams& p, const TensorDesc& x, int64_t* y_dims) {
  return detail::status_from(convjit_resize_output_dims(&p, &x, y_dims));
}

inline Status conv_forward(const ConvParams& p, const TensorDesc& x_desc, const void* x,
                           const TensorDesc& w_desc, const void* w, const TensorDesc& y_desc,
                           void* y, double alpha = 1.0, double beta = 0.0,
                           const Exec& exec = Exec()) {
  return detail::status_from(
      convjit_conv_forward(&p, &x_desc, x, &w_desc, w, &y_desc, y, alpha, beta, &exec));
}

inline Status conv_forward_fused(const ConvParams& p, const TensorDesc& x_desc, const void* x,
                                 const TensorDesc& w_desc, const void* w, const Epilogue& epilogue,
                                 const TensorDesc& y_desc, void* y, double alpha = 1.0,
                                 double beta = 0.0, const Exec& exec = Exec()) {
  return detail::status_from(convjit_conv_forward_fused(&p, &x_desc, x, &w_desc, w, &epilogue,
                                                        &y_desc, y, alpha, beta, &exec));
}

inline Status conv_backward_data(const ConvParams& p, const TensorDesc& dy_desc, const void* dy,
                                 const TensorDesc& w_desc, const void* w, const TensorDesc& dx_desc,
                                 void* dx, double alpha = 1.0, double beta = 0.0,
                                 const Exec& exec = Exec()) {
  return detail::status_from(
      convjit_conv_backward_data(&p, &dy_desc, dy, &w_desc, w, &dx_desc, dx, alpha, beta, &exec));
}

inline Status conv_backward_filter(const ConvParams& p, const TensorDesc& x_desc, const void* x,
                                   const TensorDesc& dy_desc, const void* dy,
                                   const TensorDesc& dw_desc, void* dw, double alpha = 1.0,
                                   double beta = 0.0, const Exec& exec = Exec()) {
  return detail::status_from(
      convjit_conv_backward_filter(&p, &x_desc, x, &dy_desc, dy, &dw_desc, dw, alpha, beta, &exec));
}

inline Status conv_backward_bias(const TensorDesc& dy_desc, const void* dy, void* db,
                                 double alpha = 1.0, double beta = 0.0, const Exec& exec = Exec()) {
  return detail::status_from(convjit_conv_backward_bias(&dy_desc, dy, db, alpha, beta, &exec));
}

inline Status conv_backward(const ConvParams& p, const TensorDesc& x_desc, const void* x,
                            const TensorDesc& w_desc, const void* w, const TensorDesc& dy_desc,
                            const void* dy, unsigned grad_mask, void* dx, void* dw, void* db,
                            const Exec& exec = Exec()) {
  return detail::status_from(convjit_conv_backward(&p, &x_desc, x, &w_desc, w, &dy_desc, dy,
                                                   grad_mask, dx, dw, db, &exec));
}

inline Status pool_forward(const PoolParams& p, const TensorDesc& x_desc, const void* x,
                           const TensorDesc& y_desc, void* y, double alpha = 1.0, double beta = 0.0,
                           const Exec& exec = Exec()) {
  return detail::status_from(convjit_pool_forward(&p, &x_desc, x, &y_desc, y, alpha, beta, &exec));
}

inline Status pool_backward(const PoolParams& p, const TensorDesc& x_desc, const void* x,
                            const TensorDesc& dy_desc, const void* dy, void* dx, double alpha = 1.0,
                            double beta = 0.0, const Exec& exec = Exec()) {
  return detail::status_from(
      convjit_pool_backward(&p, &x_desc, x, &dy_desc, dy, dx, alpha, beta, &exec));
}

inline Status batchnorm_forward_training(const BatchNormParams& p, const TensorDesc& x_desc,
                                         const void* x, const void* scale, const void* shift,
                                         const TensorDesc& y_desc, void* y, void* running_mean,
                                         void* running_var, void* saved_mean, void* saved_invstd,
                                         double alpha = 1.0, double beta = 0.0,
                                         const Exec& exec = Exec()) {
  return detail::status_from(convjit_batchnorm_forward_training(
      &p, &x_desc, x, scale, shift, &y_desc, y, running_mean, running_var, saved_mean,
      saved_invstd, alpha, beta, &exec));
}

inline Status batchnorm_forward_inference(const BatchNormParams& p, const TensorDesc& x_desc,
                                          const void* x, const void* scale, const void* shift,
                                          const void* running_mean, const void* running_var,
                                          const TensorDesc& y_desc, void* y, double alpha = 1.0,
                                          double beta = 0.0, const Exec& exec = Exec()) {
  return detail::status_from(convjit_batchnorm_forward_inference(
      &p, &x_desc, x, scale, shift, running_mean, running_var, &y_desc, y, alpha, beta, &exec));
}

inline Status batchnorm_backward(const BatchNormParams& p, bool training, const TensorDesc& x_desc,
                                 const void* x, const TensorDesc& dy_desc, const void* dy,
                                 const void* scale, const void* shift, const void* mean,
                                 const void* var_or_invstd, unsigned grad_mask, void* dx,
                                 void* dscale, void* dshift, double alpha = 1.0, double beta = 0.0,
                                 const Exec& exec = Exec()) {
  return detail::status_from(convjit_batchnorm_backward(
      &p, training ? 1 : 0, &x_desc, x, &dy_desc, dy, scale, shift, mean, var_or_invstd,
      grad_mask, dx, dscale, dshift, alpha, beta, &exec));
}

inline Status resize_forward(const ResizeParams& p, const TensorDesc& x_desc, const void* x,
                             const TensorDesc& y_desc, void* y, double alpha = 1.0,
                             double beta = 0.0, const Exec& exec = Exec()) {
  return detail::status_from(
      convjit_resize_forward(&p, &x_desc, x, &y_desc, y, alpha, beta, &exec));
}

inline Status resize_backward(const ResizeParams& p, const TensorDesc& dy_desc, const void* dy,
                              const TensorDesc& dx_desc, void* dx, double alpha = 1.0,
                              double beta = 0.0, const Exec& exec = Exec()) {
  return detail::status_from(
      convjit_resize_backward(&p, &dy_desc, dy, &dx_desc, dx, alpha, beta, &exec));
}

}  // namespace convjit
