// libFuzzer target: the descriptor-name parser, whose input comes from file
// names in cache directories that anyone sharing a cache may write.
//
// Properties checked on every input, besides "no crash, no sanitizer
// finding": a name the parser accepts is a valid descriptor, prints back to
// exactly the same name (every op has one spelling), and its symbolic-batch
// name parses too.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "dispatcher/descriptor/descriptor_flags.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "dispatcher/descriptor/descriptor_validation.hpp"

namespace {

void require(bool condition) {
  if (!condition) std::abort();  // libFuzzer saves the input as a crash
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace convjit;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto parsed = parse_descriptor_name(text);
  if (!parsed.is_ok()) {
    require(!parsed.status().message().empty());
    return 0;
  }
  const OpDescriptor& d = parsed.value();
  require(validate_descriptor(d).is_ok());
  const std::string name = descriptor_name(d);
  const std::string_view bare =
      text.starts_with("lib") && text.ends_with(".so") ? text.substr(3, text.size() - 6) : text;
  require(name == bare);
  require(parse_descriptor_name(descriptor_name(with_symbolic_batch(d))).is_ok());
  require(!descriptor_flags(d).empty());
  return 0;
}
