// The kernel templates (kernel_templates/**/*.cuh), embedded at build time
// under their paths below kernel_templates/, and a SHA-256 over all of them
// (names included): a template change changes every cache key.
#pragma once

#include <span>
#include <string_view>

namespace convjit {

struct EmbeddedTemplate {
  const char* name;  // e.g. "conv/conv_fwd.cuh"
  const char* text;
};

[[nodiscard]] std::span<const EmbeddedTemplate> embedded_templates();
[[nodiscard]] std::string_view embedded_templates_hash();

}  // namespace convjit
