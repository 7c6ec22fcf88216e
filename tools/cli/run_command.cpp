#include <fmt/format.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "cli_status.hpp"
#include "command.hpp"
#include "convjit/convjit.hpp"
#include "integer_flags.hpp"
#include "model_flags.hpp"
#include "model_run.hpp"

namespace convjit::cli {

namespace {

// One layer of the built-in network.
struct LayerSpec {
  const char* name;
  bool is_conv;
  std::int64_t out_channels;  // conv: K
  std::int64_t kernel;        // conv filter / pool window (square); 0 = global pool
  std::int64_t stride;
  std::int64_t pad;
  std::int64_t groups;  // conv; -1 = depthwise
  PoolMode pool_mode;
};

// A small network touching every op family: conv with bias, strided conv,
// depthwise conv, 1x1 conv, max pool with padding, global average pool.
constexpr LayerSpec kTinyNet[] = {
    {"conv1", true, 16, 3, 1, 1, 1, CONVJIT_POOL_MAX},
    {"pool1", false, 0, 3, 2, 1, 0, CONVJIT_POOL_MAX},
    {"conv2", true, 32, 3, 2, 1, 1, CONVJIT_POOL_MAX},
    {"conv3_dw", true, 32, 3, 1, 1, -1, CONVJIT_POOL_MAX},
    {"conv4_1x1", true, 64, 1, 1, 0, 1, CONVJIT_POOL_MAX},
    {"pool2_global", false, 0, 0, 1, 0, 0, CONVJIT_POOL_AVG_EXCLUDE_PAD},
};

void check(const Status& status, const std::string& what) {
  if (!status.is_ok()) throw RuntimeError(fmt::format("{}: {}", what, status.message()));
}

std::vector<float> random_tensor(std::int64_t elements, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<std::size_t>(elements));
  for (auto& x : v) x = dist(rng);
  return v;
}

std::int64_t element_span(const TensorDesc& t) {
  std::int64_t last = 0;
  for (int i = 0; i < t.rank; ++i) last += (t.dims[i] - 1) * t.strides[i];
  return last + 1;
}

struct Layer {
  LayerSpec spec;
  TensorDesc x, w, y;
  ConvParams conv;
  PoolParams pool;
  std::vector<float> weights, bias_grad, weight_grad;
};

class TinyNetRun {
 public:
  // With `json`, run() prints nothing and returns the pass as JSON.
  TinyNetRun(std::int64_t batch, std::int64_t image, Layout layout, bool json)
      : layout_(layout), json_(json) {
    TensorDesc x;
    check(TensorDesc::contiguous(x, CONVJIT_DTYPE_F32, {batch, 3, image, image}, layout), "input");
    for (const LayerSpec& spec : kTinyNet) {
      layers_.push_back(make_layer(spec, x));
      x = layers_.back().y;
    }
  }

  nlohmann::json run() {
    total_ms_ = 0, calls_ = 0, rows_ = nlohmann::json::array();
    if (!json_)
      fmt::print("{:<13} {:<8} {:<13} {:>9}  {}\n", "layer", "op", "backend", "ms", "descriptor");
    std::vector<std::vector<float>> activations{random_tensor(element_span(layers_[0].x), rng_)};
    for (Layer& layer : layers_) {
      activations.push_back(std::vector<float>(static_cast<std::size_t>(element_span(layer.y))));
      forward(layer, activations[activations.size() - 2], activations.back());
    }
    std::vector<float> grad = random_tensor(element_span(layers_.back().y), rng_);
    for (std::size_t i = layers_.size(); i-- > 0;) {
      std::vector<float> input_grad(static_cast<std::size_t>(element_span(layers_[i].x)));
      backward(layers_[i], activations[i], grad, input_grad);
      grad = std::move(input_grad);
    }
    if (!json_) fmt::print("{} calls, {:.2f} ms in total\n", calls_, total_ms_);
    return {{"calls", rows_}, {"call_count", calls_}, {"total_ms", total_ms_}};
  }

 private:
  Layer make_layer(const LayerSpec& spec, const TensorDesc& x) {
    Layer layer{spec, x, {}, {}, ConvParams(2), PoolParams(2, spec.pool_mode), {}, {}, {}};
    std::int64_t y_dims[CONVJIT_MAX_RANK] = {};
    if (spec.is_conv) {
      const std::int64_t channels = x.dims[1];
      layer.conv.groups = spec.groups < 0 ? channels : spec.groups;
      for (int i = 0; i < 2; ++i) {
        layer.conv.stride[i] = spec.stride;
        layer.conv.pad_begin[i] = layer.conv.pad_end[i] = spec.pad;
      }
      check(TensorDesc::contiguous(
                layer.w, CONVJIT_DTYPE_F32,
                {spec.out_channels, channels / layer.conv.groups, spec.kernel, spec.kernel}),
            spec.name);
      check(conv_output_dims(layer.conv, x, layer.w, y_dims), spec.name);
      layer.weights = random_tensor(element_span(layer.w), rng_);
      layer.weight_grad.resize(layer.weights.size());
      layer.bias_grad.resize(static_cast<std::size_t>(spec.out_channels));
    } else {
      for (int i = 0; i < 2; ++i) {
        layer.pool.window[i] = spec.kernel == 0 ? x.dims[2 + i] : spec.kernel;
        layer.pool.stride[i] = spec.stride;
        layer.pool.pad_begin[i] = layer.pool.pad_end[i] = spec.pad;
      }
      check(pool_output_dims(layer.pool, x, false, y_dims), spec.name);
    }
    check(TensorDesc::contiguous(layer.y, CONVJIT_DTYPE_F32,
                                 {y_dims[0], y_dims[1], y_dims[2], y_dims[3]}, layout_),
          spec.name);
    return layer;
  }

  template <class F>
  void timed(const Layer& layer, const char* op, const std::string& descriptor, F&& call) {
    const auto start = std::chrono::steady_clock::now();
    check(call(), fmt::format("{} {}", layer.spec.name, op));
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    total_ms_ += ms;
    ++calls_;
    if (json_)
      rows_.push_back({{"layer", layer.spec.name},
                       {"op", op},
                       {"backend", last_backend()},
                       {"ms", ms},
                       {"descriptor", descriptor}});
    else
      fmt::print("{:<13} {:<8} {:<13} {:>9.3f}  {}\n", layer.spec.name, op, last_backend(), ms,
                 descriptor);
  }

  std::string conv_name(const Layer& l, ConvDirection direction) {
    std::string name;
    check(conv_descriptor_name(l.conv, direction, l.x, l.w, l.y, false, name), l.spec.name);
    return name;
  }
  std::string pool_name(const Layer& l, PoolDirection direction) {
    std::string name;
    check(pool_descriptor_name(l.pool, direction, l.x, l.y, false, name), l.spec.name);
    return name;
  }

  void forward(const Layer& l, const std::vector<float>& x, std::vector<float>& y) {
    if (l.spec.is_conv) {
      timed(l, "fwd", conv_name(l, CONVJIT_CONV_FWD), [&] {
        return conv_forward(l.conv, l.x, x.data(), l.w, l.weights.data(), l.y, y.data());
      });
    } else {
      timed(l, "fwd", pool_name(l, CONVJIT_POOL_FWD),
            [&] { return pool_forward(l.pool, l.x, x.data(), l.y, y.data()); });
    }
  }

  void backward(Layer& l, const std::vector<float>& x, const std::vector<float>& dy,
                std::vector<float>& dx) {
    if (!l.spec.is_conv) {
      timed(l, "bwd", pool_name(l, CONVJIT_POOL_BWD),
            [&] { return pool_backward(l.pool, l.x, x.data(), l.y, dy.data(), dx.data()); });
      return;
    }
    timed(l, "bwddata", conv_name(l, CONVJIT_CONV_BWDDATA), [&] {
      return conv_backward_data(l.conv, l.y, dy.data(), l.w, l.weights.data(), l.x, dx.data());
    });
    timed(l, "bwdfilt", conv_name(l, CONVJIT_CONV_BWDFILT), [&] {
      return conv_backward_filter(l.conv, l.x, x.data(), l.y, dy.data(), l.w, l.weight_grad.data());
    });
    std::string bias_name;
    check(bias_grad_descriptor_name(l.y, false, bias_name), l.spec.name);
    timed(l, "bwdbias", bias_name,
          [&] { return conv_backward_bias(l.y, dy.data(), l.bias_grad.data()); });
  }

  Layout layout_;
  bool json_;
  nlohmann::json rows_;
  std::mt19937 rng_{20261121};
  std::vector<Layer> layers_;
  double total_ms_ = 0;
  int calls_ = 0;
};

class RunCommand final : public Command {
 public:
  explicit RunCommand(CLI::App& app) {
    command_ = app.add_subcommand(
        "run", "Run a model's training step (or the built-in tiny network) through the dispatcher");
    model_.add_to(*command_);
    add_integer_flag(*command_, "--reps", model_options_.repetitions,
                     "steady-state calls per op (median shown)", {0, 1000});
    command_->add_flag("--verify", model_options_.verify,
                       "report the max error against the host reference");
    command_->add_flag("--json", model_options_.json, "machine-readable output");
    add_integer_flag(*command_, "--passes", passes_, "forward+backward passes of the tiny network",
                     {1, 1000});
    command_->add_flag("--rescan", rescan_,
                       "before each pass after the first, forget cached misses so tuned libraries "
                       "added to the cache meanwhile are picked up");
    command_->footer(
        "Examples:\n  convjit run --model yolo11n --imgsz 128 --verify\n"
        "  convjit run --table mynet.json --batch 8 --json\n"
        "  convjit run --batch 4 --imgsz 64 --layout nhwc      (the tiny network)\n"
        "  CONVJIT_VERBOSE=1 convjit run --passes 2 --rescan");
  }

  [[nodiscard]] const std::string& name() const override { return command_->get_name(); }
  [[nodiscard]] bool selected() const override { return command_->parsed(); }
  [[nodiscard]] int run() const override {
    if (model_.given()) return run_model(model_.model_name(), model_.expand(), model_options_);
    const std::int64_t image = model_.image_size() == 0 ? 32 : model_.image_size();
    const char* layout = model_.channels_last() ? "nhwc" : "nchw";
    const bool json = model_options_.json;
    if (!json)
      fmt::print("convjit {} run: tiny conv+pool network, batch {}, {}x{}, {}, f32, host device\n",
                 version(), model_.batch(), image, image, layout);
    TinyNetRun net(model_.batch(), image,
                   model_.channels_last() ? CONVJIT_LAYOUT_NHWC : CONVJIT_LAYOUT_NCHW, json);
    nlohmann::json passes = nlohmann::json::array();
    for (int pass = 0; pass < passes_; ++pass) {
      if (pass > 0 && rescan_ && convjit_rescan() != CONVJIT_STATUS_SUCCESS)
        throw RuntimeError(convjit_last_error_message());
      if (passes_ > 1 && !json) fmt::print("pass {}\n", pass + 1);
      passes.push_back(net.run());
    }
    if (json)
      fmt::print("{}\n", nlohmann::json{{"network", "tiny"},
                                        {"device", "host"},
                                        {"dtype", "f32"},
                                        {"batch", model_.batch()},
                                        {"image_size", image},
                                        {"layout", layout},
                                        {"passes", passes}}
                             .dump(2));
    return kExitOk;
  }

 private:
  CLI::App* command_ = nullptr;
  ModelFlags model_;
  ModelRunOptions model_options_;
  int passes_ = 1;
  bool rescan_ = false;
};

}  // namespace

std::unique_ptr<Command> make_run_command(CLI::App& app) {
  return std::make_unique<RunCommand>(app);
}

}  // namespace convjit::cli
