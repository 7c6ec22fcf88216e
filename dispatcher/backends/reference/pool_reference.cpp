#include "dispatcher/backends/reference/pool_reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "dispatcher/backends/reference/dtype_dispatch.hpp"
#include "dispatcher/backends/reference/tensor_view.hpp"

namespace convjit::reference {

namespace {

template <class T>
class PoolReference {
  using Acc = typename Element<T>::Acc;

 public:
  PoolReference(const OpDescriptor& d, const ExecArgs& args)
      : x_(canonical_view(d.x_dims, d.x_strides, d.spatial_dims)),
        y_(canonical_view(d.y_dims, d.y_strides, d.spatial_dims)),
        win_(canonical_window(d)),
        mode_(d.pool_mode),
        parallel_(worth_parallel(y_.dims[0] * y_.dims[1] * y_.spatial_size() * win_.size[0] *
                                 win_.size[1] * win_.size[2])),
        args_(args) {}

  void forward() const {
    const T* x = static_cast<const T*>(args_.x);
    T* y = static_cast<T*>(args_.out);
#pragma omp parallel for schedule(dynamic) if (parallel_)
    for (std::int64_t nc = 0; nc < x_.dims[0] * x_.dims[1]; ++nc) {
      const std::int64_t n = nc / x_.dims[1], c = nc % x_.dims[1];
      for_each_output([&](std::int64_t od, std::int64_t oh, std::int64_t ow) {
        scale_store(y[y_.offset(n, c, od, oh, ow)], pooled_value(x, n, c, od, oh, ow), args_.alpha,
                    args_.beta);
      });
    }
  }

  void backward() const {
    const T* x = static_cast<const T*>(args_.x);
    const T* dy = static_cast<const T*>(args_.dy);
    T* dx = static_cast<T*>(args_.out);
#pragma omp parallel if (parallel_)
    {
      std::vector<Acc> plane(static_cast<std::size_t>(x_.spatial_size()));
#pragma omp for schedule(dynamic)
      for (std::int64_t nc = 0; nc < x_.dims[0] * x_.dims[1]; ++nc) {
        const std::int64_t n = nc / x_.dims[1], c = nc % x_.dims[1];
        std::fill(plane.begin(), plane.end(), Acc{0});
        for_each_output([&](std::int64_t od, std::int64_t oh, std::int64_t ow) {
          const Acc grad = Element<T>::load(dy[y_.offset(n, c, od, oh, ow)]);
          scatter_gradient(plane, x, grad, n, c, od, oh, ow);
        });
        store_plane(plane, x_, dx, n, c, args_.alpha, args_.beta);
      }
    }
  }

 private:
  struct Window {
    TapRange range[3];
    std::int64_t start[3];  // input index of tap 0
  };

  Window window_at(std::int64_t od, std::int64_t oh, std::int64_t ow) const {
    const std::int64_t out[3] = {od, oh, ow};
    Window w{};
    for (std::size_t i = 0; i < 3; ++i) {
      w.range[i] = valid_taps(out[i], x_.dims[i + 2], win_.size[i], win_.pad_begin[i],
                              win_.stride[i], win_.dilation[i]);
      w.start[i] = out[i] * win_.stride[i] - win_.pad_begin[i];
    }
    return w;
  }

  template <class F>
  void for_each_input(const Window& w, F&& f) const {
    for (std::int64_t t = w.range[0].begin; t < w.range[0].end; ++t)
      for (std::int64_t r = w.range[1].begin; r < w.range[1].end; ++r)
        for (std::int64_t s = w.range[2].begin; s < w.range[2].end; ++s)
          f(w.start[0] + t * win_.dilation[0], w.start[1] + r * win_.dilation[1],
            w.start[2] + s * win_.dilation[2]);
  }

  template <class F>
  void for_each_output(F&& f) const {
    for (std::int64_t od = 0; od < y_.dims[2]; ++od)
      for (std::int64_t oh = 0; oh < y_.dims[3]; ++oh)
        for (std::int64_t ow = 0; ow < y_.dims[4]; ++ow) f(od, oh, ow);
  }

  // Number of elements averaged over: input elements only, or the window
  // clipped to the padded input.
  Acc divisor(const Window& w) const {
    std::int64_t count = 1;
    for (std::size_t i = 0; i < 3; ++i) {
      if (mode_ == PoolingMode::avg_exclude_pad) {
        count *= w.range[i].end - w.range[i].begin;
      } else {
        const std::int64_t end =
            std::min(w.start[i] + win_.size[i], x_.dims[i + 2] + win_.pad_end[i]);
        count *= end - w.start[i];
      }
    }
    return static_cast<Acc>(count);
  }

  struct ArgMax {
    bool found = false;
    std::size_t plane = 0;  // position in the (n, c) input plane
    Acc value = -std::numeric_limits<Acc>::infinity();
  };

  ArgMax argmax(const T* x, std::int64_t n, std::int64_t c, const Window& w) const {
    ArgMax best;
    for_each_input(w, [&](std::int64_t id, std::int64_t ih, std::int64_t iw) {
      if (best.found && std::isnan(best.value)) return;
      const Acc v = Element<T>::load(x[x_.offset(n, c, id, ih, iw)]);
      if (!best.found || v > best.value || std::isnan(v))
        best = {true, x_.plane_index(id, ih, iw), v};
    });
    return best;
  }

  Acc pooled_value(const T* x, std::int64_t n, std::int64_t c, std::int64_t od, std::int64_t oh,
                   std::int64_t ow) const {
    const Window w = window_at(od, oh, ow);
    if (mode_ == PoolingMode::max) return argmax(x, n, c, w).value;
    Acc sum = 0;
    for_each_input(w, [&](std::int64_t id, std::int64_t ih, std::int64_t iw) {
      sum += Element<T>::load(x[x_.offset(n, c, id, ih, iw)]);
    });
    return sum / divisor(w);
  }

  void scatter_gradient(std::vector<Acc>& plane, const T* x, Acc grad, std::int64_t n,
                        std::int64_t c, std::int64_t od, std::int64_t oh, std::int64_t ow) const {
    const Window w = window_at(od, oh, ow);
    if (mode_ == PoolingMode::max) {
      const ArgMax best = argmax(x, n, c, w);
      if (best.found) plane[best.plane] += grad;
      return;
    }
    const Acc share = grad / divisor(w);
    for_each_input(w, [&](std::int64_t id, std::int64_t ih, std::int64_t iw) {
      plane[x_.plane_index(id, ih, iw)] += share;
    });
  }

  View5 x_, y_;
  Window3 win_;
  PoolingMode mode_;
  bool parallel_;
  const ExecArgs& args_;
};

}  // namespace

void pool_reference(const OpDescriptor& desc, const ExecArgs& args) {
  dispatch_dtype(desc.dtype, [&]<class T>() {
    const PoolReference<T> pool(desc, args);
    if (desc.direction == Direction::fwd) {
      pool.forward();
    } else {
      pool.backward();
    }
  });
}

}  // namespace convjit::reference
