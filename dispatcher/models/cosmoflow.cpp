// CosmoFlow (LBANN), 3D, 128^3 by default: five 3x3x3 convs (pad 1,
// stride 1), each followed by a 2x2x2 max pool with stride 2.
#include "dispatcher/models/model_builders.hpp"

namespace convjit {

ModelTable cosmoflow_table() {
  using namespace models;
  return {"cosmoflow",
          "CosmoFlow 3D cosmology network (LBANN; 5 conv+pool stages, NCDHW 128^3 default)",
          3,
          128,
          {
              input_layer(conv("conv1", 0, 4, 32, 3)),
              max_pool("pool1", 0, 32, 2, 2, 0),
              conv("conv2", 1, 32, 64, 3),
              max_pool("pool2", 1, 64, 2, 2, 0),
              conv("conv3", 2, 64, 128, 3),
              max_pool("pool3", 2, 128, 2, 2, 0),
              conv("conv4", 3, 128, 256, 3),
              max_pool("pool4", 3, 256, 2, 2, 0),
              conv("conv5", 4, 256, 512, 3),
              max_pool("pool5", 4, 512, 2, 2, 0),
          }};
}

}  // namespace convjit
