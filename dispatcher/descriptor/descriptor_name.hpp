// Descriptor names: LBANN/DiHydrogen's distconv JIT grammar, extended for
// what LBANN cannot express.  The README's "Descriptor grammar" section is
// the specification; in short:
//
//   conv<N>d_<x shape:5>_<x strides:5>_<w shape:5>_<y shape:5>_<y strides:5>
//          _<pads:3>_<strides:3>_<dilations:3>_<groups>_<fwd|bwddata|bwdfilt>[ext]
//   <maxpool|avgpool|avgpadpool><N>d_<x shape:5>_<x strides:5>_<window:3>
//          _<y shape:5>_<y strides:5>_<pads:3>_<strides:3>_<dilations:3>_<fwd|bwd>[ext]
//   biasgrad<N>d_<dy shape:5>_<dy strides:5>[ext]
//   batchnorm<N>d_<x shape:5>_<x strides:5>_<y|dy shape:5>_<y|dy strides:5>_<fwd|bwd>
//          [_inference][_noscale][_noshift][_onnx][_eps_<epsilon>][_grads_<dx|dscale|dshift>...]
//          [_ep_<relu|silu>][_<f16|bf16|f64>]
//   resize<N>d_<x|dx shape:5>_<x|dx strides:5>_<y|dy shape:5>_<y|dy strides:5>_<mode>
//          _<coordinates>_<fwd|bwd>[_sc_<scales:3>][_<f16|bf16|f64>]
//   ext := [_pe_<pad end:3>] [_ws_<w strides:5>] [_ep_<activation>[_bias][_res]]
//          [_<f16|bf16|f64>]
// where ep (conv fwd only) names a fused epilogue, activation one of
// identity, relu, silu, sigmoid.  A batchnorm's grads list appears only when
// a bwd computes fewer than all three gradients; onnx only in training; eps
// (the shortest decimal) only when epsilon is not 1e-05.  A
// resize's mode is nearest, nearest-ceil, nearest-round-prefer-floor,
// nearest-round-prefer-ceil or linear, its coordinates asymmetric,
// half-pixel, pytorch-half-pixel, align-corners or tf-half-pixel-for-nn, and
// sc lists the scales the caller gave (shortest decimals, 0 where derived
// from the shapes), omitted when none was given.
//
// A name LBANN can express (f32, symmetric padding, contiguous weights, no
// epilogue) carries no extension, so it is byte for byte LBANN's.  Every op has
// exactly one name: non-canonical spellings (an explicit f32, a pad end
// equal to the pads, leading zeros) are rejected by the parser.
#pragma once

#include <string>
#include <string_view>

#include "dispatcher/descriptor/op_descriptor.hpp"
#include "dispatcher/result.hpp"

namespace convjit {

// The name of `desc`; batch entries are "B" when desc.symbolic_batch is set.
[[nodiscard]] std::string descriptor_name(const OpDescriptor& desc);

// The same op with a symbolic batch (for lib<symbolic>.so lookups).
[[nodiscard]] OpDescriptor with_symbolic_batch(const OpDescriptor& desc);

// A symbolic-batch op at batch `batch` (strides stay as named: the batch
// stride is per sample).  The result is not validated.
[[nodiscard]] OpDescriptor with_batch(const OpDescriptor& symbolic, std::int64_t batch);

// Parses a name (optionally wrapped as lib<name>.so) and validates the op.
// Errors name the offending token, its 1-based position and what was expected.
[[nodiscard]] Result<OpDescriptor> parse_descriptor_name(std::string_view name);

}  // namespace convjit
