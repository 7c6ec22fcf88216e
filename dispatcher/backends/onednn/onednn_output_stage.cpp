#include "dispatcher/backends/onednn/onednn_output_stage.hpp"

#include "dispatcher/backends/reference/dtype_dispatch.hpp"
#include "dispatcher/backends/reference/epilogue_reference.hpp"
#include "dispatcher/backends/reference/tensor_view.hpp"

namespace convjit {

namespace {

using reference::Element;

// T: the output's type; R: the result's.
template <class T, class R>
void store_all(const OpDescriptor& desc, const R* result, const ExecArgs& args) {
  const View5 v = output_view(desc);
  T* out = static_cast<T*>(args.out);
  const bool epilogue = desc.is_conv() && desc.direction == Direction::fwd && desc.has_epilogue();
  const reference::EpilogueStore<T> epilogue_store(desc, args);
  const std::int64_t planes = v.dims[0] * v.dims[1];
#pragma omp parallel for if (reference::worth_parallel(planes * v.spatial_size()))
  for (std::int64_t nc = 0; nc < planes; ++nc) {
    const std::int64_t n = nc / v.dims[1], c = nc % v.dims[1];
    for (std::int64_t d = 0; d < v.dims[2]; ++d)
      for (std::int64_t h = 0; h < v.dims[3]; ++h)
        for (std::int64_t w = 0; w < v.dims[4]; ++w) {
          const std::int64_t at = v.offset(n, c, d, h, w);
          const auto r = static_cast<typename Element<T>::Acc>(Element<R>::load(result[at]));
          if (epilogue) {
            epilogue_store(out, at, c, r);
          } else {
            reference::scale_store(out[at], r, args.alpha, args.beta);
          }
        }
  }
}

}  // namespace

View5 output_view(const OpDescriptor& d) {
  switch (d.kind) {
    case OpKind::bias_grad: {
      View5 v;
      v.dims = {1, d.y_dims[1], 1, 1, 1};
      v.strides = {d.y_dims[1], 1, 0, 0, 0};
      return v;
    }
    case OpKind::conv:
      if (d.direction == Direction::bwdfilt)
        return canonical_view(d.w_dims, d.w_strides, d.spatial_dims);
      [[fallthrough]];
    case OpKind::pool:
      break;
  }
  return d.direction == Direction::fwd ? canonical_view(d.y_dims, d.y_strides, d.spatial_dims)
                                       : canonical_view(d.x_dims, d.x_strides, d.spatial_dims);
}

void apply_output_stage(const OpDescriptor& desc, DataType result_type, const void* result,
                        const ExecArgs& args) {
  reference::dispatch_dtype(desc.dtype, [&]<class T>() {
    if (result_type == DataType::f32) {
      store_all<T>(desc, static_cast<const float*>(result), args);
    } else {
      store_all<T>(desc, static_cast<const T*>(result), args);
    }
  });
}

}  // namespace convjit
