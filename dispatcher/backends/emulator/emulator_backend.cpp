#include "dispatcher/backends/emulator/emulator_backend.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <memory>
#include <vector>

#include "dispatcher/backends/emulator/kernel_emulator.hpp"
#include "dispatcher/backends/jit/kernel_operands.hpp"
#include "dispatcher/backends/jit/kernel_variants.hpp"
#include "dispatcher/backends/jit/wgmma_conv.hpp"
#include "dispatcher/descriptor/canonical_layout.hpp"
#include "dispatcher/descriptor/operand_layout.hpp"
#include "dispatcher/descriptor/window_reach.hpp"

namespace convjit {

namespace {

using emulator::BufferRole;
using emulator::BufferSpec;

// The buffer a descriptor slot describes, with its strided view's elements
// marked, so that a read of a gap (a halo, an NHWC padding) is caught.
BufferSpec slot_buffer(const OpDescriptor& d, Slot slot, const char* name, BufferRole role) {
  const View5 v = canonical_view(slot_dims(d, slot), slot_strides(d, slot), d.spatial_dims);
  BufferSpec spec{name,
                  role,
                  element_size(d.dtype),
                  static_cast<std::int64_t>(slot_bytes(d, slot) / element_size(d.dtype)),
                  {}};
  spec.is_element.assign(static_cast<std::size_t>(spec.span), 0);
  for (std::int64_t n = 0; n < v.dims[0]; ++n)
    for (std::int64_t c = 0; c < v.dims[1]; ++c)
      for (std::int64_t z = 0; z < v.dims[2]; ++z)
        for (std::int64_t y = 0; y < v.dims[3]; ++y)
          for (std::int64_t x = 0; x < v.dims[4]; ++x)
            spec.is_element[static_cast<std::size_t>(v.offset(n, c, z, y, x))] = 1;
  return spec;
}

const char* output_name(const OpDescriptor& d) {
  if (d.kind == OpKind::bias_grad) return "db";
  switch (output_slot(d)) {
    case Slot::x:
      return "dx";
    case Slot::w:
      return "dw";
    case Slot::y:
      break;
  }
  return "y";
}

BufferSpec output_buffer(const OpDescriptor& d) {
  if (d.is_batchnorm() && d.direction == Direction::bwd && !d.has_norm_flag(kNormGradInput))
    return {};  // parameter gradients only
  if (d.kind == OpKind::bias_grad)
    return {"db", BufferRole::output, element_size(d.dtype), d.y_dims[1], {}};
  return slot_buffer(d, output_slot(d), output_name(d), BufferRole::output);
}

// The epilogue pass (kEpiloguePassVariant) reads the plain conv's result,
// passed as x, in y's layout, and nothing else.
bool is_epilogue_pass(const KernelSource& source) { return source.variant == kEpiloguePassVariant; }

KernelInputs inputs_of(const OpDescriptor& d, const KernelSource& source) {
  if (is_epilogue_pass(source)) return {KernelInput::x, KernelInput::none};
  return kernel_inputs(d);
}

BufferSpec input_buffer(const OpDescriptor& d, KernelInput input, const KernelSource& source) {
  if (input == KernelInput::none) return {};
  if (is_epilogue_pass(source)) return slot_buffer(d, Slot::y, "conv", BufferRole::input);
  return slot_buffer(d, input_slot(input), input_name(input), BufferRole::input);
}

// A conv fwd's epilogue operands: the bias's K elements, the residual in y's layout.
BufferSpec bias_buffer(const OpDescriptor& d) {
  if (!d.has_bias()) return {};
  return {"bias", BufferRole::input, element_size(d.dtype), d.w_dims[0], {}};
}
BufferSpec residual_buffer(const OpDescriptor& d) {
  if (!d.has_residual()) return {};
  return slot_buffer(d, Slot::y, "residual", BufferRole::input);
}

// A batchnorm's per-channel operands: C f32 values each, read or written
// as its direction and flags say; unused ones have no name.
struct NormBuffers {
  BufferSpec scale, shift, running_mean, running_var, mean, invstd, scale_grad, shift_grad;
};

NormBuffers norm_buffers(const OpDescriptor& d) {
  NormBuffers b;
  if (!d.is_batchnorm()) return b;
  const auto spec = [&](const char* name, bool used, bool written) {
    if (!used) return BufferSpec{};
    return BufferSpec{name, written ? BufferRole::output : BufferRole::input, sizeof(float),
                      d.x_dims[1], {}};
  };
  const bool training = !d.has_norm_flag(kNormInference), fwd = d.direction == Direction::fwd;
  b.scale = spec("scale", d.has_norm_flag(kNormScale), false);
  b.shift = spec("shift", d.has_norm_flag(kNormShift), false);
  b.running_mean = spec("running_mean", true, fwd && training);
  b.running_var = spec("running_var", true, fwd && training);
  b.mean = spec("mean", training, fwd);
  b.invstd = spec("invstd", training, fwd);
  b.scale_grad = spec("scale_grad", !fwd && d.has_norm_flag(kNormGradScale), true);
  b.shift_grad = spec("shift_grad", !fwd && d.has_norm_flag(kNormGradShift), true);
  return b;
}

// An operand the launch passes where its spec names it; outputs are
// copied back to the caller's pointer.
emulator::EmulatedOperand norm_operand(const BufferSpec& spec, const void* data) {
  if (spec.name.empty() || data == nullptr) return {};
  void* back = spec.role == BufferRole::output ? const_cast<void*>(data) : nullptr;
  return {&spec, data, back};
}

// The buffer layouts are fixed by the descriptor, so they are built once
// here; a call only attaches its pointers.
class EmulatorKernel final : public Kernel {
 public:
  EmulatorKernel(const OpDescriptor& desc, KernelSource source,
                 const emulator::EmulatedTemplate& kernels)
      : desc_(desc),
        inputs_(inputs_of(desc, source)),
        in0_(input_buffer(desc, inputs_.in0, source)),
        in1_(input_buffer(desc, inputs_.in1, source)),
        out_(output_buffer(desc)),
        bias_(bias_buffer(desc)),
        residual_(residual_buffer(desc)),
        norm_(norm_buffers(desc)),
        source_(std::move(source)),
        kernels_(kernels) {}

  [[nodiscard]] Status execute(const ExecArgs& args) const override {
    if (desc_.has_epilogue())
      if (Status s = check_epilogue_operands(desc_, args); !s.is_ok()) return s;
    if (Status s = check_output_beta(source_.tensor_maps, args.beta); !s.is_ok()) return s;
    return emulator::emulate(launch_of(args));
  }

  [[nodiscard]] Result<std::vector<emulator::KernelMemoryCounters>> count_memory(
      const ExecArgs& args, unsigned sampled) const {
    return emulator::count_memory(launch_of(args), sampled);
  }

 private:
  [[nodiscard]] emulator::EmulatedLaunch launch_of(const ExecArgs& args) const {
    emulator::EmulatedLaunch launch;
    launch.kernels = &kernels_;
    launch.source = &source_;
    launch.in0 = {&in0_, input_pointer(args, inputs_.in0)};
    launch.in1 = {&in1_, input_pointer(args, inputs_.in1)};
    if (!out_.name.empty()) launch.out = {&out_, args.out};
    if (desc_.is_batchnorm()) launch.norm = norm_operands(args.norm);
    if (desc_.has_bias()) launch.bias = {&bias_, args.bias};
    if (desc_.has_residual()) launch.residual = {&residual_, args.residual};
    launch.out_destination = args.out;
    launch.alpha = static_cast<float>(args.alpha);
    launch.beta = static_cast<float>(args.beta);
    return launch;
  }

  [[nodiscard]] emulator::EmulatedNormOperands norm_operands(const NormOperands& n) const {
    return {norm_operand(norm_.scale, n.scale),
            norm_operand(norm_.shift, n.shift),
            norm_operand(norm_.running_mean, n.running_mean),
            norm_operand(norm_.running_var, n.running_var),
            norm_operand(norm_.mean, n.mean),
            norm_operand(norm_.invstd, n.invstd),
            norm_operand(norm_.scale_grad, n.scale_grad),
            norm_operand(norm_.shift_grad, n.shift_grad),
            n.momentum};
  }

  OpDescriptor desc_;
  KernelInputs inputs_;
  BufferSpec in0_, in1_, out_, bias_, residual_;
  NormBuffers norm_;
  KernelSource source_;
  const emulator::EmulatedTemplate& kernels_;
};

Result<const emulator::EmulatedTemplate*> emulated_kernels_of(const OpDescriptor& desc,
                                                              const KernelSource& source) {
  // The Hopper conv's variants differ in Problem constants alone: one build.
  const std::string_view built =
      find_wgmma_config(source.variant) != nullptr ? kWgmmaVariant : source.variant;
  const auto* kernels = emulator::find_emulated_template(
      emulator::emulated_templates(), source.template_name, desc.dtype, built);
  if (kernels == nullptr)
    return Status(CONVJIT_STATUS_INTERNAL_ERROR,
                  fmt::format("{} has no emulated build for {} ({})", source.template_name,
                              dtype_name(desc.dtype), source.variant));
  return kernels;
}

Result<const emulator::EmulatedTemplate*> emulated_kernels_for(const OpDescriptor& desc,
                                                               std::string_view variant,
                                                               KernelSource& source) {
  auto made = kernel_source(desc, variant);
  if (!made.is_ok()) return made.status();
  source = std::move(made).value();
  return emulated_kernels_of(desc, source);
}

Result<std::unique_ptr<Kernel>> build_emulated(const OpDescriptor& desc, std::string_view variant,
                                               BuildTrace& trace) {
  KernelSource source;
  auto kernels = emulated_kernels_for(desc, variant, source);
  if (!kernels.is_ok()) return kernels.status();
  trace.probes.push_back(
      {source.template_name, fmt::format("emulated on the host (variant {})", source.variant)});
  return std::unique_ptr<Kernel>(
      std::make_unique<EmulatorKernel>(desc, std::move(source), *kernels.value()));
}

// What count_variant_memory may take of the host's memory.
constexpr double kCountingHostBytes = 6e9;

// A zero-filled host tensor (0 in every float format) that starts on a
// 256-byte boundary.
class AlignedZeros {
 public:
  explicit AlignedZeros(std::size_t bytes) : storage_(bytes + kAlignment) {
    void* p = storage_.data();
    std::size_t room = storage_.size();
    data_ = std::align(kAlignment, bytes, p, room);
  }
  [[nodiscard]] void* data() const { return data_; }

 private:
  static constexpr std::size_t kAlignment = 256;
  std::vector<std::byte> storage_;
  void* data_;
};

// The sampled blocks' footprint is scaled to the grid as if no two blocks
// shared a sector, and capped at the buffer: where blocks share x (a
// pixel tile's filter tiles) and a strided conv reaches a part of it (a
// 1 x 1 conv of stride 2: a quarter), that overstated the sectors the
// kernel takes from DRAM.  x's is capped at the part the conv's windows
// reach (window_reach.hpp).
void cap_input_footprint(const OpDescriptor& desc,
                         std::vector<emulator::KernelMemoryCounters>& kernels) {
  const double reached = window_reach_fraction(desc);
  for (emulator::KernelMemoryCounters& k : kernels)
    for (emulator::BufferFootprint& f : k.footprint)
      if (f.name == "x")
        f.sectors = std::min(f.sectors, std::ceil(reached * static_cast<double>(f.buffer_sectors)));
}

}  // namespace

Result<std::unique_ptr<Kernel>> emulate_kernel_source(const OpDescriptor& desc,
                                                      KernelSource source) {
  auto kernels = emulated_kernels_of(desc, source);
  if (!kernels.is_ok()) return kernels.status();
  return std::unique_ptr<Kernel>(
      std::make_unique<EmulatorKernel>(desc, std::move(source), *kernels.value()));
}

Result<std::vector<emulator::KernelMemoryCounters>> count_variant_memory(const OpDescriptor& desc,
                                                                         std::string_view variant,
                                                                         unsigned sampled) {
  KernelSource source;
  auto kernels = emulated_kernels_for(desc, variant, source);
  if (!kernels.is_ok()) return kernels.status();
  const std::size_t unit = element_size(desc.dtype);
  // The emulator keeps, per element: the host tensor, its copy, a layout
  // flag twice over, and for outputs and the workspace the writing thread.
  const auto count = [&](std::size_t bytes) { return static_cast<double>(bytes / unit); };
  const double needed =
      (count(slot_bytes(desc, Slot::x)) + count(slot_bytes(desc, Slot::y))) *
          static_cast<double>(2 * unit + 2) +
      (count(slot_bytes(desc, output_slot(desc))) + count(source.workspace_bytes)) * 8;
  if (needed > kCountingHostBytes)
    return Status::not_available(fmt::format(
        "counting in the emulator needs about {:.1f} GB of host memory for these tensors (more "
        "than {:.0f} GB); analyse a smaller batch",
        needed / 1e9, kCountingHostBytes / 1e9));
  const EmulatorKernel kernel(desc, std::move(source), *kernels.value());
  const auto elements = [&](std::int64_t n) { return static_cast<std::size_t>(n) * unit; };
  const AlignedZeros x(slot_bytes(desc, Slot::x)), w(desc.is_conv() ? slot_bytes(desc, Slot::w) : 0),
      y(slot_bytes(desc, Slot::y)), bias(desc.has_bias() ? elements(desc.w_dims[0]) : 0),
      out(desc.kind == OpKind::bias_grad ? elements(desc.y_dims[1])
                                         : slot_bytes(desc, output_slot(desc)));
  ExecArgs args;
  args.x = x.data();
  args.w = w.data();
  args.dy = y.data();
  args.out = out.data();
  if (desc.has_bias()) args.bias = bias.data();
  if (desc.has_residual()) args.residual = y.data();
  // A batchnorm's per-channel operands: zeros, C of each (a zero running
  // variance normalises by 1 / sqrt(epsilon), finite).
  const std::size_t channels = desc.is_batchnorm() ? static_cast<std::size_t>(desc.x_dims[1]) : 0;
  const AlignedZeros per_channel(channels * sizeof(float) * 8);
  auto* norm = static_cast<float*>(per_channel.data());
  const auto at = [&](std::size_t i) { return norm + i * channels; };
  if (desc.is_batchnorm())
    args.norm = {at(0), at(1), at(2), at(3), at(4), at(5), at(6), at(7), 0.1};
  auto counted = kernel.count_memory(args, sampled);
  if (counted.is_ok() && desc.is_conv()) cap_input_footprint(desc, counted.value());
  return counted;
}

Status EmulatorBackend::check_support(const OpDescriptor& desc,
                                      const convjit_device_t& device) const {
  if (device.kind != CONVJIT_DEVICE_HOST)
    return Status::not_available(
        "the emulator runs the kernel templates on host buffers; pass the host device");
  return jit_supports(desc);
}

Result<std::unique_ptr<Kernel>> EmulatorBackend::build(const OpDescriptor& desc,
                                                       const convjit_device_t& device,
                                                       BuildTrace& trace) {
  return build_variant(desc, device, "", trace);
}

// The emulator's architecture is "": every variant, as on an sm_80+ GPU.
Result<std::unique_ptr<Kernel>> EmulatorBackend::build_variant(const OpDescriptor& desc,
                                                               const convjit_device_t&,
                                                               std::string_view id,
                                                               BuildTrace& trace) {
  auto variant = resolve_variant(desc, "", id);
  if (!variant.is_ok()) return variant.status();
  return build_emulated(desc, variant.value(), trace);
}

Result<std::vector<KernelVariant>> EmulatorBackend::build_variants(const OpDescriptor& desc,
                                                                   const convjit_device_t& device,
                                                                   BuildTrace& trace) {
  return build_each_variant(jit_variants(desc, variant_context("")), [&](std::string_view id) {
    return build_variant(desc, device, id, trace);
  });
}

}  // namespace convjit
