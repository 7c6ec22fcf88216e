// Reading and stamping the pin (dace_pin.h) in a DaCe shim's file image.
#pragma once

#include <string>
#include <string_view>

#include "convjit/convjit.h"
#include "dispatcher/result.hpp"
#include "lbann/dace_pin.h"

namespace convjit {

// The pin a library carries: UNSUPPORTED when the file is not a DaCe shim
// (no CONVJIT_DACE_PIN_SECTION), NOT_AVAILABLE when it cannot be read.
// An unstamped shim reads with version 0.
[[nodiscard]] Result<convjit_dace_pin_t> read_dace_pin(const std::string& path);

// `shim` (a whole ELF image) with `pin` written over its pin section.
[[nodiscard]] Result<std::string> stamp_dace_pin(std::string shim, const convjit_dace_pin_t& pin);

// `shim` with its RUNPATH placeholder (`placeholder`, in .dynstr) replaced
// by `directory`, NUL-padded: where its copies find libconvjit.so.0.
[[nodiscard]] Result<std::string> set_shim_runpath(std::string shim, std::string_view placeholder,
                                                   const std::string& directory);

// The pin for `descriptor` served by backend[variant] on `device`, chosen at
// `batch` for `reason`; INVALID_ARGUMENT when a field does not fit.
[[nodiscard]] Result<convjit_dace_pin_t> make_dace_pin(const std::string& descriptor,
                                                       convjit_device_kind_t device,
                                                       std::int64_t batch,
                                                       const std::string& backend,
                                                       const std::string& variant,
                                                       const std::string& reason);

}  // namespace convjit
