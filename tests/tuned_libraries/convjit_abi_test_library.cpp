// A host library in convjit's kernel ABI for the tuned-library tests.  It
// writes a recognisable record into its output:
//   out[0] marker   out[1] alpha   out[2] beta   out[3] batch
//   out[4] 1 if a writable workspace of the declared size came
//   out[5..7] the first element of x, w and dy (-1 where NULL)
//   out[8] 1 if args->norm came (a version 2 caller), then from it
//   out[9] momentum   out[10] the first scale element (-1 where NULL)
// and it writes the marker into the first saved mean element, where one came.
// Build options: KERNEL_DESCRIPTOR (the name it claims), KERNEL_ABI_VERSION,
// KERNEL_DEVICE, KERNEL_WORKSPACE_BYTES, KERNEL_MARKER, KERNEL_FAIL, KERNEL_NOOP.
#include <cstring>

#include "convjit/kernel_abi.h"

#ifndef KERNEL_ABI_VERSION
#define KERNEL_ABI_VERSION CONVJIT_KERNEL_ABI_VERSION
#endif
#ifndef KERNEL_DEVICE
#define KERNEL_DEVICE 0
#endif
#ifndef KERNEL_WORKSPACE_BYTES
#define KERNEL_WORKSPACE_BYTES 0
#endif
#ifndef KERNEL_MARKER
#define KERNEL_MARKER 10
#endif

namespace {
float first(const void* p) { return p ? *static_cast<const float*>(p) : -1.0f; }
}  // namespace

extern "C" {

uint32_t convjit_kernel_abi_version(void) { return KERNEL_ABI_VERSION; }
const char* convjit_kernel_descriptor(void) { return KERNEL_DESCRIPTOR; }
int convjit_kernel_device(void) { return KERNEL_DEVICE; }
size_t convjit_kernel_workspace_size(int64_t) { return KERNEL_WORKSPACE_BYTES; }

int convjit_kernel_run(const convjit_kernel_args_t* args) {
#ifdef KERNEL_FAIL
  return 7;
#endif
#ifdef KERNEL_NOOP
  return args == nullptr;  // for measuring dispatch overhead alone
#endif
  auto* out = static_cast<float*>(args->out);
  out[0] = KERNEL_MARKER;
  out[1] = static_cast<float>(args->alpha);
  out[2] = static_cast<float>(args->beta);
  out[3] = static_cast<float>(args->batch);
  out[4] = 0;
  if (KERNEL_WORKSPACE_BYTES > 0 && args->workspace &&
      args->workspace_bytes >= KERNEL_WORKSPACE_BYTES) {
    std::memset(args->workspace, 0x5a, KERNEL_WORKSPACE_BYTES);
    out[4] = 1;
  }
  out[5] = first(args->x);
  out[6] = first(args->w);
  out[7] = first(args->dy);
#if KERNEL_ABI_VERSION >= 2
  const convjit_kernel_norm_args_t* norm = args->norm;
  out[8] = norm != nullptr ? 1.0f : 0.0f;
  if (norm != nullptr) {
    out[9] = static_cast<float>(norm->momentum);
    out[10] = first(norm->scale);
    if (norm->saved_mean != nullptr) *static_cast<float*>(norm->saved_mean) = KERNEL_MARKER;
  }
#endif
  return 0;
}

}  // extern "C"
