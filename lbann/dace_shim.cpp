// The library `convjit export --dace` copies once per descriptor: DaCe's
// ABI as DiHydrogen's dispatcher calls it (README, "Using convjit from
// LBANN"), served by a convjit plan pinned to the backend and variant that
// export chose.
//
// - What it runs: its pin (dace_pin.h), stamped into this copy by export.
//   The file name says which op DiHydrogen wants; a copy renamed to another
//   descriptor serves the name, through the dispatch chain, with a warning.
// - libconvjit.so is a DT_NEEDED dependency found through this library's
//   RUNPATH (the build or install directory).  DiHydrogen never checks what
//   __dace_init_conv returns, so the only failure it turns into cuDNN is a
//   failed dlopen: without libconvjit the dynamic loader refuses the copy,
//   and its dlerror() names the missing file.
// - DiHydrogen shares one handle between all streams and sets the stream
//   and workspace in separate calls before each program call, without a
//   lock: they are kept per thread, so concurrent callers do not mix them.
// - One definition serves the concrete and the symbolic signatures: B is an
//   integer argument and alpha and beta are floating-point ones, which the
//   x86-64, AArch64 and POWER ELFv2 calling conventions pass in separate
//   registers, so alpha and beta arrive in place either way and a concrete
//   caller's B is never read.
#include <dlfcn.h>

#include <array>
#include <atomic>
#include <mutex>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "convjit/convjit.h"
#include "lbann/dace_pin.h"

#if !defined(__x86_64__) && !defined(__aarch64__) && !defined(__powerpc64__)
#error "one __program_conv for both DaCe signatures needs separate integer and FP argument registers"
#endif

#define CONVJIT_DACE_EXPORT extern "C" __attribute__((visibility("default")))

// Stamped by convjit export; volatile, as its bytes change after compiling.
extern "C" __attribute__((used, section(CONVJIT_DACE_PIN_SECTION)))
const volatile convjit_dace_pin_t convjit_dace_pin = {
    {'c', 'o', 'n', 'v', 'j', 'i', 't', '-', 'd', 'a', 'c', 'e', '-', 'p', 'i', 'n'}, 0, 0, 0,
    {}, {}, {}, {}};

namespace {

// Calls may come from many threads at once (DiHydrogen does not serialise
// them): the plans are set once and only released by __dace_exit_conv.
struct Library {
  std::string name;  // the descriptor, from the file name
  convjit_device_t device{};
  bool symbolic = false;
  convjit_plan_t* pinned = nullptr;  // set by init
  std::atomic<bool> pin_failed{false};
  std::atomic<convjit_plan_t*> fallback{nullptr};  // the chain's, made when the pin cannot serve
  std::mutex fallback_mutex;
};

// The stream and workspace DiHydrogen set on this thread for a handle.
struct CallState {
  const Library* library = nullptr;
  const void* stream = nullptr;
  void* workspace = nullptr;
};
thread_local std::array<CallState, 8> t_calls{};
thread_local std::size_t t_next_call_slot = 0;

CallState& call_state(const Library* library) {
  for (CallState& state : t_calls)
    if (state.library == library) return state;
  CallState& slot = t_calls[t_next_call_slot++ % t_calls.size()];
  slot = {library, nullptr, nullptr};
  return slot;
}

void report(const std::string& library, const char* what, const char* detail) {
  std::fprintf(stderr, "convjit: lib%s.so: %s%s%s\n", library.c_str(), what, detail ? ": " : "",
               detail ? detail : "");
}

// The descriptor in this copy's file name (lib<descriptor>.so).
std::string own_descriptor() {
  Dl_info info{};
  if (dladdr(const_cast<const convjit_dace_pin_t*>(&convjit_dace_pin), &info) == 0 || !info.dli_fname)
    return {};
  std::string file = info.dli_fname;
  file = file.substr(file.rfind('/') + 1);
  if (file.rfind("lib", 0) != 0 || file.size() < 7 || file.substr(file.size() - 3) != ".so")
    return {};
  return file.substr(3, file.size() - 6);
}

convjit_dace_pin_t read_pin() {
  convjit_dace_pin_t pin;
  const volatile unsigned char* from = reinterpret_cast<const volatile unsigned char*>(&convjit_dace_pin);
  unsigned char* to = reinterpret_cast<unsigned char*>(&pin);
  for (std::size_t i = 0; i < sizeof pin; ++i) to[i] = from[i];
  pin.descriptor[sizeof pin.descriptor - 1] = '\0';
  pin.backend[sizeof pin.backend - 1] = '\0';
  pin.variant[sizeof pin.variant - 1] = '\0';
  return pin;
}

bool plan(Library& library, const char* backend, const char* variant, convjit_plan_t** out) {
  if (convjit_plan_create(library.name.c_str(), &library.device, backend, variant, out) ==
      CONVJIT_STATUS_SUCCESS)
    return true;
  report(library.name, backend ? "the pinned backend cannot serve it" : "convjit cannot serve it",
         convjit_last_error_message());
  return false;
}

convjit_plan_t* fallback_plan(Library& library) {
  if (convjit_plan_t* made = library.fallback.load(std::memory_order_acquire)) return made;
  std::lock_guard lock(library.fallback_mutex);
  convjit_plan_t* made = library.fallback.load(std::memory_order_relaxed);
  if (made == nullptr && plan(library, nullptr, nullptr, &made))
    library.fallback.store(made, std::memory_order_release);
  return made;
}

// The plan for a call at `batch`: the pinned one while it can build the
// batch's kernel, else the chain's, made once, with a warning.
convjit_plan_t* plan_for(Library& library, std::int64_t batch, std::size_t* workspace) {
  if (library.pinned && !library.pin_failed.load(std::memory_order_acquire)) {
    if (convjit_plan_workspace_size(library.pinned, batch, workspace) == CONVJIT_STATUS_SUCCESS)
      return library.pinned;
    if (!library.pin_failed.exchange(true))
      report(library.name, "the pinned kernel cannot serve this batch; the dispatch chain will",
             convjit_last_error_message());
  }
  convjit_plan_t* fallback = fallback_plan(library);
  if (fallback == nullptr) return nullptr;  // reported
  if (convjit_plan_workspace_size(fallback, batch, workspace) != CONVJIT_STATUS_SUCCESS) {
    report(library.name, "convjit cannot serve it", convjit_last_error_message());
    return nullptr;
  }
  return fallback;
}

std::int64_t call_batch(const Library& library, int batch) { return library.symbolic ? batch : 0; }

}  // namespace

CONVJIT_DACE_EXPORT void* __dace_init_conv() {
  auto* library = new Library;
  library->name = own_descriptor();
#ifdef CONVJIT_DACE_SHIM_CUDA
  library->device = {CONVJIT_DEVICE_CUDA, -1};
#else
  library->device = {CONVJIT_DEVICE_HOST, 0};
#endif
  library->symbolic = library->name.find("_B_") != std::string::npos;
  const convjit_dace_pin_t pin = read_pin();
  if (std::memcmp(pin.magic, CONVJIT_DACE_PIN_MAGIC, sizeof pin.magic) != 0 ||
      pin.version != CONVJIT_DACE_PIN_VERSION) {
    report(library->name, "not stamped by convjit export; the dispatch chain serves it", nullptr);
  } else if (library->name != pin.descriptor) {
    report(library->name, "renamed: its pin is for another descriptor; the dispatch chain serves it",
           pin.descriptor);
  } else {
    (void)plan(*library, pin.backend, pin.variant, &library->pinned);
  }
  return library;
}

CONVJIT_DACE_EXPORT int __dace_exit_conv(void* handle) {
  auto* library = static_cast<Library*>(handle);
  if (library == nullptr) return 0;
  for (CallState& state : t_calls)
    if (state.library == library) state = {};
  convjit_plan_destroy(library->pinned);
  convjit_plan_destroy(library->fallback.load());
  delete library;
  return 0;
}

#ifdef CONVJIT_DACE_SHIM_CUDA
CONVJIT_DACE_EXPORT bool __dace_gpu_set_all_streams(void* handle, const void* stream) {
  call_state(static_cast<const Library*>(handle)).stream = stream;
  return true;
}
#endif

CONVJIT_DACE_EXPORT std::size_t __dace_get_external_memory_size_GPU_Global(void* handle,
                                                                           int batch) {
  auto& library = *static_cast<Library*>(handle);
  std::size_t bytes = 0;
  (void)plan_for(library, call_batch(library, batch), &bytes);
  return bytes;
}

CONVJIT_DACE_EXPORT void __dace_set_external_memory_GPU_Global(void* handle, void* workspace,
                                                               int /*batch*/) {
  call_state(static_cast<const Library*>(handle)).workspace = workspace;
}

CONVJIT_DACE_EXPORT void __program_conv(void* handle, void* w_slot, void* x_slot, void* y_slot,
                                        int batch, float alpha, float beta) {
  auto& library = *static_cast<Library*>(handle);
  std::size_t needed = 0;
  convjit_plan_t* plan = plan_for(library, call_batch(library, batch), &needed);
  if (plan == nullptr) return;  // reported: nothing can serve it
  CallState& state = call_state(&library);
  convjit_exec_t exec{};
  exec.device = library.device;
  exec.stream = const_cast<void*>(state.stream);
  exec.workspace = state.workspace;
  exec.workspace_bytes = state.workspace ? needed : 0;
  if (convjit_plan_execute(plan, call_batch(library, batch), x_slot, w_slot, y_slot, alpha, beta,
                           &exec) != CONVJIT_STATUS_SUCCESS)
    report(library.name, "the convolution failed", convjit_last_error_message());
}
