#include "dispatcher/backends/onednn/onednn_handles.hpp"

#include <fmt/format.h>

namespace convjit {

Result<dnnl_engine_t> onednn_cpu_engine() {
  static const Result<dnnl_engine_t> engine = []() -> Result<dnnl_engine_t> {
    const OnednnLibrary& onednn = OnednnLibrary::instance();
    if (Status s = onednn.available(); !s.is_ok()) return s;
    dnnl_engine_t made = nullptr;  // kept until exit: kernels may outlive any owner
    if (Status s =
            onednn.check(onednn.api().engine_create(&made, dnnl_cpu, 0), "dnnl_engine_create(cpu)");
        !s.is_ok())
      return s;
    return made;
  }();
  return engine;
}

Result<OnednnStream> onednn_cpu_stream() {
  auto engine = onednn_cpu_engine();
  if (!engine.is_ok()) return engine.status();
  const OnednnLibrary& onednn = OnednnLibrary::instance();
  dnnl_stream_t stream = nullptr;
  if (Status s = onednn.check(
          onednn.api().stream_create(&stream, engine.value(), dnnl_stream_default_flags),
          "dnnl_stream_create");
      !s.is_ok())
    return s;
  return OnednnStream(stream);
}

Result<HostBuffer> HostBuffer::allocate(std::size_t bytes, const char* what) {
  HostBuffer buffer;
  if (bytes == 0) return buffer;
  constexpr std::size_t kAlignment = 64;
  const std::size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  buffer.data_.reset(std::aligned_alloc(kAlignment, rounded));
  if (!buffer.data_)
    return Status(CONVJIT_STATUS_OUT_OF_MEMORY,
                  fmt::format("cannot allocate {} B of host memory for {}", bytes, what));
  return buffer;
}

}  // namespace convjit
