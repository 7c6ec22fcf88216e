// The C++ side of convjit_communicator_t: the caller's collectives (MPI's,
// through libconvjit_mpi, or anyone's) with what the collective preload
// needs on top: byte strings of any length, and agreement on failure, so
// that a rank that fails tells the others instead of leaving them waiting
// in the next collective.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "convjit/convjit.h"
#include "dispatcher/result.hpp"

namespace convjit {

class Communicator {
 public:
  // INVALID_ARGUMENT names the field when `comm` is unusable.
  [[nodiscard]] static Result<Communicator> wrap(const convjit_communicator_t& comm);

  [[nodiscard]] int rank() const { return comm_.rank; }
  [[nodiscard]] int size() const { return comm_.size; }
  [[nodiscard]] int node() const { return comm_.node; }

  // Every rank's string, in rank order.
  [[nodiscard]] Result<std::vector<std::string>> allgather(const std::string& mine) const;
  // `bytes` of `root` on every rank.
  [[nodiscard]] Status broadcast(std::string& bytes, int root) const;
  [[nodiscard]] Status barrier() const;

  // Collective: OK when every rank's `mine` is; otherwise, on every rank, an
  // EXECUTION_FAILED that names each failed rank, `step` and its reason.
  [[nodiscard]] Status agree(const Status& mine, std::string_view step) const;

 private:
  explicit Communicator(const convjit_communicator_t& comm) : comm_(comm) {}
  [[nodiscard]] Status check(int code, std::string_view collective) const;

  convjit_communicator_t comm_;
};

// A job of one: rank 0 of 1, every collective a copy.
[[nodiscard]] convjit_communicator_t single_process_communicator();

}  // namespace convjit
