// A status code with the message that explains it, in the spirit of
// cudnn-frontend's error_t: cheap on success, descriptive on failure, and
// impossible to drop silently.
#pragma once

#include <string>
#include <utility>

#include "convjit/convjit.h"

namespace convjit {

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(convjit_status_t code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return {}; }
  static Status invalid(std::string message) {
    return {CONVJIT_STATUS_INVALID_ARGUMENT, std::move(message)};
  }
  static Status unsupported(std::string message) {
    return {CONVJIT_STATUS_UNSUPPORTED, std::move(message)};
  }
  static Status not_available(std::string message) {
    return {CONVJIT_STATUS_NOT_AVAILABLE, std::move(message)};
  }

  [[nodiscard]] bool is_ok() const { return code_ == CONVJIT_STATUS_SUCCESS; }
  [[nodiscard]] convjit_status_t code() const { return code_; }
  [[nodiscard]] const std::string& message() const { return message_; }

 private:
  convjit_status_t code_ = CONVJIT_STATUS_SUCCESS;
  std::string message_;
};

}  // namespace convjit
