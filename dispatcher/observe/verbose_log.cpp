#include "dispatcher/observe/verbose_log.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <mutex>

#include "dispatcher/backends/jit/nvrtc_compiler.hpp"
#include "dispatcher/cuda/cuda_driver.hpp"
#include "dispatcher/descriptor/descriptor_flags.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "version.hpp"

namespace convjit {

namespace {

void write_header(spdlog::logger& log, const Settings& settings) {
  const auto info = [&](std::string_view key, const std::string& value) {
    log.info("convjit_verbose,{},info,{},{}", kVerboseLineVersion, key,
             VerboseLog::csv_field(value));
  };
  info("version", kVersionString);
  info("build",
       fmt::format("CUDA toolkit {} cuDNN headers {}", kCudaToolkitVersion, kCudnnHeaderVersion));
  const Status& cuda = CudaDriver::instance().available();
  info("devices", cuda.is_ok() ? std::string("host, CUDA")
                               : "host (CUDA unavailable: " + cuda.message() + ")");
  info("nvrtc", nvrtc_version());
  info("cache_path", fmt::format("{}", fmt::join(settings.cache_path.value, ":")));
  info("policy", std::string(policy_name(settings.policy.value)));
  log.info("convjit_verbose,{},template,event,descriptor,symbolic,backend,detail,ms,problem",
           kVerboseLineVersion);
}

// The logger for the current log file, created (with a header) on first use
// and again whenever the file setting changes.
std::shared_ptr<spdlog::logger> logger() {
  static std::mutex mutex;
  static std::shared_ptr<spdlog::logger> current;
  static std::string current_file = "\x01";  // matches no real setting
  const auto settings = SettingsStore::instance().snapshot();
  std::lock_guard lock(mutex);
  if (current && current_file == settings->log_file.value) return current;
  spdlog::sink_ptr sink;
  if (!settings->log_file.value.empty()) {
    try {
      sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(settings->log_file.value, false);
    } catch (const spdlog::spdlog_ex& e) {
      std::fprintf(stderr, "convjit: warning: cannot open %s=%s (%s); logging to stderr\n",
                   settings->log_file.origin.c_str(), settings->log_file.value.c_str(), e.what());
    }
  }
  if (!sink) sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  current = std::make_shared<spdlog::logger>("convjit", std::move(sink));
  current->set_pattern("%v");
  current->flush_on(spdlog::level::info);
  current_file = settings->log_file.value;
  write_header(*current, *settings);
  return current;
}

struct Names {
  std::string name, symbolic, problem;
  explicit Names(const OpDescriptor& d)
      : name(descriptor_name(d)),
        symbolic(descriptor_name(with_symbolic_batch(d))),
        problem(VerboseLog::csv_field(descriptor_flags(d))) {}
};

}  // namespace

std::string VerboseLog::csv_field(std::string_view text) {
  if (text.find_first_of(",\"\n") == std::string_view::npos) return std::string(text);
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c == '\n' ? ' ' : c;
  }
  return quoted + "\"";
}

void VerboseLog::decision(const DecisionEvent& e) {
  const auto log = logger();
  const Names n(e.desc);
  for (const auto& [backend, trace] : e.traces)
    for (const auto& probe : trace.probes)
      log->info("convjit_verbose,{},probe,{},{},{},{},,{}", kVerboseLineVersion, n.name, n.symbolic,
                backend, csv_field(probe.path + ": " + probe.outcome), n.problem);
  if (e.rules != nullptr)
    for (const std::string& rule : *e.rules)
      log->info("convjit_verbose,{},rule,{},{},,{},,{}", kVerboseLineVersion, n.name, n.symbolic,
                csv_field(rule), n.problem);
  log->info("convjit_verbose,{},decide,{},{},{},{},{:.3f},{}", kVerboseLineVersion, n.name,
            n.symbolic, e.backend.empty() ? "none" : e.backend, csv_field(e.reason), e.milliseconds,
            n.problem);
}

void VerboseLog::info(std::string_view key, std::string_view value) {
  logger()->info("convjit_verbose,{},info,{},{}", kVerboseLineVersion, key, csv_field(value));
}

void VerboseLog::execution(const OpDescriptor& desc, std::string_view backend,
                           double milliseconds) {
  const Names n(desc);
  logger()->info("convjit_verbose,{},exec,{},{},{},,{:.4f},{}", kVerboseLineVersion, n.name,
                 n.symbolic, backend, milliseconds, n.problem);
}

}  // namespace convjit
