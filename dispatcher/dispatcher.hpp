// The dispatcher: walks the backend chain once per (descriptor, device),
// remembers the kernel it chose and why, and serves later calls from a
// thread-local cache without locking or allocating.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "backend.hpp"

namespace convjit {

// The outcome of resolving one descriptor on one device.
struct Resolution {
  std::unique_ptr<Kernel> kernel;
  std::string_view backend;  // static name of the backend that serves it
  std::string reason;        // why the chain stopped there
};

struct DispatchKey {
  OpDescriptor desc;
  std::int32_t device_kind = 0;
  std::int32_t device_ordinal = 0;
  friend bool operator==(const DispatchKey&, const DispatchKey&) = default;
};
static_assert(std::has_unique_object_representations_v<DispatchKey>);

struct DispatchKeyHash {
  std::size_t operator()(const DispatchKey& key) const;
};

class Dispatcher {
 public:
  // The process-wide dispatcher with the default chain.
  static Dispatcher& instance();

  explicit Dispatcher(std::vector<std::unique_ptr<Backend>> chain);

  // Runs a validated, concrete descriptor.  *backend receives the name of
  // the backend that served it.
  [[nodiscard]] Status execute(const OpDescriptor& desc, const convjit_device_t& device,
                               const ExecArgs& args, std::string_view* backend = nullptr);

  // Resolves without executing (first call of a descriptor: walks the chain).
  [[nodiscard]] Result<const Resolution*> resolve(const OpDescriptor& desc,
                                                  const convjit_device_t& device);

 private:
  [[nodiscard]] Result<Resolution> walk_chain(const OpDescriptor& desc,
                                              const convjit_device_t& device);

  const std::uint64_t id_;
  std::vector<std::unique_ptr<Backend>> chain_;
  std::mutex table_mutex_;  // guards table_; never held while a backend builds
  // Entries are never erased, so Resolution pointers stay valid for the
  // dispatcher's lifetime (thread-local caches rely on it).
  std::unordered_map<DispatchKey, std::unique_ptr<Resolution>, DispatchKeyHash> table_;
};

}  // namespace convjit
