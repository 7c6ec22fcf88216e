// A command run as a user would run it: through the shell, its stdout and
// stderr captured together, its exit status kept.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <sstream>
#include <string>

namespace convjit::test {

struct Outcome {
  int exit_code;
  std::string output;  // stdout and stderr
  [[nodiscard]] std::string first_line() const { return output.substr(0, output.find('\n')); }
  [[nodiscard]] std::string line_starting(const std::string& prefix) const {
    std::istringstream in(output);
    for (std::string line; std::getline(in, line);)
      if (line.rfind(prefix, 0) == 0) return line;
    return "";
  }
};

inline Outcome spawn(const std::string& command) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return {-1, "popen failed"};
  std::string output;
  std::array<char, 4096> buf;
  while (std::size_t n = std::fread(buf.data(), 1, buf.size(), pipe)) output.append(buf.data(), n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

}  // namespace convjit::test
