#include "dispatcher.hpp"

#include <fmt/format.h>
#include <xxhash.h>

#include <array>
#include <atomic>

#include "descriptor_name.hpp"
#include "reference/reference_backend.hpp"

namespace convjit {

namespace {

DispatchKey make_key(const OpDescriptor& desc, const convjit_device_t& device) {
  DispatchKey key;
  key.desc = desc;
  key.device_kind = static_cast<std::int32_t>(device.kind);
  key.device_ordinal = device.kind == CONVJIT_DEVICE_HOST ? 0 : device.ordinal;
  return key;
}

// A small direct-mapped cache per thread in front of the shared table: the
// hot path hashes the key, compares one slot and calls the kernel.
struct ThreadCacheSlot {
  std::uint64_t owner = 0;  // Dispatcher::id_, never reused, unlike addresses
  DispatchKey key;
  const Resolution* resolution = nullptr;
};
constexpr std::size_t kThreadCacheSlots = 64;
thread_local std::array<ThreadCacheSlot, kThreadCacheSlots> t_cache;
std::atomic<std::uint64_t> next_dispatcher_id{0};

Status device_capability(const OpDescriptor& desc, const convjit_device_t& device) {
  if (device.kind != CONVJIT_DEVICE_HOST && device.kind != CONVJIT_DEVICE_CUDA)
    return Status::invalid(fmt::format("device kind {} is neither CONVJIT_DEVICE_HOST nor "
                                       "CONVJIT_DEVICE_CUDA", static_cast<int>(device.kind)));
  if (device.kind == CONVJIT_DEVICE_CUDA && device.ordinal < 0)
    return Status::invalid(fmt::format("CUDA device ordinal {} must be non-negative",
                                       device.ordinal));
  if (device.kind == CONVJIT_DEVICE_CUDA && desc.dtype == DataType::f64)
    return Status::unsupported("f64 is computed on the host device only; use "
                               "CONVJIT_DEVICE_HOST or a f32/f16/bf16 tensor");
  return Status::ok();
}

std::string device_label(const convjit_device_t& device) {
  return device.kind == CONVJIT_DEVICE_HOST ? std::string("host")
                                            : fmt::format("cuda:{}", device.ordinal);
}

}  // namespace

std::size_t DispatchKeyHash::operator()(const DispatchKey& key) const {
  return XXH3_64bits(&key, sizeof key);
}

Dispatcher& Dispatcher::instance() {
  static Dispatcher dispatcher([] {
    std::vector<std::unique_ptr<Backend>> chain;
    chain.push_back(std::make_unique<ReferenceBackend>());
    return chain;
  }());
  return dispatcher;
}

Dispatcher::Dispatcher(std::vector<std::unique_ptr<Backend>> chain)
    : id_(next_dispatcher_id.fetch_add(1) + 1), chain_(std::move(chain)) {}

Result<Resolution> Dispatcher::walk_chain(const OpDescriptor& desc,
                                          const convjit_device_t& device) {
  std::string rejections;
  bool all_unavailable = true;
  for (const auto& backend : chain_) {
    Status support = backend->check_support(desc, device);
    if (support.is_ok()) {
      auto kernel = backend->build(desc, device);
      if (kernel.is_ok())
        return Resolution{std::move(kernel).value(), backend->name(),
                          rejections.empty() ? "first backend in the chain that supports it"
                                             : "earlier backends declined:" + rejections};
      support = kernel.status();
    }
    all_unavailable = all_unavailable && support.code() == CONVJIT_STATUS_NOT_AVAILABLE;
    rejections += fmt::format(" {}: {};", backend->name(), support.message());
  }
  const std::string message =
      fmt::format("no backend can run {} on {}:{}", descriptor_name(desc), device_label(device),
                  rejections);
  return Status(all_unavailable ? CONVJIT_STATUS_NOT_AVAILABLE : CONVJIT_STATUS_UNSUPPORTED,
                message);
}

Result<const Resolution*> Dispatcher::resolve(const OpDescriptor& desc,
                                              const convjit_device_t& device) {
  if (Status capable = device_capability(desc, device); !capable.is_ok()) return capable;
  const DispatchKey key = make_key(desc, device);
  {
    std::lock_guard lock(table_mutex_);
    if (auto it = table_.find(key); it != table_.end()) return it->second.get();
  }
  auto resolved = walk_chain(desc, device);
  if (!resolved.is_ok()) return resolved.status();
  std::lock_guard lock(table_mutex_);
  // Another thread may have resolved the same key meanwhile; keep the first.
  auto [it, inserted] =
      table_.try_emplace(key, std::make_unique<Resolution>(std::move(resolved).value()));
  return it->second.get();
}

Status Dispatcher::execute(const OpDescriptor& desc, const convjit_device_t& device,
                           const ExecArgs& args, std::string_view* backend) {
  const DispatchKey key = make_key(desc, device);
  ThreadCacheSlot& slot = t_cache[DispatchKeyHash{}(key) % kThreadCacheSlots];
  if (slot.owner != id_ || slot.resolution == nullptr || !(slot.key == key)) {
    auto resolved = resolve(desc, device);
    if (!resolved.is_ok()) return resolved.status();
    slot = {id_, key, resolved.value()};
  }
  if (backend) *backend = slot.resolution->backend;
  return slot.resolution->kernel->execute(args);
}

}  // namespace convjit
