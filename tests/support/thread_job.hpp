// Test helper: a job of N ranks as threads of one process, whose
// convjit_communicator_t callbacks move bytes through shared memory, so
// that the collective preload's protocol runs in a unit test without MPI.
#pragma once

#include <barrier>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "convjit/convjit.h"

namespace convjit::test {

class ThreadJob {
 public:
  explicit ThreadJob(int ranks)
      : barrier_(ranks), slots_(static_cast<std::size_t>(ranks)), contexts_(ranks) {
    for (int r = 0; r < ranks; ++r) contexts_[static_cast<std::size_t>(r)] = {this, r};
  }

  // `nodes[r]` is rank r's node (the lowest rank of its node).
  [[nodiscard]] convjit_communicator_t communicator(int rank, int node) {
    return {&contexts_[static_cast<std::size_t>(rank)],
            rank,
            static_cast<int>(contexts_.size()),
            node,
            allgather,
            broadcast,
            barrier};
  }

  // body(rank) on one thread per rank.
  void run(const std::function<void(int)>& body) {
    std::vector<std::thread> threads;
    for (int r = 0; r < static_cast<int>(contexts_.size()); ++r) threads.emplace_back(body, r);
    for (auto& t : threads) t.join();
  }

 private:
  struct Context {
    ThreadJob* job;
    int rank;
  };
  static Context& of(void* context) { return *static_cast<Context*>(context); }

  static int allgather(void* context, const void* send, void* receive, std::size_t bytes) {
    Context& c = of(context);
    c.job->slots_[static_cast<std::size_t>(c.rank)].assign(static_cast<const char*>(send), bytes);
    c.job->barrier_.arrive_and_wait();
    for (std::size_t r = 0; r < c.job->slots_.size(); ++r)
      std::memcpy(static_cast<char*>(receive) + r * bytes, c.job->slots_[r].data(), bytes);
    c.job->barrier_.arrive_and_wait();
    return 0;
  }

  static int broadcast(void* context, void* buffer, std::size_t bytes, int root) {
    Context& c = of(context);
    auto& slot = c.job->slots_[static_cast<std::size_t>(root)];
    if (c.rank == root) slot.assign(static_cast<const char*>(buffer), bytes);
    c.job->barrier_.arrive_and_wait();
    if (c.rank != root) std::memcpy(buffer, slot.data(), bytes);
    c.job->barrier_.arrive_and_wait();
    return 0;
  }

  static int barrier(void* context) {
    of(context).job->barrier_.arrive_and_wait();
    return 0;
  }

  std::barrier<> barrier_;
  std::vector<std::string> slots_;
  std::vector<Context> contexts_;
};

}  // namespace convjit::test
