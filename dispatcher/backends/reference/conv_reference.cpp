#include "dispatcher/backends/reference/conv_reference.hpp"

#include <algorithm>
#include <vector>

#include "dispatcher/backends/reference/dtype_dispatch.hpp"
#include "dispatcher/backends/reference/epilogue_reference.hpp"
#include "dispatcher/backends/reference/tensor_view.hpp"

namespace convjit::reference {

namespace {

template <class T>
class ConvReference {
  using Acc = typename Element<T>::Acc;
  // Channels per backward_filter task: enough to amortise the tap ranges,
  // few enough that small layers still split across cores.
  static constexpr std::int64_t kChannelBlock = 32;

 public:
  ConvReference(const OpDescriptor& d, const ExecArgs& args)
      : x_(canonical_view(d.x_dims, d.x_strides, d.spatial_dims)),
        w_(canonical_view(d.w_dims, d.w_strides, d.spatial_dims)),
        y_(canonical_view(d.y_dims, d.y_strides, d.spatial_dims)),
        win_(canonical_window(d)),
        filters_per_group_(w_.dims[0] / d.groups),
        parallel_(worth_parallel(y_.dims[0] * y_.dims[1] * y_.spatial_size() * w_.dims[1] *
                                 w_.spatial_size())),
        desc_(d),
        args_(args) {}

  void forward() const {
    const T* x = static_cast<const T*>(args_.x);
    const T* w = static_cast<const T*>(args_.w);
    T* y = static_cast<T*>(args_.out);
    const EpilogueStore<T> store(desc_, args_);
    const std::int64_t batch = x_.dims[0], filters = w_.dims[0];
#pragma omp parallel for schedule(dynamic) if (parallel_)
    for (std::int64_t nk = 0; nk < batch * filters; ++nk) {
      const std::int64_t n = nk / filters, k = nk % filters;
      const std::int64_t c0 = first_channel(k);
      for_each_output([&](std::int64_t od, std::int64_t oh, std::int64_t ow) {
        const Taps taps = taps_at(od, oh, ow);
        Acc acc = 0;
        for (std::int64_t c = 0; c < w_.dims[1]; ++c)
          for_each_tap(taps, od, oh, ow,
                       [&](std::int64_t t, std::int64_t r, std::int64_t s, std::int64_t id,
                           std::int64_t ih, std::int64_t iw) {
                         acc += Element<T>::load(x[x_.offset(n, c0 + c, id, ih, iw)]) *
                                Element<T>::load(w[w_.offset(k, c, t, r, s)]);
                       });
        store(y, y_.offset(n, k, od, oh, ow), k, acc);
      });
    }
  }

  // The adjoint of forward: every (output, tap) pair scatters dy*w back to
  // the input element it read.  One task owns one (n, c) plane of dx.
  void backward_data() const {
    const T* dy = static_cast<const T*>(args_.dy);
    const T* w = static_cast<const T*>(args_.w);
    T* dx = static_cast<T*>(args_.out);
    const std::int64_t batch = x_.dims[0], channels = x_.dims[1];
    const std::int64_t per_group = w_.dims[1];
#pragma omp parallel if (parallel_)
    {
      std::vector<Acc> plane(static_cast<std::size_t>(x_.spatial_size()));
#pragma omp for schedule(dynamic)
      for (std::int64_t nc = 0; nc < batch * channels; ++nc) {
        const std::int64_t n = nc / channels, c = nc % channels;
        const std::int64_t k0 = (c / per_group) * filters_per_group_, cw = c % per_group;
        std::fill(plane.begin(), plane.end(), Acc{0});
        for (std::int64_t k = k0; k < k0 + filters_per_group_; ++k)
          for_each_output([&](std::int64_t od, std::int64_t oh, std::int64_t ow) {
            const Acc grad = Element<T>::load(dy[y_.offset(n, k, od, oh, ow)]);
            for_each_tap(taps_at(od, oh, ow), od, oh, ow,
                         [&](std::int64_t t, std::int64_t r, std::int64_t s, std::int64_t id,
                             std::int64_t ih, std::int64_t iw) {
                           plane[x_.plane_index(id, ih, iw)] +=
                               grad * Element<T>::load(w[w_.offset(k, cw, t, r, s)]);
                         });
          });
        store_plane(plane, x_, dx, n, c, args_.alpha, args_.beta);
      }
    }
  }

  // One task owns one filter k and a block of its channels, and sums over
  // batch and outputs.  The taps of an output are found once per task and
  // output, not once per channel: with one task per (k, c), small-spatial
  // layers (ResNet's layer4) spent their time on tap ranges and scheduling.
  // Each dw element still sums over (n, output) in the same order.
  void backward_filter() const {
    const T* x = static_cast<const T*>(args_.x);
    const T* dy = static_cast<const T*>(args_.dy);
    T* dw = static_cast<T*>(args_.out);
    const std::int64_t filters = w_.dims[0], per_group = w_.dims[1];
    const std::int64_t blocks = (per_group + kChannelBlock - 1) / kChannelBlock;
    const std::int64_t taps_per_channel = w_.spatial_size();
#pragma omp parallel if (parallel_)
    {
      std::vector<Acc> sums(static_cast<std::size_t>(kChannelBlock * taps_per_channel));
#pragma omp for schedule(dynamic)
      for (std::int64_t kb = 0; kb < filters * blocks; ++kb) {
        const std::int64_t k = kb / blocks, cw0 = (kb % blocks) * kChannelBlock;
        const std::int64_t channels = std::min(kChannelBlock, per_group - cw0);
        const std::int64_t c0 = first_channel(k) + cw0;
        std::fill(sums.begin(), sums.end(), Acc{0});
        for (std::int64_t n = 0; n < x_.dims[0]; ++n)
          for_each_output([&](std::int64_t od, std::int64_t oh, std::int64_t ow) {
            const Acc grad = Element<T>::load(dy[y_.offset(n, k, od, oh, ow)]);
            const Taps taps = taps_at(od, oh, ow);
            for (std::int64_t c = 0; c < channels; ++c) {
              Acc* channel_sums = &sums[static_cast<std::size_t>(c * taps_per_channel)];
              for_each_tap(taps, od, oh, ow,
                           [&](std::int64_t t, std::int64_t r, std::int64_t s, std::int64_t id,
                               std::int64_t ih, std::int64_t iw) {
                             channel_sums[(t * w_.dims[3] + r) * w_.dims[4] + s] +=
                                 Element<T>::load(x[x_.offset(n, c0 + c, id, ih, iw)]) * grad;
                           });
            }
          });
        for (std::int64_t c = 0; c < channels; ++c) {
          const Acc* channel_sums = &sums[static_cast<std::size_t>(c * taps_per_channel)];
          std::size_t i = 0;
          for (std::int64_t t = 0; t < w_.dims[2]; ++t)
            for (std::int64_t r = 0; r < w_.dims[3]; ++r)
              for (std::int64_t s = 0; s < w_.dims[4]; ++s)
                scale_store(dw[w_.offset(k, cw0 + c, t, r, s)], channel_sums[i++], args_.alpha,
                            args_.beta);
        }
      }
    }
  }

 private:
  std::int64_t first_channel(std::int64_t k) const { return (k / filters_per_group_) * w_.dims[1]; }

  template <class F>
  void for_each_output(F&& f) const {
    for (std::int64_t od = 0; od < y_.dims[2]; ++od)
      for (std::int64_t oh = 0; oh < y_.dims[3]; ++oh)
        for (std::int64_t ow = 0; ow < y_.dims[4]; ++ow) f(od, oh, ow);
  }

  TapRange taps_of(int dim, std::int64_t out_index) const {
    const auto i = static_cast<std::size_t>(dim);
    return valid_taps(out_index, x_.dims[i + 2], win_.size[i], win_.pad_begin[i], win_.stride[i],
                      win_.dilation[i]);
  }
  std::int64_t input_index(int dim, std::int64_t out_index, std::int64_t tap) const {
    const auto i = static_cast<std::size_t>(dim);
    return out_index * win_.stride[i] - win_.pad_begin[i] + tap * win_.dilation[i];
  }

  // The in-bounds taps of one output position, per spatial dim.  Computed
  // once per output: the divisions in valid_taps dominate otherwise.
  struct Taps {
    TapRange d, h, w;
  };
  Taps taps_at(std::int64_t od, std::int64_t oh, std::int64_t ow) const {
    return {taps_of(0, od), taps_of(1, oh), taps_of(2, ow)};
  }

  // Calls f(t, r, s, id, ih, iw) for every tap whose input lies inside x.
  template <class F>
  void for_each_tap(const Taps& taps, std::int64_t od, std::int64_t oh, std::int64_t ow,
                    F&& f) const {
    for (std::int64_t t = taps.d.begin; t < taps.d.end; ++t)
      for (std::int64_t r = taps.h.begin; r < taps.h.end; ++r)
        for (std::int64_t s = taps.w.begin; s < taps.w.end; ++s)
          f(t, r, s, input_index(0, od, t), input_index(1, oh, r), input_index(2, ow, s));
  }

  View5 x_, w_, y_;
  Window3 win_;
  std::int64_t filters_per_group_;
  bool parallel_;
  const OpDescriptor& desc_;
  const ExecArgs& args_;
};

template <class T>
void bias_grad_typed(const OpDescriptor& d, const ExecArgs& args) {
  using Acc = typename Element<T>::Acc;
  const View5 dy_view = canonical_view(d.y_dims, d.y_strides, d.spatial_dims);
  const T* dy = static_cast<const T*>(args.dy);
  T* db = static_cast<T*>(args.out);
#pragma omp parallel for schedule( \
    static) if (worth_parallel(dy_view.dims[0] * dy_view.dims[1] * dy_view.spatial_size()))
  for (std::int64_t k = 0; k < dy_view.dims[1]; ++k) {
    Acc sum = 0;
    for (std::int64_t n = 0; n < dy_view.dims[0]; ++n)
      for (std::int64_t od = 0; od < dy_view.dims[2]; ++od)
        for (std::int64_t oh = 0; oh < dy_view.dims[3]; ++oh)
          for (std::int64_t ow = 0; ow < dy_view.dims[4]; ++ow)
            sum += Element<T>::load(dy[dy_view.offset(n, k, od, oh, ow)]);
    scale_store(db[k], sum, args.alpha, args.beta);
  }
}

}  // namespace

void conv_reference(const OpDescriptor& desc, const ExecArgs& args) {
  dispatch_dtype(desc.dtype, [&]<class T>() {
    const ConvReference<T> conv(desc, args);
    switch (desc.direction) {
      case Direction::fwd:
        conv.forward();
        break;
      case Direction::bwddata:
        conv.backward_data();
        break;
      case Direction::bwdfilt:
        conv.backward_filter();
        break;
      case Direction::bwd:
        break;  // not a conv direction; rejected by validation
    }
  });
}

void bias_grad_reference(const OpDescriptor& desc, const ExecArgs& args) {
  dispatch_dtype(desc.dtype, [&]<class T>() { bias_grad_typed<T>(desc, args); });
}

}  // namespace convjit::reference
