#include "dispatcher/backends/emulator/fiber_stack_pool.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <new>

namespace convjit::emulator {

namespace {

std::size_t page_bytes() { return static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)); }

}  // namespace

FiberStackPool::~FiberStackPool() {
  for (void* mapping : mappings_) ::munmap(mapping, kStackBytes + page_bytes());
}

boost::context::stack_context FiberStackPool::allocate() {
  boost::context::stack_context stack;
  stack.size = kStackBytes;
  if (!free_.empty()) {
    stack.sp = free_.back();
    free_.pop_back();
    return stack;
  }
  const std::size_t guard = page_bytes();
  void* mapping = ::mmap(nullptr, kStackBytes + guard, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mapping == MAP_FAILED) throw std::bad_alloc();
  ::mprotect(mapping, guard, PROT_NONE);  // stacks grow down, into the guard page
  mappings_.push_back(mapping);
  free_.reserve(mappings_.size());  // so deallocate() never allocates
  stack.sp = static_cast<char*>(mapping) + guard + kStackBytes;
  return stack;
}

void FiberStackPool::deallocate(boost::context::stack_context& stack) noexcept {
  free_.push_back(stack.sp);
}

}  // namespace convjit::emulator
