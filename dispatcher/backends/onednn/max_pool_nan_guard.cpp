#include "dispatcher/backends/onednn/max_pool_nan_guard.hpp"

#include <cmath>

#include "dispatcher/backends/reference/dtype_dispatch.hpp"
#include "dispatcher/backends/reference/tensor_view.hpp"

namespace convjit {

bool needs_max_pool_nan_guard(const OpDescriptor& desc) {
  return desc.is_pool() && desc.pool_mode == PoolingMode::max;
}

bool input_has_nan(const OpDescriptor& desc, const void* x) {
  const View5 v = canonical_view(desc.x_dims, desc.x_strides, desc.spatial_dims);
  bool found = false;
  reference::dispatch_dtype(desc.dtype, [&]<class T>() {
    const T* data = static_cast<const T*>(x);
    const std::int64_t planes = v.dims[0] * v.dims[1];
#pragma omp parallel for reduction(|| : found) if (reference::worth_parallel(planes * v.spatial_size()))
    for (std::int64_t nc = 0; nc < planes; ++nc) {
      const std::int64_t n = nc / v.dims[1], c = nc % v.dims[1];
      for (std::int64_t d = 0; d < v.dims[2]; ++d)
        for (std::int64_t h = 0; h < v.dims[3]; ++h)
          for (std::int64_t w = 0; w < v.dims[4]; ++w)
            found = found || std::isnan(reference::Element<T>::load(data[v.offset(n, c, d, h, w)]));
    }
  });
  return found;
}

}  // namespace convjit
