// Stacks for the fibers that run an emulated block's threads, reused from
// block to block.  Hand-written over Boost.Context's own allocators
// because protected_fixedsize_stack maps and unmaps a stack per fiber
// (three system calls per emulated thread), and the pooled one has no
// guard page; this pool maps each stack once, with a guard page below it,
// so an overflow faults instead of corrupting a neighbour.
#pragma once

#include <boost/context/stack_context.hpp>
#include <cstddef>
#include <vector>

namespace convjit::emulator {

class FiberStackPool {
 public:
#if defined(__SANITIZE_ADDRESS__)
  static constexpr std::size_t kStackBytes = 1024 * 1024;  // ASan's redzones widen every frame
#else
  static constexpr std::size_t kStackBytes = 256 * 1024;
#endif

  FiberStackPool() = default;
  ~FiberStackPool();
  FiberStackPool(const FiberStackPool&) = delete;
  FiberStackPool& operator=(const FiberStackPool&) = delete;

  // Throws std::bad_alloc when no stack can be mapped.
  boost::context::stack_context allocate();
  void deallocate(boost::context::stack_context& stack) noexcept;

 private:
  std::vector<void*> free_;      // stack tops
  std::vector<void*> mappings_;  // guard page + stack, for munmap
};

// The StackAllocator boost::context::fiber takes: a handle on a pool, which
// also reports the stack it hands out to `allocated`.
struct PooledStack {
  FiberStackPool* pool;
  boost::context::stack_context* allocated;
  boost::context::stack_context allocate() { return *allocated = pool->allocate(); }
  void deallocate(boost::context::stack_context& stack) noexcept { pool->deallocate(stack); }
};

}  // namespace convjit::emulator
