// ResNet-50 v1.5 (torchvision), 224x224 by default: 53 convolutions, each
// followed by its BatchNorm, the stem max pool and the global average pool.  Levels: 0 = 224, 1 = 112,
// 2 = 56, 3 = 28, 4 = 14, 5 = 7.
#include "dispatcher/models/model_builders.hpp"

namespace convjit {

ModelTable resnet50_table() {
  using namespace models;
  return {"resnet50",
          "ResNet-50 v1.5 image classifier (53 convs, NCHW 224x224 default)",
          2,
          224,
          with_batchnorms({
              input_layer(conv("stem.conv", 0, 3, 64, 7, 2)),
              max_pool("stem.maxpool", 1, 64, 3, 2, 1),
              // @56
              conv("layer1.conv1.first", 2, 64, 64, 1),
              conv("layer1.conv2", 2, 64, 64, 3, 1, 3),
              conv("layer1.conv3+downsample", 2, 64, 256, 1, 1, 4),
              conv("layer1.conv1", 2, 256, 64, 1, 1, 2),
              conv("layer2.0.conv1", 2, 256, 128, 1),
              conv("layer2.0.conv2", 2, 128, 128, 3, 2),
              conv("layer2.0.downsample", 2, 256, 512, 1, 2),
              // @28
              conv("layer2.conv3", 3, 128, 512, 1, 1, 4),
              conv("layer2.conv1", 3, 512, 128, 1, 1, 3),
              conv("layer2.conv2", 3, 128, 128, 3, 1, 3),
              conv("layer3.0.conv1", 3, 512, 256, 1),
              conv("layer3.0.conv2", 3, 256, 256, 3, 2),
              conv("layer3.0.downsample", 3, 512, 1024, 1, 2),
              // @14
              conv("layer3.conv3", 4, 256, 1024, 1, 1, 6),
              conv("layer3.conv1", 4, 1024, 256, 1, 1, 5),
              conv("layer3.conv2", 4, 256, 256, 3, 1, 5),
              conv("layer4.0.conv1", 4, 1024, 512, 1),
              conv("layer4.0.conv2", 4, 512, 512, 3, 2),
              conv("layer4.0.downsample", 4, 1024, 2048, 1, 2),
              // @7
              conv("layer4.conv3", 5, 512, 2048, 1, 1, 3),
              conv("layer4.conv1", 5, 2048, 512, 1, 1, 2),
              conv("layer4.conv2", 5, 512, 512, 3, 1, 2),
              global_avg_pool("avgpool", 5, 2048),
          })};
}

}  // namespace convjit
