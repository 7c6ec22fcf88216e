// Test helper: a copy of a buffer that starts `shift` bytes past a 16-byte
// boundary, as a view into a larger tensor may; with shift 0, aligned.
// The kernels' 16-byte paths must not take a shifted operand.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace convjit::test {

class ShiftedBuffer {
 public:
  ShiftedBuffer(const std::vector<unsigned char>& v, std::size_t shift)
      : storage_(v.size() + 32), first_(align(storage_.data()) + shift), size_(v.size()) {
    std::copy(v.begin(), v.end(), first_);
  }
  [[nodiscard]] unsigned char* data() const { return first_; }
  [[nodiscard]] std::vector<unsigned char> bytes() const { return {first_, first_ + size_}; }

 private:
  static unsigned char* align(unsigned char* p) {
    return p + (16 - reinterpret_cast<std::uintptr_t>(p) % 16) % 16;
  }
  std::vector<unsigned char> storage_;
  unsigned char* first_;
  std::size_t size_;
};

}  // namespace convjit::test
