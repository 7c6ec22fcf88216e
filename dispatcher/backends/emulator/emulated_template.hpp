// A kernel template compiled for the host emulator, for one dtype and (for
// the implicit-GEMM templates) one tile configuration: its entry points
// with the type-erased template signature.  CMake generates one source per
// (template, dtype) (cmake/emulated_template.cpp.in, or
// emulated_gemm_template.cpp.in with every tile of gemm/tile_configs.cuh)
// and a list function that returns them all.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>
#include <type_traits>

#include "dispatcher/backends/emulator/emulated_tensor_maps.hpp"
#include "dispatcher/backends/jit/kernel_operands.hpp"
#include "dispatcher/backends/jit/kernel_variants.hpp"
#include "dispatcher/descriptor/dtype.hpp"

namespace convjit::emulator {

// convjit_kernel(in0, in1, out, alpha, beta, workspace[, bias, residual]
// | [, norm] | [, tensor maps]), pointers erased; the epilogue operands
// reach only the entries that take them (a conv fwd's), the norm operands
// a batchnorm's, the tensor maps those that copy with TMA.
using ErasedKernel = void (*)(const void* in0, const void* in1, void* out, float alpha, float beta,
                              void* workspace, const void* bias, const void* residual,
                              const NormOperands* norm, const EmulatedTensorMaps* maps);

struct EmulatedEntry {
  const char* name = nullptr;  // "convjit_kernel", "convjit_kernel_finish", ...
  ErasedKernel run = nullptr;
};

struct EmulatedTemplate {
  const char* template_name;  // "conv/conv_fwd.cuh"
  DataType dtype;
  // convjit_kernel, then convjit_kernel_finish and convjit_kernel_prepare
  // where the template has them (empty entries where not).
  EmulatedEntry entries[3];
  // The JIT variant it is: "direct", or a GEMM template's tile ("tc128x64").
  const char* variant = kDirectVariant.data();

  [[nodiscard]] ErasedKernel entry(std::string_view name) const {
    for (const EmulatedEntry& e : entries)
      if (e.run != nullptr && name == e.name) return e.run;
    return nullptr;
  }
};

// The library's templates (kernel_templates/), in every JIT dtype.
[[nodiscard]] std::span<const EmulatedTemplate* const> emulated_templates();

// `variant` is kernel_variants.hpp's id: "direct" for the templates
// without tile configurations.
[[nodiscard]] const EmulatedTemplate* find_emulated_template(
    std::span<const EmulatedTemplate* const> templates, std::string_view template_name,
    DataType dtype, std::string_view variant = kDirectVariant);

// ---- used by the generated files --------------------------------------------

template <class Kernel>
struct KernelSignature;
template <class Storage, class Scratch>
struct KernelSignature<void (*)(const Storage*, const Storage*, Storage*, float, float, Scratch*)> {
  using storage = Storage;
  using scratch = Scratch;
  static constexpr bool kEpilogueOperands = false;
  static constexpr bool kNormOperands = false;
};
template <class Storage, class Scratch>
struct KernelSignature<void (*)(const Storage*, const Storage*, Storage*, float, float, Scratch*,
                                const Storage*, const Storage*)> {
  using storage = Storage;
  using scratch = Scratch;
  static constexpr bool kEpilogueOperands = true;
  static constexpr bool kNormOperands = false;
};
template <class Storage, class Scratch, class Norm>
struct KernelSignature<void (*)(const Storage*, const Storage*, Storage*, float, float, Scratch*,
                                Norm)> {
  using storage = Storage;
  using scratch = Scratch;
  using norm = Norm;
  static constexpr bool kEpilogueOperands = false;
  static constexpr bool kNormOperands = true;
};
template <class Storage, class Scratch>
struct KernelSignature<void (*)(const Storage*, const Storage*, Storage*, float, float, Scratch*,
                                const Storage*, const Storage*, EmulatedTensorMaps)> {
  using storage = Storage;
  using scratch = Scratch;
  static constexpr bool kEpilogueOperands = true;
  static constexpr bool kNormOperands = false;
  static constexpr bool kTensorMaps = true;
};

// The template's NormParams (norm/batchnorm_common.cuh) from the host's
// erased operands, member for member.
template <class Norm>
Norm bind_norm(const NormOperands& n) {
  using In = decltype(Norm::scale);
  using Out = decltype(Norm::mean);
  return Norm{static_cast<In>(n.scale),        static_cast<In>(n.shift),
              static_cast<Out>(n.running_mean), static_cast<Out>(n.running_var),
              static_cast<Out>(n.mean),         static_cast<Out>(n.invstd),
              static_cast<Out>(n.scale_grad),   static_cast<Out>(n.shift_grad),
              n.momentum};
}

template <class Signature>
concept TakesTensorMaps = Signature::kTensorMaps;

template <auto kernel>
void erased(const void* in0, const void* in1, void* out, float alpha, float beta, void* workspace,
            const void* bias, const void* residual, const NormOperands* norm,
            const EmulatedTensorMaps* maps) {
  using Signature = KernelSignature<decltype(kernel)>;
  using Storage = typename Signature::storage;
  auto* scratch = static_cast<typename Signature::scratch*>(workspace);
  if constexpr (TakesTensorMaps<Signature>) {
    kernel(static_cast<const Storage*>(in0), static_cast<const Storage*>(in1),
           static_cast<Storage*>(out), alpha, beta, scratch, static_cast<const Storage*>(bias),
           static_cast<const Storage*>(residual), *maps);
  } else if constexpr (Signature::kEpilogueOperands) {
    kernel(static_cast<const Storage*>(in0), static_cast<const Storage*>(in1),
           static_cast<Storage*>(out), alpha, beta, scratch, static_cast<const Storage*>(bias),
           static_cast<const Storage*>(residual));
  } else if constexpr (Signature::kNormOperands) {
    kernel(static_cast<const Storage*>(in0), static_cast<const Storage*>(in1),
           static_cast<Storage*>(out), alpha, beta, scratch,
           bind_norm<typename Signature::norm>(*norm));
  } else {
    kernel(static_cast<const Storage*>(in0), static_cast<const Storage*>(in1),
           static_cast<Storage*>(out), alpha, beta, scratch);
  }
}

// `finish` and `prepare` are the template's convjit_kernel_finish and
// convjit_kernel_prepare, or nullptr where it has none.
template <auto kernel, auto finish, auto prepare = nullptr>
constexpr EmulatedTemplate bind_template(const char* template_name, DataType dtype,
                                         const char* variant = kDirectVariant.data()) {
  EmulatedTemplate t{template_name, dtype, {{"convjit_kernel", &erased<kernel>}, {}, {}}, variant};
  if constexpr (!std::is_null_pointer_v<decltype(finish)>)
    t.entries[1] = {"convjit_kernel_finish", &erased<finish>};
  if constexpr (!std::is_null_pointer_v<decltype(prepare)>)
    t.entries[2] = {"convjit_kernel_prepare", &erased<prepare>};
  return t;
}

}  // namespace convjit::emulator
