// The verbose log: one spdlog logger, one line per event, in a stable,
// versioned, CSV-like format (oneDNN's verbose mode is the model).  Fields
// are only ever appended, never reordered.  Level 1 logs each decision,
// level 2 also each execution.  With logging off, the hot path pays one
// relaxed atomic load.
//
//   convjit_verbose,v1,info,<key>,<value>                      header lines
//   convjit_verbose,v1,template,event,descriptor,symbolic,backend,detail,ms,problem
//   convjit_verbose,v1,probe,<name>,<symbolic>,<backend>,<file>: <outcome>,,<problem>
//   convjit_verbose,v1,rule,<name>,<symbolic>,,rule <file>:<index> <id>: <what it did>,,<problem>
//   convjit_verbose,v1,decide,<name>,<symbolic>,<backend>,<why>,<resolve ms>,<problem>
//   convjit_verbose,v1,exec,<name>,<symbolic>,<backend>,,<ms>,<problem>
//
// <problem> is the op as `convjit describe` flags, so a line can be pasted
// back into the CLI.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "dispatcher/backend.hpp"
#include "dispatcher/settings.hpp"

namespace convjit {

inline constexpr std::string_view kVerboseLineVersion = "v1";

// Everything the dispatcher decided for one key.
struct DecisionEvent {
  const OpDescriptor& desc;
  const convjit_device_t& device;
  const std::vector<std::pair<std::string_view, BuildTrace>>& traces;  // per backend tried
  std::string_view backend;                                            // empty if none could serve
  std::string_view reason;
  double milliseconds;
  // What each rule that matched did ("rule r.json:0 id: matched ...; ...").
  const std::vector<std::string>* rules = nullptr;
};

class VerboseLog {
 public:
  [[nodiscard]] static bool enabled(int level) {
    return SettingsStore::instance().verbose_level() >= level;
  }

  static void decision(const DecisionEvent& event);
  // A header-style line: convjit_verbose,v1,info,<key>,<value>.
  static void info(std::string_view key, std::string_view value);
  static void execution(const OpDescriptor& desc, std::string_view backend, double milliseconds);

  // Quotes a field if it holds a comma or a quote (RFC 4180).
  [[nodiscard]] static std::string csv_field(std::string_view text);
};

}  // namespace convjit
