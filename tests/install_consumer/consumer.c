/* Uses the installed C API: a 1D conv of [1,2,3] with [1,1] must give [3,5]. */
#include <convjit/convjit.h>
#include <stdio.h>

int main(void) {
  convjit_tensor_desc_t x, w, y;
  convjit_conv_params_t p;
  const int64_t xd[3] = {1, 1, 3}, wd[3] = {1, 1, 2}, yd[3] = {1, 1, 2};
  const float xv[3] = {1, 2, 3}, wv[2] = {1, 1};
  float yv[2] = {0, 0};
  if (convjit_tensor_desc_init(&x, CONVJIT_DTYPE_F32, 3, xd, CONVJIT_LAYOUT_NCHW) ||
      convjit_tensor_desc_init(&w, CONVJIT_DTYPE_F32, 3, wd, CONVJIT_LAYOUT_NCHW) ||
      convjit_tensor_desc_init(&y, CONVJIT_DTYPE_F32, 3, yd, CONVJIT_LAYOUT_NCHW) ||
      convjit_conv_params_init(&p, 1) ||
      convjit_conv_forward(&p, &x, xv, &w, wv, &y, yv, 1.0, 0.0, NULL)) {
    fprintf(stderr, "consumer_c: %s\n", convjit_last_error_message());
    return 1;
  }
  printf("convjit %s: y = [%g, %g] via %s\n", convjit_version_string(), yv[0], yv[1],
         convjit_last_backend());
  return (yv[0] == 3.0f && yv[1] == 5.0f) ? 0 : 1;
}
