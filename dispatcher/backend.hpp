// The backend interface every step of the dispatch chain implements, after
// cudnn-frontend's engines: check_support -> build -> execute.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "convjit/convjit.h"
#include "convjit/status.hpp"
#include "exec_args.hpp"
#include "op_descriptor.hpp"
#include "result.hpp"

namespace convjit {

// An operation made ready for one descriptor and device.  execute() is the
// hot path: it must not allocate or lock.
class Kernel {
 public:
  virtual ~Kernel() = default;
  [[nodiscard]] virtual Status execute(const ExecArgs& args) const = 0;
};

// What a backend looked at while building: the verbose log and
// `convjit query` show it.
struct BuildTrace {
  struct Probe {
    std::string path;
    std::string outcome;
  };
  std::vector<Probe> probes;
};

class Backend {
 public:
  virtual ~Backend() = default;

  // A short, stable, static name for logs and the C API ("reference").
  [[nodiscard]] virtual std::string_view name() const = 0;

  // OK if this backend can serve the op on the device, else a status whose
  // message says why not (the dispatcher logs it and moves on).
  [[nodiscard]] virtual Status check_support(const OpDescriptor& desc,
                                             const convjit_device_t& device) const = 0;

  // Prepares a kernel; called once per descriptor and device.
  [[nodiscard]] virtual Result<std::unique_ptr<Kernel>> build(const OpDescriptor& desc,
                                                              const convjit_device_t& device,
                                                              BuildTrace& trace) = 0;
};

}  // namespace convjit
