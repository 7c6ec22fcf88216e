#include "dispatcher/descriptor/validation_checks.hpp"

#include <algorithm>
#include <numeric>

#include "dispatcher/descriptor/dtype.hpp"

namespace convjit::validation {

std::string op_label(const OpDescriptor& d) {
  switch (d.kind) {
    case OpKind::conv:
      return fmt::format("conv{}d {}", d.spatial_dims, direction_name(d.direction));
    case OpKind::pool:
      return fmt::format("{} pool{}d {}", pool_mode_name(d.pool_mode), d.spatial_dims,
                         direction_name(d.direction));
    case OpKind::bias_grad:
      return fmt::format("bias grad {}d", d.spatial_dims);
    case OpKind::batchnorm:
      return fmt::format("batchnorm{}d {}{}", d.spatial_dims, direction_name(d.direction),
                         d.has_norm_flag(kNormInference) ? " (inference)" : "");
    case OpKind::resize:
      return fmt::format("{} resize{}d {}", resize_mode_name(d.resize_mode), d.spatial_dims,
                         direction_name(d.direction));
  }
  return "op";
}

// name and part together name the field, e.g. ("x", " shape") or ("pad", "").
void check_unused_slots_zero(Checker& c, const char* name, const char* part,
                             std::span<const std::int64_t> all, int used_count) {
  for (std::size_t i = static_cast<std::size_t>(used_count); i < all.size(); ++i)
    c.require(all[i] == 0, "{}{}[{}] = {} must be 0: only {} entries are used", name, part, i,
              all[i], used_count);
}

// has_batch: dims[0] is a batch (x, y), which a symbolic descriptor leaves 0.
void check_tensor(Checker& c, const OpDescriptor& d, const char* name, const Dims5& dims,
                  const Dims5& strides, bool has_batch) {
  const int rank = d.rank();
  check_unused_slots_zero(c, name, " shape", dims, rank);
  check_unused_slots_zero(c, name, " strides", strides, rank);
  for (int i = 0; i < rank; ++i) {
    const auto at = static_cast<std::size_t>(i);
    if (i == 0 && has_batch && d.symbolic_batch) {
      c.require(dims[0] == 0, "{} batch must be left 0 in a symbolic-batch descriptor", name);
      continue;
    }
    c.require(dims[at] > 0, "{} shape[{}] = {} must be positive (shape {})", name, i, dims[at],
              used(dims, rank));
    c.require(strides[at] >= 0, "{} strides[{}] = {} must be non-negative", name, i, strides[at]);
  }
}

namespace {

// Whether the largest element offset plus one, in bytes, fits in int64.
bool extent_fits_int64(const Dims5& dims, const Dims5& strides, int rank, std::size_t elem_size) {
  std::int64_t last = 0;
  std::int64_t count = 1;
  for (int i = 0; i < rank; ++i) {
    const auto at = static_cast<std::size_t>(i);
    const std::int64_t dim = std::max<std::int64_t>(dims[at], 1);
    std::int64_t term = 0;
    if (__builtin_mul_overflow(dim - 1, strides[at], &term)) return false;
    if (__builtin_add_overflow(last, term, &last)) return false;
    if (__builtin_mul_overflow(count, dim, &count)) return false;
  }
  std::int64_t bytes = 0;
  return !__builtin_add_overflow(last, 1, &last) &&
         !__builtin_mul_overflow(last, static_cast<std::int64_t>(elem_size), &bytes) &&
         !__builtin_mul_overflow(count, static_cast<std::int64_t>(elem_size), &bytes);
}

}  // namespace

void check_overflow(Checker& c, const OpDescriptor& d, const char* name, const Dims5& dims,
                    const Dims5& strides) {
  c.require(extent_fits_int64(dims, strides, d.rank(), element_size(d.dtype)),
            "{} shape {} with strides {} addresses more than 2^63 bytes; the tensor is too "
            "large or a stride is wrong",
            name, used(dims, d.rank()), used(strides, d.rank()));
}

// With the dims sorted by stride, each stride must exceed the furthest offset that
// the smaller-stride dims reach; this is exact for the layouts in practice
// (permutations, padded rows) and conservative otherwise.
bool is_non_overlapping(const Dims5& dims, const Dims5& strides, int rank) {
  std::array<std::size_t, kMaxRank> storage{};
  const std::span order(storage.data(), static_cast<std::size_t>(std::clamp(rank, 0, kMaxRank)));
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return strides[a] < strides[b]; });
  std::int64_t reach = 0, step = 0;
  for (const std::size_t at : order) {
    if (dims[at] <= 1) continue;
    if (strides[at] <= reach) return false;
    // Only reachable with an extent past 2^63, which check_overflow refuses.
    if (__builtin_mul_overflow(strides[at], dims[at] - 1, &step) ||
        __builtin_add_overflow(reach, step, &reach))
      return false;
  }
  return true;
}


void check_not_overlapping(Checker& c, const OpDescriptor& d, const char* name, const Dims5& dims,
                           const Dims5& strides) {
  c.require(is_non_overlapping(dims, strides, d.rank()),
            "output {} strides {} make elements of shape {} overlap; give each element its "
            "own address (e.g. contiguous strides)",
            name, used(strides, d.rank()), used(dims, d.rank()));
}

void check_operand(Checker& c, const OpDescriptor& d, const char* name, const Dims5& dims,
                   const Dims5& strides, bool written) {
  check_tensor(c, d, name, dims, strides);
  check_overflow(c, d, name, dims, strides);
  if (c.failed() || !written) return;
  check_not_overlapping(c, d, name, dims, strides);
}

}  // namespace convjit::validation
