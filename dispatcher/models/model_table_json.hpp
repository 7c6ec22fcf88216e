// User model tables as JSON (format in the README, "Model tables"):
//   {"name": "mynet", "spatial_dims": 2, "image_size": 224,
//    "layers": [{"name": "stem", "type": "conv", "level": 0, "in": 3, "out": 64,
//                "kernel": 7, "stride": 2, "pad": 3, "groups": 1, "bias": false,
//                "input_layer": true, "count": 1}, ...]}
// "type" is conv, maxpool, avgpool, avgpadpool or global_avgpool; "groups" 0
// means depthwise; "pad" defaults to kernel/2, the rest to the values shown.
#pragma once

#include <string>

#include "dispatcher/models/model_table.hpp"
#include "dispatcher/result.hpp"

namespace convjit {

// Errors name the file, the layer index and the field.
[[nodiscard]] Result<ModelTable> load_model_table(const std::string& path);

}  // namespace convjit
