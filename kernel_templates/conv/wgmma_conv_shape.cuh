// How the Hopper conv (conv/conv_fwd_wgmma.cuh) cuts its work.  Plain
// macros: the host sizes the grid, the tensor maps' boxes and the shared
// memory with them (dispatcher/backends/jit/wgmma_conv.cpp), the template
// its tiles and its ring of stages.
#pragma once

#define CONVJIT_WGMMA_PIXELS 128   // M: output pixels per tile
#define CONVJIT_WGMMA_FILTERS 128  // N: filters per tile
#define CONVJIT_WGMMA_CHANNELS 64  // K step: 128 bytes of 16-bit channels, one tap
#define CONVJIT_WGMMA_MAX_STAGES 8  // the mbarriers the template declares
