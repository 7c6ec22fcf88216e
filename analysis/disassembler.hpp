// NVIDIA's nvdisasm, run on a CUBIN to list its SASS: what the GPU will
// execute, which no part of the CUDA toolkit's libraries gives (NVRTC stops
// at the CUBIN).  Found as the run-time libraries are (library_search.hpp):
//   1. CONVJIT_NVDISASM, the program or the directory holding it, alone;
//   2. PATH;
//   3. the CUDA toolkit's bin/ ($CUDA_HOME, $CUDA_PATH, /usr/local/cuda);
//   4. NVIDIA's wheels (nvidia-cuda-nvdisasm from PyPI) in $VIRTUAL_ENV,
//      $CONDA_PREFIX, then this build's Python environment, where
//      `tools/setup --python` installs it.
#pragma once

#include <string>
#include <vector>

#include "dispatcher/result.hpp"
#include "dispatcher/settings.hpp"

namespace convjit::analysis {

struct Disassembler {
  std::string path;
  std::string where;  // the place that found it
};

// NOT_AVAILABLE names every place looked at and how to get it.
[[nodiscard]] Result<Disassembler> find_disassembler(EnvLookup lookup);

// nvdisasm's listing of the CUBIN's code sections (-c); INTERNAL_ERROR with its
// message when it fails.
[[nodiscard]] Result<std::string> disassemble(const Disassembler& tool,
                                              const std::vector<char>& cubin);

}  // namespace convjit::analysis
