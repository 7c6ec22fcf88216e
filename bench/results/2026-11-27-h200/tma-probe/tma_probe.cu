// Why did tests/emulator_templates/tma.cuh mode 0 stop with an illegal
// instruction on the H200 (2026-11-27, gpu-check)?  One 2D TMA tile load
// (f32 40 x 20 tensor, box 8 x 16 at (0, 0)) four ways, each in its own
// process (an illegal instruction ends the context):
//   1  the map as the kernel's only __grid_constant__ parameter;
//   2  the maps as convjit kernels take them: a struct of four after six
//      other parameters (common/tensor_map.cuh);
//   3  the test template itself, built by nvcc, launched as the GPU test does;
//   4  the same source built by NVRTC with the JIT's options, loaded and
//      launched through the driver as the GPU test does;
// and, after 1 and 2 ran and 3 and 4 did not, what differs:
//   5, 6  variant 1 at the test's other two corners, (-3, -5) and (36, 10);
//   7  variant 1 with the template's mbarrier.inval at the end;
//   8  variant 3 with one block (the corner (0, 0)).
//   tma_probe VARIANT TEMPLATE_SOURCE_FILE INCLUDE_DIR
#include <cuda.h>
#include <cuda_runtime.h>
#include <nvrtc.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

struct alignas(64) Map {
  unsigned long long opaque[16];
};
struct Maps {
  Map map[4];
};

__device__ void load_box(const void* map, float* out, int c0 = 0, int c1 = 0, bool inval = false) {
  __shared__ alignas(128) float box[128];
  __shared__ alignas(8) unsigned long long bar;
  const unsigned b = static_cast<unsigned>(__cvta_generic_to_shared(&bar));
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(box));
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(b));
    asm volatile("fence.mbarrier_init.release.cluster;");
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b), "r"(512));
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3}], [%4];" ::"r"(d),
        "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(b)
        : "memory");
  }
  asm volatile(
      "{\n .reg .pred p;\n WAIT%=:\n mbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0;\n"
      " @!p bra WAIT%=;\n}\n" ::"r"(b)
      : "memory");
  if (threadIdx.x < 128) out[threadIdx.x] = box[threadIdx.x];
  __syncthreads();
  if (inval && threadIdx.x == 0) asm volatile("mbarrier.inval.shared::cta.b64 [%0];" ::"r"(b));
}

__global__ void corner(float* out, const __grid_constant__ CUtensorMap map, int c0, int c1,
                       int inval) {
  load_box(&map, out, c0, c1, inval != 0);
}

__global__ void single_map(float* out, const __grid_constant__ CUtensorMap map) {
  load_box(&map, out);
}

__global__ void convjit_layout(const float*, const float*, float* out, float, float, void*,
                               const __grid_constant__ Maps maps) {
  load_box(&maps.map[0], out);
}

extern "C" __global__ void convjit_kernel(const float*, const float*, float*, float, float, void*,
                                          const __grid_constant__ Maps maps);

#define CHECK(call)                                                       \
  do {                                                                    \
    if (auto e = (call); e != 0) {                                        \
      std::printf("variant %d: %s failed: %d\n", variant, #call, int(e)); \
      return 1;                                                           \
    }                                                                     \
  } while (0)

int main(int argc, char** argv) {
  const int variant = argc > 1 ? std::atoi(argv[1]) : 1;
  CHECK(cuInit(0));
  CUdevice dev;
  CUcontext ctx;
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  std::vector<float> host(800);
  for (int i = 0; i < 800; ++i) host[i] = float(i + 1);
  float *x = nullptr, *y = nullptr;
  CHECK(cudaMalloc(&x, 800 * 4));
  CHECK(cudaMalloc(&y, 3 * 128 * 4));
  CHECK(cudaMemcpy(x, host.data(), 800 * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemset(y, 0, 3 * 128 * 4));
  Maps maps{};
  const cuuint64_t dims[2] = {40, 20}, strides[1] = {160};
  const cuuint32_t box[2] = {8, 16}, steps[2] = {1, 1};
  CHECK(cuTensorMapEncodeTiled(reinterpret_cast<CUtensorMap*>(&maps.map[0]),
                               CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, x, dims, strides, box, steps,
                               CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                               CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  void* none = nullptr;
  float alpha = 1, beta = 0;
  void* args[] = {&x, &none, &y, &alpha, &beta, &none, &maps};
  CUtensorMap single;
  std::memcpy(&single, &maps.map[0], sizeof single);
  if (variant >= 5 && variant <= 7) {
    const int c0 = variant == 5 ? -3 : variant == 6 ? 36 : 0;
    const int c1 = variant == 5 ? -5 : variant == 6 ? 10 : 0;
    corner<<<1, 128>>>(y, single, c0, c1, variant == 7);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    std::printf("variant %d: ran\n", variant);
    return 0;
  }
  if (variant == 8) {
    CHECK(cudaLaunchKernel(reinterpret_cast<void*>(convjit_kernel), 1, 256, args, 0, nullptr));
  } else if (variant == 1) {
    static_assert(sizeof single == sizeof(Map));
    single_map<<<1, 128>>>(y, single);
  } else if (variant == 2) {
    CHECK(cudaLaunchKernel(reinterpret_cast<void*>(convjit_layout), 1, 128, args, 0, nullptr));
  } else if (variant == 3) {
    CHECK(cudaLaunchKernel(reinterpret_cast<void*>(convjit_kernel), 3, 256, args, 0, nullptr));
  } else {
    std::ifstream file(argv[2]);
    std::stringstream text;
    text << "#define CONVJIT_DTYPE 0\nstruct Problem {\n  static constexpr long long BLOCK = 256,"
            " N = 768, MODE = 0;\n};\n"
         << file.rdbuf();
    nvrtcProgram program;
    CHECK(nvrtcCreateProgram(&program, text.str().c_str(), "tma.cu", 0, nullptr, nullptr));
    const std::string include = std::string("-I") + argv[3];
    const char* options[] = {"--gpu-architecture=sm_90a", "--std=c++17", "--fmad=true",
                             include.c_str()};
    if (nvrtcCompileProgram(program, 4, options) != NVRTC_SUCCESS) {
      size_t size;
      nvrtcGetProgramLogSize(program, &size);
      std::string log(size, '\0');
      nvrtcGetProgramLog(program, log.data());
      std::printf("variant 4: NVRTC: %s\n", log.c_str());
      return 1;
    }
    size_t size;
    CHECK(nvrtcGetCUBINSize(program, &size));
    std::vector<char> cubin(size);
    CHECK(nvrtcGetCUBIN(program, cubin.data()));
    CUmodule module;
    CUfunction function;
    CHECK(cuModuleLoadData(&module, cubin.data()));
    CHECK(cuModuleGetFunction(&function, module, "convjit_kernel"));
    CHECK(cuLaunchKernel(function, 3, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr));
  }
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  std::vector<float> out(128);
  CHECK(cudaMemcpy(out.data(), y, 128 * 4, cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 8; ++c)
      wrong += out[r * 8 + c] != host[r * 40 + c];
  std::printf("variant %d: ran; %d of 128 elements differ from the tensor's box (first %g %g)\n",
              variant, wrong, out[0], out[8]);
  return wrong != 0;
}
