// The C++ side of the ctypes test: computes the same problems as
// test_c_api_ctypes.py through the C++ API, from the same raw inputs.
//   ctypes_peer <dir>   reads dir/x.bin, dir/w.bin (f32, NCHW), writes
//                       dir/y_cpp.bin (conv) and dir/p_cpp.bin (max pool)
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "convjit/convjit.hpp"

namespace {

std::vector<float> read_floats(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<float> values(bytes.size() / sizeof(float));
  std::copy(bytes.begin(),
            bytes.begin() + static_cast<std::ptrdiff_t>(values.size() * sizeof(float)),
            reinterpret_cast<char*>(values.data()));
  return values;
}

void write_floats(const std::string& path, const std::vector<float>& values) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(values.data()),
             static_cast<std::streamsize>(values.size() * sizeof(float)));
}

int fail(const convjit::Status& s) {
  std::fprintf(stderr, "ctypes_peer: %s\n", s.message().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: ctypes_peer <dir>\n");
    return 2;
  }
  using namespace convjit;
  const std::string dir = argv[1];
  const auto x = read_floats(dir + "/x.bin");
  const auto w = read_floats(dir + "/w.bin");
  // Must match the problem in test_c_api_ctypes.py.
  TensorDesc xd, wd, yd, pd;
  ConvParams conv(2);
  conv.stride[0] = 2, conv.pad_begin[0] = 1, conv.pad_end[0] = 2,
  conv.pad_begin[1] = conv.pad_end[1] = 1;
  conv.groups = 2;
  if (Status s = TensorDesc::contiguous(xd, CONVJIT_DTYPE_F32, {2, 4, 9, 7}); !s.is_ok())
    return fail(s);
  if (Status s = TensorDesc::contiguous(wd, CONVJIT_DTYPE_F32, {6, 2, 3, 3}); !s.is_ok())
    return fail(s);
  std::int64_t y_dims[4];
  if (Status s = conv_output_dims(conv, xd, wd, y_dims); !s.is_ok()) return fail(s);
  if (Status s = TensorDesc::contiguous(yd, CONVJIT_DTYPE_F32,
                                        {y_dims[0], y_dims[1], y_dims[2], y_dims[3]});
      !s.is_ok())
    return fail(s);
  std::vector<float> y(static_cast<std::size_t>(y_dims[0] * y_dims[1] * y_dims[2] * y_dims[3]));
  if (Status s = conv_forward(conv, xd, x.data(), wd, w.data(), yd, y.data()); !s.is_ok())
    return fail(s);
  write_floats(dir + "/y_cpp.bin", y);

  PoolParams pool(2, CONVJIT_POOL_MAX);
  pool.window[0] = pool.window[1] = 3;
  pool.stride[0] = pool.stride[1] = 2;
  pool.pad_begin[0] = pool.pad_end[0] = pool.pad_begin[1] = pool.pad_end[1] = 1;
  std::int64_t p_dims[4];
  if (Status s = pool_output_dims(pool, xd, true, p_dims); !s.is_ok()) return fail(s);
  if (Status s = TensorDesc::contiguous(pd, CONVJIT_DTYPE_F32,
                                        {p_dims[0], p_dims[1], p_dims[2], p_dims[3]});
      !s.is_ok())
    return fail(s);
  std::vector<float> p(static_cast<std::size_t>(p_dims[0] * p_dims[1] * p_dims[2] * p_dims[3]));
  if (Status s = pool_forward(pool, xd, x.data(), pd, p.data()); !s.is_ok()) return fail(s);
  write_floats(dir + "/p_cpp.bin", p);
  return 0;
}
