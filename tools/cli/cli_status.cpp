#include "cli_status.hpp"

#include <cstdio>
#include <new>

namespace convjit::cli {

int run_reporting_errors(const std::string& command, const std::function<int()>& body) {
  try {
    return body();
  } catch (const UsageError& e) {
    std::fprintf(stderr, "convjit %s: error: %s\n", command.c_str(), e.what());
    return kExitUsage;
  } catch (const RuntimeError& e) {
    std::fprintf(stderr, "convjit %s: error: %s\n", command.c_str(), e.what());
    return kExitRuntime;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "convjit %s: error: out of memory\n", command.c_str());
    return kExitRuntime;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "convjit %s: internal error: %s\n", command.c_str(), e.what());
    return kExitRuntime;
  }
}

}  // namespace convjit::cli
