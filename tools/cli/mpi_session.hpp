// `convjit preload --mpi`: the CLI is not linked with MPI (it must run where
// MPI is absent), so it loads libconvjit_mpi with dlopen and takes its
// communicator over MPI_COMM_WORLD from there.
#pragma once

#include <string>

#include "convjit/convjit.h"

namespace convjit::cli {

class MpiSession {
 public:
  // Loads the library, starts MPI and makes the communicator; throws
  // RuntimeError naming what is missing and the fix.
  explicit MpiSession(int ranks_per_node);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  [[nodiscard]] const convjit_communicator_t& communicator() const { return comm_; }

 private:
  void* library_ = nullptr;
  int (*finalize_)(convjit_communicator_t*) = nullptr;
  convjit_communicator_t comm_{};
};

}  // namespace convjit::cli
