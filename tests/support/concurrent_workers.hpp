// Test helper: `processes` forked children, each running `threads` threads
// of `work(process, thread)`; returns the children's exit codes (0 = every
// thread's work returned true).
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <thread>
#include <vector>

namespace convjit::test {

inline std::vector<int> run_in_processes_and_threads(int processes, int threads,
                                                     const std::function<bool(int, int)>& work) {
  std::vector<pid_t> children;
  for (int p = 0; p < processes; ++p) {
    const pid_t child = ::fork();
    if (child == 0) {
      std::vector<std::thread> pool;
      std::vector<char> ok(static_cast<std::size_t>(threads), 0);
      for (int t = 0; t < threads; ++t)
        pool.emplace_back([&, t] { ok[static_cast<std::size_t>(t)] = work(p, t) ? 1 : 0; });
      for (auto& thread : pool) thread.join();
      for (char good : ok)
        if (!good) std::_Exit(3);
      std::_Exit(0);  // no atexit handlers or destructors of the parent's state
    }
    children.push_back(child);
  }
  std::vector<int> codes;
  for (pid_t child : children) {
    int status = 0;
    codes.push_back(child > 0 && ::waitpid(child, &status, 0) == child && WIFEXITED(status)
                        ? WEXITSTATUS(status)
                        : -1);
  }
  return codes;
}

}  // namespace convjit::test
