#include "c_callers.h"

#include <stddef.h>

const char* c_status_string(int status) { return convjit_status_string(status); }

convjit_status_t c_tensor_desc_init(convjit_tensor_desc_t* desc, int dtype, int rank,
                                    const int64_t* dims, int layout) {
  return convjit_tensor_desc_init(desc, dtype, rank, dims, layout);
}

convjit_status_t c_pool_params_init(convjit_pool_params_t* params, int spatial_dims, int mode) {
  return convjit_pool_params_init(params, spatial_dims, mode);
}

convjit_status_t c_conv_descriptor_name(const convjit_conv_params_t* params, int direction,
                                        const convjit_tensor_desc_t* x,
                                        const convjit_tensor_desc_t* w,
                                        const convjit_tensor_desc_t* y) {
  size_t required = 0;
  return convjit_conv_descriptor_name(params, direction, x, w, y, 0, NULL, 0, &required);
}

convjit_status_t c_pool_descriptor_name(const convjit_pool_params_t* params, int direction,
                                        const convjit_tensor_desc_t* x,
                                        const convjit_tensor_desc_t* y) {
  size_t required = 0;
  return convjit_pool_descriptor_name(params, direction, x, y, 0, NULL, 0, &required);
}

void c_set_dtype(convjit_tensor_desc_t* desc, int dtype) { desc->dtype = dtype; }
void c_set_pool_mode(convjit_pool_params_t* params, int mode) { params->mode = mode; }
void c_set_device_kind(convjit_exec_t* exec, int kind) { exec->device.kind = kind; }
