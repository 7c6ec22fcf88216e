/* The C API called from C, where any int may be passed for an enum: the
 * way a C program (or a ctypes binding) reaches convjit with an out-of-range
 * value.  C++ cannot make such a value without undefined behaviour, so the
 * tests that send one go through these. */
#ifndef CONVJIT_TESTS_C_CALLERS_H
#define CONVJIT_TESTS_C_CALLERS_H

#include "convjit/convjit.h"

#ifdef __cplusplus
extern "C" {
#endif

const char* c_status_string(int status);
convjit_status_t c_tensor_desc_init(convjit_tensor_desc_t* desc, int dtype, int rank,
                                    const int64_t* dims, int layout);
convjit_status_t c_pool_params_init(convjit_pool_params_t* params, int spatial_dims, int mode);
convjit_status_t c_conv_descriptor_name(const convjit_conv_params_t* params, int direction,
                                        const convjit_tensor_desc_t* x,
                                        const convjit_tensor_desc_t* w,
                                        const convjit_tensor_desc_t* y);
convjit_status_t c_pool_descriptor_name(const convjit_pool_params_t* params, int direction,
                                        const convjit_tensor_desc_t* x,
                                        const convjit_tensor_desc_t* y);

/* Stores a raw int in an enum-typed field. */
void c_set_dtype(convjit_tensor_desc_t* desc, int dtype);
void c_set_pool_mode(convjit_pool_params_t* params, int mode);
void c_set_device_kind(convjit_exec_t* exec, int kind);

#ifdef __cplusplus
}
#endif

#endif
