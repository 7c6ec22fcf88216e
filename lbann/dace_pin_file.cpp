#include "lbann/dace_pin_file.hpp"

#include <elf.h>
#include <fmt/format.h>

#include <cstring>
#include <string_view>

#include "cache/cache_entry.hpp"

namespace convjit {

namespace {

struct Section {
  std::size_t offset = 0;
  std::size_t size = 0;
};

// The file range of section `name` in a 64-bit ELF image, every offset
// checked against the image's size (a truncated or foreign file is an
// error, never an out-of-bounds read).  <elf.h> is glibc's own definition
// of the format; nothing else here needs a library.
Result<Section> find_section(std::string_view image, std::string_view name) {
  Elf64_Ehdr header;
  if (image.size() < sizeof header || std::memcmp(image.data(), ELFMAG, SELFMAG) != 0 ||
      image[EI_CLASS] != ELFCLASS64)
    return Status::unsupported("not a 64-bit ELF file");
  std::memcpy(&header, image.data(), sizeof header);
  const auto section_at = [&](std::size_t index) -> Result<Elf64_Shdr> {
    const std::size_t at = header.e_shoff + index * sizeof(Elf64_Shdr);
    if (header.e_shentsize != sizeof(Elf64_Shdr) || index >= header.e_shnum ||
        at + sizeof(Elf64_Shdr) > image.size())
      return Status::unsupported("its section headers lie outside the file");
    Elf64_Shdr section;
    std::memcpy(&section, image.data() + at, sizeof section);
    return section;
  };
  auto names = section_at(header.e_shstrndx);
  if (!names.is_ok()) return names.status();
  const Elf64_Shdr& table = names.value();
  if (table.sh_offset + table.sh_size > image.size())
    return Status::unsupported("its section names lie outside the file");
  const std::string_view strings(image.data() + table.sh_offset, table.sh_size);
  for (std::size_t i = 0; i < header.e_shnum; ++i) {
    auto section = section_at(i);
    if (!section.is_ok()) return section.status();
    const Elf64_Shdr& s = section.value();
    if (s.sh_name >= strings.size()) continue;
    const std::string_view found = strings.substr(s.sh_name, strings.find('\0', s.sh_name) - s.sh_name);
    if (found != name) continue;
    if (s.sh_type != SHT_PROGBITS || s.sh_offset + s.sh_size > image.size())
      return Status::unsupported(fmt::format("its {} section holds no file bytes", name));
    return Section{s.sh_offset, s.sh_size};
  }
  return Status::unsupported(fmt::format("no {} section: not a convjit DaCe shim", name));
}

Result<Section> pin_section(std::string_view image) {
  auto section = find_section(image, CONVJIT_DACE_PIN_SECTION);
  if (!section.is_ok()) return section.status();
  if (section.value().size < sizeof(convjit_dace_pin_t) ||
      std::memcmp(image.data() + section.value().offset, CONVJIT_DACE_PIN_MAGIC,
                  sizeof convjit_dace_pin_t{}.magic) != 0)
    return Status::unsupported("its pin section does not start with the pin's magic");
  return section;
}

Status copy_field(char* field, std::size_t capacity, const std::string& value, const char* name) {
  if (value.size() >= capacity)
    return Status::invalid(fmt::format("the {} '{}' is longer than the pin's {} bytes", name,
                                       value, capacity - 1));
  std::memcpy(field, value.c_str(), value.size() + 1);
  return Status::ok();
}

}  // namespace

Result<convjit_dace_pin_t> read_dace_pin(const std::string& path) {
  auto image = read_file(path);
  if (!image.is_ok()) return image.status();
  auto section = pin_section(image.value());
  if (!section.is_ok())
    return Status(section.status().code(), fmt::format("{}: {}", path, section.status().message()));
  convjit_dace_pin_t pin;
  std::memcpy(&pin, image.value().data() + section.value().offset, sizeof pin);
  pin.descriptor[sizeof pin.descriptor - 1] = '\0';
  pin.backend[sizeof pin.backend - 1] = '\0';
  pin.variant[sizeof pin.variant - 1] = '\0';
  pin.reason[sizeof pin.reason - 1] = '\0';
  return pin;
}

Result<std::string> stamp_dace_pin(std::string shim, const convjit_dace_pin_t& pin) {
  auto section = pin_section(shim);
  if (!section.is_ok()) return section.status();
  std::memcpy(shim.data() + section.value().offset, &pin, sizeof pin);
  return shim;
}

Result<std::string> set_shim_runpath(std::string shim, std::string_view placeholder,
                                     const std::string& directory) {
  const auto at = shim.find(placeholder);
  if (at == std::string::npos || shim.find(placeholder, at + 1) != std::string::npos)
    return Status::unsupported("the shim's RUNPATH placeholder is missing or not unique");
  if (directory.empty() || directory.front() != '/' || directory.size() > placeholder.size() ||
      directory.find(':') != std::string::npos)
    return Status::invalid(fmt::format(
        "libconvjit's directory '{}' must be an absolute path of at most {} characters without "
        "':'",
        directory, placeholder.size()));
  std::string value = directory;
  value.resize(placeholder.size(), '\0');
  shim.replace(at, placeholder.size(), value);
  return shim;
}

Result<convjit_dace_pin_t> make_dace_pin(const std::string& descriptor,
                                         convjit_device_kind_t device, std::int64_t batch,
                                         const std::string& backend, const std::string& variant,
                                         const std::string& reason) {
  convjit_dace_pin_t pin{};
  std::memcpy(pin.magic, CONVJIT_DACE_PIN_MAGIC, sizeof pin.magic);
  pin.version = CONVJIT_DACE_PIN_VERSION;
  pin.device_kind = static_cast<std::uint32_t>(device);
  pin.chosen_batch = batch;
  for (const auto& [field, capacity, value, name] :
       {std::tuple{pin.descriptor, sizeof pin.descriptor, &descriptor, "descriptor"},
        std::tuple{pin.backend, sizeof pin.backend, &backend, "backend"},
        std::tuple{pin.variant, sizeof pin.variant, &variant, "variant"}})
    if (Status s = copy_field(field, capacity, *value, name); !s.is_ok()) return s;
  // The reason is for people: cut, not refused, when long.
  const std::string cut = reason.substr(0, sizeof pin.reason - 1);
  std::memcpy(pin.reason, cut.c_str(), cut.size() + 1);
  return pin;
}

}  // namespace convjit
