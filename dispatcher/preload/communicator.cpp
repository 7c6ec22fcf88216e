#include "dispatcher/preload/communicator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace convjit {

Result<Communicator> Communicator::wrap(const convjit_communicator_t& comm) {
  if (comm.size < 1)
    return Status::invalid(fmt::format("communicator size {} is not positive", comm.size));
  if (comm.rank < 0 || comm.rank >= comm.size)
    return Status::invalid(
        fmt::format("communicator rank {} is outside 0..{}", comm.rank, comm.size - 1));
  if (comm.node < 0 || comm.node >= comm.size)
    return Status::invalid(
        fmt::format("communicator node {} is not a rank (0..{}); use the lowest rank of the node",
                    comm.node, comm.size - 1));
  if (comm.allgather == nullptr || comm.broadcast == nullptr || comm.barrier == nullptr)
    return Status::invalid(
        "communicator callbacks allgather, broadcast and barrier must all be set");
  return Communicator(comm);
}

Status Communicator::check(int code, std::string_view collective) const {
  if (code == 0) return Status::ok();
  return {CONVJIT_STATUS_EXECUTION_FAILED,
          fmt::format("rank {}: the communicator's {} failed (code {})", rank(), collective, code)};
}

Result<std::vector<std::string>> Communicator::allgather(const std::string& mine) const {
  const auto n = static_cast<std::size_t>(size());
  std::uint64_t length = mine.size();
  std::vector<std::uint64_t> lengths(n);
  if (Status s = check(comm_.allgather(comm_.context, &length, lengths.data(), sizeof length),
                       "allgather");
      !s.is_ok())
    return s;
  const std::size_t widest = *std::max_element(lengths.begin(), lengths.end());
  if (widest == 0) return std::vector<std::string>(n);
  std::string send = mine;
  send.resize(widest);
  std::string receive(widest * n, '\0');
  if (Status s =
          check(comm_.allgather(comm_.context, send.data(), receive.data(), widest), "allgather");
      !s.is_ok())
    return s;
  std::vector<std::string> out(n);
  for (std::size_t r = 0; r < n; ++r) out[r] = receive.substr(r * widest, lengths[r]);
  return out;
}

Status Communicator::broadcast(std::string& bytes, int root) const {
  std::uint64_t length = bytes.size();
  if (Status s = check(comm_.broadcast(comm_.context, &length, sizeof length, root), "broadcast");
      !s.is_ok())
    return s;
  bytes.resize(length);
  if (length == 0) return Status::ok();
  return check(comm_.broadcast(comm_.context, bytes.data(), length, root), "broadcast");
}

Status Communicator::barrier() const { return check(comm_.barrier(comm_.context), "barrier"); }

Status Communicator::agree(const Status& mine, std::string_view step) const {
  auto all = allgather(mine.is_ok() ? std::string() : mine.message());
  if (!all.is_ok()) return all.status();
  std::string failures;
  for (std::size_t r = 0; r < all.value().size(); ++r)
    if (!all.value()[r].empty())
      failures += fmt::format("{}rank {} failed {}: {}", failures.empty() ? "" : "; ", r, step,
                              all.value()[r]);
  if (failures.empty()) return Status::ok();
  return {CONVJIT_STATUS_EXECUTION_FAILED, failures};
}

namespace {

int copy_allgather(void*, const void* send, void* receive, std::size_t bytes) {
  if (bytes != 0) std::memcpy(receive, send, bytes);
  return 0;
}
int nothing_to_broadcast(void*, void*, std::size_t, int) { return 0; }
int nothing_to_wait_for(void*) { return 0; }

}  // namespace

convjit_communicator_t single_process_communicator() {
  return {nullptr, 0, 1, 0, copy_allgather, nothing_to_broadcast, nothing_to_wait_for};
}

}  // namespace convjit
