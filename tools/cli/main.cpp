// convjit command-line tool.  Exit codes: 0 ok, 1 runtime failure, 2 usage.
#include <CLI/CLI.hpp>

#include "cli_status.hpp"
#include "convjit/convjit.h"
#include "describe_command.hpp"
#include "query_command.hpp"
#include "run_command.hpp"
#include "version.hpp"

int main(int argc, char** argv) {
  using namespace convjit::cli;
  CLI::App app{"convjit: shape-specialised convolution and pooling kernels"};
  app.set_version_flag("--version", std::string("convjit ") + convjit::kVersionString +
                                        " (built with CUDA toolkit " +
                                        convjit::kCudaToolkitVersion + ", cuDNN headers " +
                                        convjit::kCudnnHeaderVersion + ")");
  app.require_subcommand(1);
  DescribeCommand describe(app);
  QueryCommand query(app);
  RunCommand run(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help, version or the error
    return code == 0 ? kExitOk : kExitUsage;
  }
  if (describe.selected())
    return run_reporting_errors("describe", [&] { return describe.run(); });
  if (query.selected()) return run_reporting_errors("query", [&] { return query.run(); });
  return run_reporting_errors("run", [&] { return run.run(); });
}
