// What the C API's operation entry points share: call keys, running a call
// through the dispatcher's call cache, and argument checks in the caller's
// terms.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <utility>

#include "dispatcher/api_call_key.hpp"
#include "dispatcher/c_api/api_guard.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "dispatcher/dispatcher.hpp"

namespace convjit {

inline Status require_pointer(const void* pointer, const char* name) {
  if (pointer == nullptr) return Status::invalid(fmt::format("{} is NULL", name));
  return Status::ok();
}

// Identifies each API entry point in call keys.
enum class ApiOp : std::int64_t {
  conv_fwd = 1,
  conv_bwddata,
  conv_bwdfilt,
  bias_grad,
  pool_fwd,
  pool_bwd,
  conv_fwd_fused,
  batchnorm_fwd_training,
  batchnorm_fwd_inference,
  batchnorm_bwd,
  resize_fwd,
  resize_bwd
};

// Runs an API call through the dispatcher's call cache.  `describe` builds
// the validated descriptor; it runs only when the call was not seen before.
// Every descriptor and params pointer must be non-NULL (checked by callers,
// since the key reads them).
template <class Describe>
Status run_api_call(ApiCallKey& key, const convjit_exec_t* exec, const ExecArgs& args,
                    Describe&& describe) {
  std::string_view backend;
  Status status = Dispatcher::instance().execute_call(key, device_of(exec), args,
                                                      std::forward<Describe>(describe), &backend);
  if (status.is_ok()) set_last_backend(backend);
  return status;
}

// The name of the first NULL pointer, or nullptr when all are set.  Cheap on
// success: it runs on every call.
inline const char* first_null(
    std::initializer_list<std::pair<const void*, const char*>> pointers) {
  for (const auto& [pointer, name] : pointers)
    if (pointer == nullptr) return name;
  return nullptr;
}

inline Status null_argument(const char* name) {
  return Status::invalid(fmt::format("{} is NULL", name));
}

// A NULL operand.  An empty tensor may have no address, so where the
// descriptor does not validate (a zero-size batch), that is the error.
template <class Describe>
Status null_operand(const char* name, Describe&& describe) {
  auto desc = describe();
  return desc.is_ok() ? null_argument(name) : desc.status();
}

inline Status write_name(const Result<OpDescriptor>& desc, int symbolic, char* buf, size_t size,
                         size_t* required) {
  if (!desc.is_ok()) return desc.status();
  return write_text(descriptor_name(symbolic ? with_symbolic_batch(desc.value()) : desc.value()),
                    "name buffer", buf, size, required);
}

inline Status write_dims(const Result<OpDescriptor>& desc, int64_t* y_dims) {
  if (!desc.is_ok()) return desc.status();
  if (y_dims == nullptr) return Status::invalid("y_dims is NULL");
  for (int i = 0; i < desc.value().rank(); ++i)
    y_dims[i] = desc.value().y_dims[static_cast<size_t>(i)];
  return Status::ok();
}

}  // namespace convjit
