// Miss recording: with CONVJIT_RECORD=<file> (or convjit_set_record_file),
// one JSON line per distinct descriptor, with the backend that served it, so
// `convjit preload <file>` can prepare exactly those for the next run.
// Deduplicated within the process and against the lines already in the
// file; safe when several processes append at once (an exclusive flock
// around a re-scan and a single append).
#pragma once

#include <mutex>
#include <string>
#include <string_view>
#include <unordered_set>

#include "dispatcher/descriptor/op_descriptor.hpp"

namespace convjit {

class Recorder {
 public:
  static Recorder& instance();

  // Records `desc` unless the record file already holds it.  Failures to
  // write are reported once on stderr and never fail the operation.
  void record(const OpDescriptor& desc, std::string_view backend);

  // The JSON line for a descriptor (no trailing newline).
  [[nodiscard]] static std::string json_line(const OpDescriptor& desc, std::string_view backend);

 private:
  void scan_new_lines(int fd);

  std::mutex mutex_;
  std::string file_;
  std::unordered_set<std::string> seen_;  // names known to be in file_
  long long scanned_bytes_ = 0;           // prefix of file_ already scanned
};

}  // namespace convjit
