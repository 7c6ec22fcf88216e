#include "dispatcher/backends/reference/resize_reference.hpp"

#include <algorithm>
#include <array>
#include <vector>

#include "dispatcher/backends/reference/dtype_dispatch.hpp"
#include "dispatcher/backends/reference/tensor_view.hpp"
#include "dispatcher/descriptor/resize_taps.hpp"

namespace convjit::reference {

namespace {

template <class T, class Coord>
class ResizeReference {
  using Acc = typename Element<T>::Acc;
  using Tap = ResizeTap<Coord>;

 public:
  ResizeReference(const OpDescriptor& d, const ExecArgs& args)
      : args_(args),
        x_(canonical_view(d.x_dims, d.x_strides, d.spatial_dims)),
        y_(canonical_view(d.y_dims, d.y_strides, d.spatial_dims)) {
    const int first = kMaxSpatialDims - d.spatial_dims;
    for (int a = 0; a < kMaxSpatialDims; ++a) {
      const auto at = static_cast<std::size_t>(a);
      const double scale = a < first ? 0.0 : d.resize_scale(a - first);
      const ResizeAxis<Coord> axis(d.resize_mode, d.resize_coordinates, x_.dims[at + 2],
                                   y_.dims[at + 2], scale);
      for (std::int64_t o = 0; o < y_.dims[at + 2]; ++o) taps_[at].push_back(axis.tap(o));
      taps_per_axis_[at] = a >= first && d.resize_mode == ResizeMode::linear ? 2 : 1;
    }
  }

  void forward() const {
    const T* x = static_cast<const T*>(args_.x);
    T* y = static_cast<T*>(args_.out);
#pragma omp parallel for schedule(dynamic) if (parallel())
    for (std::int64_t nc = 0; nc < y_.dims[0] * y_.dims[1]; ++nc) {
      const std::int64_t n = nc / y_.dims[1], c = nc % y_.dims[1];
      for_each_output([&](std::int64_t od, std::int64_t oh, std::int64_t ow) {
        Acc sum = 0;
        for_each_tap(od, oh, ow, [&](std::int64_t id, std::int64_t ih, std::int64_t iw, Acc w) {
          sum += w * Element<T>::load(x[x_.offset(n, c, id, ih, iw)]);
        });
        scale_store(y[y_.offset(n, c, od, oh, ow)], sum, args_.alpha, args_.beta);
      });
    }
  }

  void backward() const {
    const T* dy = static_cast<const T*>(args_.dy);
    T* dx = static_cast<T*>(args_.out);
#pragma omp parallel if (parallel())
    {
      std::vector<double> plane(static_cast<std::size_t>(x_.spatial_size()));
#pragma omp for schedule(dynamic)
      for (std::int64_t nc = 0; nc < x_.dims[0] * x_.dims[1]; ++nc) {
        const std::int64_t n = nc / x_.dims[1], c = nc % x_.dims[1];
        std::fill(plane.begin(), plane.end(), 0.0);
        for_each_output([&](std::int64_t od, std::int64_t oh, std::int64_t ow) {
          const double g = Element<T>::load(dy[y_.offset(n, c, od, oh, ow)]);
          for_each_tap(od, oh, ow, [&](std::int64_t id, std::int64_t ih, std::int64_t iw, Acc w) {
            plane[x_.plane_index(id, ih, iw)] += static_cast<double>(w) * g;
          });
        });
        store_plane(plane, x_, dx, n, c, args_.alpha, args_.beta);
      }
    }
  }

 private:
  [[nodiscard]] bool parallel() const {
    return worth_parallel(y_.dims[0] * y_.dims[1] * y_.spatial_size());
  }

  template <class F>
  void for_each_output(F&& f) const {
    for (std::int64_t od = 0; od < y_.dims[2]; ++od)
      for (std::int64_t oh = 0; oh < y_.dims[3]; ++oh)
        for (std::int64_t ow = 0; ow < y_.dims[4]; ++ow) f(od, oh, ow);
  }

  // Linear visits both taps of each of the op's dims, even at weight 0, so
  // that a NaN or infinity next to an output propagates as in PyTorch;
  // nearest, and the unit dims of the canonical form, one.
  template <class F>
  void for_each_tap(std::int64_t od, std::int64_t oh, std::int64_t ow, F&& f) const {
    const Tap& td = taps_[0][static_cast<std::size_t>(od)];
    const Tap& th = taps_[1][static_cast<std::size_t>(oh)];
    const Tap& tw = taps_[2][static_cast<std::size_t>(ow)];
    for (int a = 0; a < taps_per_axis_[0]; ++a) {
      const auto [id, wd] = pick(td, a);
      for (int b = 0; b < taps_per_axis_[1]; ++b) {
        const auto [ih, wh] = pick(th, b);
        for (int e = 0; e < taps_per_axis_[2]; ++e) {
          const auto [iw, ww] = pick(tw, e);
          f(id, ih, iw, static_cast<Acc>(wd) * static_cast<Acc>(wh) * static_cast<Acc>(ww));
        }
      }
    }
  }

  static std::pair<std::int64_t, Coord> pick(const Tap& t, int which) {
    return which == 0 ? std::pair{t.first, t.first_weight} : std::pair{t.second, t.second_weight};
  }

  const ExecArgs& args_;
  View5 x_, y_;
  std::array<int, kMaxSpatialDims> taps_per_axis_{};
  std::array<std::vector<Tap>, kMaxSpatialDims> taps_;
};

}  // namespace

void resize_reference(const OpDescriptor& desc, const ExecArgs& args) {
  dispatch_dtype(desc.dtype, [&]<class T>() {
    // PyTorch's opmath: linear coordinates in f64 for f64 data only.
    auto run = [&]<class Coord>() {
      const ResizeReference<T, Coord> op(desc, args);
      desc.direction == Direction::fwd ? op.forward() : op.backward();
    };
    if (std::is_same_v<T, double> && desc.resize_mode == ResizeMode::linear) {
      run.template operator()<double>();
    } else {
      run.template operator()<float>();
    }
  });
}

}  // namespace convjit::reference
