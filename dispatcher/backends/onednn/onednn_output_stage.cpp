#include "dispatcher/backends/onednn/onednn_output_stage.hpp"

#include "dispatcher/backends/reference/dtype_dispatch.hpp"
#include "dispatcher/backends/reference/epilogue_reference.hpp"
#include "dispatcher/backends/reference/tensor_view.hpp"
#include "dispatcher/descriptor/operand_layout.hpp"

namespace convjit {

namespace {

using reference::Element;

// The output slot as a 5D view: y, dx, dw (K as n, C/G as c) or db.
View5 output_view(const OpDescriptor& d) {
  if (d.kind == OpKind::bias_grad) {  // db: y's K channels, packed
    View5 v;
    v.dims = {1, d.y_dims[1], 1, 1, 1};
    v.strides = {d.y_dims[1], 1, 0, 0, 0};
    return v;
  }
  const Slot out = output_slot(d);
  return canonical_view(slot_dims(d, out), slot_strides(d, out), d.spatial_dims);
}

// T: the output's type; R: the result's.
template <class T, class R>
void store_all(const OpDescriptor& desc, const R* result, const ExecArgs& args) {
  const View5 v = output_view(desc);
  T* out = static_cast<T*>(args.out);
  // Without an epilogue (every op but a fused conv fwd) it stores
  // alpha r + beta out, never reading out when beta is 0.
  const reference::EpilogueStore<T> store(desc, args);
  const std::int64_t planes = v.dims[0] * v.dims[1];
#pragma omp parallel for if (reference::worth_parallel(planes * v.spatial_size()))
  for (std::int64_t nc = 0; nc < planes; ++nc) {
    const std::int64_t n = nc / v.dims[1], c = nc % v.dims[1];
    for (std::int64_t d = 0; d < v.dims[2]; ++d)
      for (std::int64_t h = 0; h < v.dims[3]; ++h)
        for (std::int64_t w = 0; w < v.dims[4]; ++w) {
          const std::int64_t at = v.offset(n, c, d, h, w);
          store(out, at, c, static_cast<typename Element<T>::Acc>(Element<R>::load(result[at])));
        }
  }
}

}  // namespace

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
