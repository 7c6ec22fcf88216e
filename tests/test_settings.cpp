// Settings: strict parsing of every variable, the LBANN aliases, defaults
// and API overrides.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "convjit/convjit.h"
#include "dispatcher/settings.hpp"

namespace convjit {
namespace {

// A fake environment for settings_from_environment.
std::map<std::string, std::string> g_env;
const char* fake_getenv(const char* name) {
  auto it = g_env.find(name);
  return it == g_env.end() ? nullptr : it->second.c_str();
}

Settings read(std::map<std::string, std::string> env,
              std::vector<std::string>* warnings = nullptr) {
  g_env = std::move(env);
  std::vector<std::string> local;
  Settings s = settings_from_environment(fake_getenv, warnings ? *warnings : local);
  return s;
}

TEST(Settings, VerboseZeroMeansOffAndOtherValuesAreRejected) {
  EXPECT_EQ(read({{"CONVJIT_VERBOSE", "0"}}).verbose.value, 0);
  EXPECT_EQ(read({{"CONVJIT_VERBOSE", "2"}}).verbose.value, 2);
  EXPECT_EQ(read({{"DISTCONV_JIT_VERBOSE", "0"}}).verbose.value, 0);  // LBANN treats this as on
  EXPECT_EQ(read({{"DISTCONV_JIT_VERBOSE", "1"}}).verbose.value, 1);
  std::vector<std::string> warnings;
  const Settings bad = read({{"CONVJIT_VERBOSE", "yes"}}, &warnings);
  EXPECT_EQ(bad.verbose.value, 0);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0], "CONVJIT_VERBOSE='yes' is not 0, 1 or 2; ignored (logging stays off)");
  EXPECT_EQ(read({{"CONVJIT_VERBOSE", "1"}, {"DISTCONV_JIT_VERBOSE", "2"}}).verbose.value, 1);
}

TEST(Settings, CachePathListAliasAndDefaults) {
  const Settings s = read({{"CONVJIT_CACHE_PATH", "/a::/b/c:"}, {"HOME", "/home/u"}});
  EXPECT_EQ(s.cache_path.value, (std::vector<std::string>{"/a", "/b/c"}));
  EXPECT_EQ(s.cache_path.source, SettingSource::environment);
  EXPECT_EQ(s.cache_path.origin, "CONVJIT_CACHE_PATH");
  const Settings alias = read({{"DISTCONV_JIT_CACHEPATH", "/lbann"}, {"HOME", "/home/u"}});
  EXPECT_EQ(alias.cache_path.value, (std::vector<std::string>{"/lbann"}));
  EXPECT_EQ(alias.cache_path.origin, "DISTCONV_JIT_CACHEPATH");
  EXPECT_EQ(read({{"CONVJIT_CACHE_PATH", "/mine"}, {"DISTCONV_JIT_CACHEPATH", "/lbann"}})
                .cache_path.value,
            (std::vector<std::string>{"/mine"}));
  EXPECT_EQ(read({{"XDG_CACHE_HOME", "/xdg"}, {"HOME", "/home/u"}}).cache_path.value,
            (std::vector<std::string>{"/xdg/convjit"}));
  const Settings home = read({{"HOME", "/home/u"}});
  EXPECT_EQ(home.cache_path.value, (std::vector<std::string>{"/home/u/.cache/convjit"}));
  EXPECT_EQ(home.cache_path.source, SettingSource::default_value);
  std::vector<std::string> warnings;
  EXPECT_EQ(read({{"CONVJIT_CACHE_PATH", ":"}, {"HOME", "/h"}}, &warnings).cache_path.value,
            (std::vector<std::string>{"/h/.cache/convjit"}));
  EXPECT_EQ(warnings.size(), 1u);
}

TEST(Settings, NeverDefaultsToTmp) {
  // A relative XDG_CACHE_HOME is invalid per the XDG spec and ignored.
  const Settings s = read({{"XDG_CACHE_HOME", "relative"}, {"HOME", "/home/u"}});
  EXPECT_EQ(s.cache_path.value, (std::vector<std::string>{"/home/u/.cache/convjit"}));
  for (const auto& dir : read({}).cache_path.value) EXPECT_NE(dir.rfind("/tmp", 0), 0u) << dir;
}

TEST(Settings, PolicyAndFiles) {
  EXPECT_EQ(read({{"CONVJIT_POLICY", "reference"}}).policy.value, Policy::reference);
  std::vector<std::string> warnings;
  EXPECT_EQ(read({{"CONVJIT_POLICY", "fastest"}}, &warnings).policy.value, Policy::automatic);
  EXPECT_NE(warnings.at(0).find("CONVJIT_POLICY='fastest' is not one of"), std::string::npos);
  const Settings s = read({{"CONVJIT_LOG_FILE", "/x/log"}, {"CONVJIT_RECORD", "/x/rec"}});
  EXPECT_EQ(s.log_file.value, "/x/log");
  EXPECT_EQ(s.record_file.value, "/x/rec");
  warnings.clear();
  EXPECT_EQ(read({{"CONVJIT_RECORD", ""}}, &warnings).record_file.value, "");
  EXPECT_EQ(warnings.size(), 1u);
}

TEST(Settings, Tf32IsOffUnlessExplicitlyAllowed) {
  EXPECT_FALSE(read({}).allow_tf32.value);
  const Settings on = read({{"CONVJIT_ALLOW_TF32", "1"}});
  EXPECT_TRUE(on.allow_tf32.value);
  EXPECT_EQ(on.allow_tf32.origin, "CONVJIT_ALLOW_TF32");
  std::vector<std::string> warnings;
  EXPECT_FALSE(read({{"CONVJIT_ALLOW_TF32", "yes"}}, &warnings).allow_tf32.value);
  EXPECT_NE(warnings.at(0).find("CONVJIT_ALLOW_TF32='yes' is not 0 or 1"), std::string::npos);
  auto& store = SettingsStore::instance();
  const bool before = store.snapshot()->allow_tf32.value;
  ASSERT_EQ(convjit_set_allow_tf32(1), CONVJIT_STATUS_SUCCESS);
  EXPECT_TRUE(store.snapshot()->allow_tf32.value);
  EXPECT_EQ(store.snapshot()->allow_tf32.origin, "convjit_set_allow_tf32");
  EXPECT_EQ(convjit_set_allow_tf32(2), CONVJIT_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(convjit_last_error_message()).find("allow_tf32 2 is not 0 or 1"),
            std::string::npos);
  ASSERT_EQ(convjit_set_allow_tf32(-1), CONVJIT_STATUS_SUCCESS);
  EXPECT_EQ(store.snapshot()->allow_tf32.value, before);
}

TEST(Settings, TheHopperConvsTmaStoreIsOnUnlessTurnedOff) {
  EXPECT_TRUE(read({}).wgmma_tma_store.value);
  const Settings off = read({{"CONVJIT_WGMMA_TMA_STORE", "0"}});
  EXPECT_FALSE(off.wgmma_tma_store.value);
  EXPECT_EQ(off.wgmma_tma_store.origin, "CONVJIT_WGMMA_TMA_STORE");
  std::vector<std::string> warnings;
  EXPECT_TRUE(read({{"CONVJIT_WGMMA_TMA_STORE", "off"}}, &warnings).wgmma_tma_store.value);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("is not 0 or 1; ignored (the Hopper conv stores by TMA)"),
            std::string::npos)
      << warnings[0];
}

TEST(Settings, TheHopperConvsStreamKIsOffUnlessTurnedOn) {
  EXPECT_FALSE(read({}).wgmma_stream_k.value);
  const Settings on = read({{"CONVJIT_WGMMA_STREAM_K", "1"}});
  EXPECT_TRUE(on.wgmma_stream_k.value);
  EXPECT_EQ(on.wgmma_stream_k.origin, "CONVJIT_WGMMA_STREAM_K");
  EXPECT_TRUE(on.wgmma_tma_store.value);
  std::vector<std::string> warnings;
  EXPECT_FALSE(read({{"CONVJIT_WGMMA_STREAM_K", "yes"}}, &warnings).wgmma_stream_k.value);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("ignored (the Hopper conv's ping-pong grids keep whole tiles)"),
            std::string::npos)
      << warnings[0];
}

TEST(Settings, TheHopperBwdfiltsClustersAddItsSlicesUnlessTurnedOff) {
  EXPECT_TRUE(read({}).wgmma_cluster_sums.value);
  const Settings off = read({{"CONVJIT_WGMMA_CLUSTER_SUMS", "0"}});
  EXPECT_FALSE(off.wgmma_cluster_sums.value);
  EXPECT_EQ(off.wgmma_cluster_sums.origin, "CONVJIT_WGMMA_CLUSTER_SUMS");
  std::vector<std::string> warnings;
  EXPECT_TRUE(read({{"CONVJIT_WGMMA_CLUSTER_SUMS", "no"}}, &warnings).wgmma_cluster_sums.value);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("ignored (the Hopper bwdfilt's clusters add its slices)"),
            std::string::npos)
      << warnings[0];
}

TEST(Settings, CudnnWorkspaceLimitIsWholeMibWithAOneGibDefault) {
  EXPECT_EQ(read({}).cudnn_workspace_limit_mib.value, 1024u);
  const Settings small = read({{"CONVJIT_CUDNN_WORKSPACE_LIMIT", "64"}});
  EXPECT_EQ(small.cudnn_workspace_limit_mib.value, 64u);
  EXPECT_EQ(small.cudnn_workspace_limit_mib.origin, "CONVJIT_CUDNN_WORKSPACE_LIMIT");
  EXPECT_EQ(read({{"CONVJIT_CUDNN_WORKSPACE_LIMIT", "0"}}).cudnn_workspace_limit_mib.value, 0u);
  for (const char* bad : {"", "1.5", "-1", "64M", "99999999999999999999"}) {
    std::vector<std::string> warnings;
    EXPECT_EQ(read({{"CONVJIT_CUDNN_WORKSPACE_LIMIT", bad}}, &warnings).cudnn_workspace_limit_mib.value,
              1024u)
        << bad;
    ASSERT_EQ(warnings.size(), 1u) << bad;
    EXPECT_NE(warnings[0].find("is not a whole number of MiB; ignored (the limit stays 1024 MiB)"),
              std::string::npos)
        << warnings[0];
  }
}

TEST(Settings, ApiSettersOverrideAndNullRestores) {
  auto& store = SettingsStore::instance();
  const auto before = store.snapshot();
  ASSERT_EQ(convjit_set_cache_path("/p1:/p2"), CONVJIT_STATUS_SUCCESS);
  ASSERT_EQ(convjit_set_verbose(2), CONVJIT_STATUS_SUCCESS);
  ASSERT_EQ(convjit_set_policy("reference"), CONVJIT_STATUS_SUCCESS);
  auto s = store.snapshot();
  EXPECT_EQ(s->cache_path.value, (std::vector<std::string>{"/p1", "/p2"}));
  EXPECT_EQ(s->cache_path.source, SettingSource::api);
  EXPECT_EQ(store.verbose_level(), 2);
  EXPECT_EQ(store.policy(), Policy::reference);
  EXPECT_EQ(convjit_set_policy("fastest"), CONVJIT_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(convjit_set_verbose(3), CONVJIT_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(convjit_set_cache_path(":"), CONVJIT_STATUS_INVALID_ARGUMENT);
  ASSERT_EQ(convjit_set_cache_path(nullptr), CONVJIT_STATUS_SUCCESS);
  ASSERT_EQ(convjit_set_verbose(-1), CONVJIT_STATUS_SUCCESS);
  ASSERT_EQ(convjit_set_policy(nullptr), CONVJIT_STATUS_SUCCESS);
  s = store.snapshot();
  EXPECT_EQ(s->cache_path.value, before->cache_path.value);
  EXPECT_EQ(store.verbose_level(), before->verbose.value);
  EXPECT_EQ(store.policy(), before->policy.value);
}

// A 1D convolution through the C API: x = 1..4, w = (1, 1), so y = (3, 5, 7).
struct TinyConv {
  convjit_tensor_desc_t x{}, w{}, y{};
  convjit_conv_params_t p{};
  float xv[4] = {1, 2, 3, 4}, wv[2] = {1, 1}, yv[3] = {};

  explicit TinyConv(convjit_dtype_t dtype = CONVJIT_DTYPE_F32) {
    const int64_t xd[3] = {1, 1, 4}, wd[3] = {1, 1, 2}, yd[3] = {1, 1, 3};
    EXPECT_EQ(convjit_tensor_desc_init(&x, dtype, 3, xd, CONVJIT_LAYOUT_NCHW), 0);
    EXPECT_EQ(convjit_tensor_desc_init(&w, dtype, 3, wd, CONVJIT_LAYOUT_NCHW), 0);
    EXPECT_EQ(convjit_tensor_desc_init(&y, dtype, 3, yd, CONVJIT_LAYOUT_NCHW), 0);
    EXPECT_EQ(convjit_conv_params_init(&p, 1), 0);
  }
  convjit_status_t forward() {
    std::fill(yv, yv + 3, 0.0f);
    return convjit_conv_forward(&p, &x, xv, &w, wv, &y, yv, 1, 0, nullptr);
  }
};

TEST(Settings, ReferencePolicyRestrictsTheChain) {
  // With the reference policy the tuned library is never probed; with a
  // policy whose backends cannot serve the host, calls fail clearly.
  ASSERT_EQ(convjit_set_policy("jit"), CONVJIT_STATUS_SUCCESS);
  TinyConv conv;
  EXPECT_EQ(conv.forward(), CONVJIT_STATUS_NOT_AVAILABLE);
  EXPECT_NE(
      std::string(convjit_last_error_message()).find("jit: the JIT backend runs on CUDA devices"),
      std::string::npos)
      << convjit_last_error_message();
  ASSERT_EQ(convjit_set_policy("cudnn"), CONVJIT_STATUS_SUCCESS);
  EXPECT_EQ(conv.forward(), CONVJIT_STATUS_NOT_AVAILABLE);
  EXPECT_NE(std::string(convjit_last_error_message())
                .find("cudnn: cuDNN serves CUDA devices; the host uses oneDNN and the reference"),
            std::string::npos)
      << convjit_last_error_message();
  ASSERT_EQ(convjit_set_policy("reference"), CONVJIT_STATUS_SUCCESS);
  EXPECT_EQ(conv.forward(), CONVJIT_STATUS_SUCCESS);
  EXPECT_STREQ(convjit_last_backend(), "reference");
  EXPECT_EQ(conv.yv[2], 7.0f);
  ASSERT_EQ(convjit_set_policy(nullptr), CONVJIT_STATUS_SUCCESS);
}

TEST(Settings, EmulatePolicyRunsHostCallsThroughTheKernelEmulatorOnly) {
  TinyConv conv;
  ASSERT_EQ(conv.forward(), CONVJIT_STATUS_SUCCESS);
  EXPECT_STRNE(convjit_last_backend(), "emulator");  // auto never picks the emulator
  ASSERT_EQ(convjit_set_policy("emulate"), CONVJIT_STATUS_SUCCESS);
  ASSERT_EQ(conv.forward(), CONVJIT_STATUS_SUCCESS) << convjit_last_error_message();
  EXPECT_STREQ(convjit_last_backend(), "emulator");
  EXPECT_EQ(conv.yv[0], 3.0f);
  EXPECT_EQ(conv.yv[2], 7.0f);
  // f64 has no kernel template: the emulator declines with the reason.
  TinyConv f64(CONVJIT_DTYPE_F64);  // the descriptor is f64; the values are not read
  EXPECT_EQ(f64.forward(), CONVJIT_STATUS_UNSUPPORTED);
  EXPECT_NE(std::string(convjit_last_error_message()).find("emulator: f64 is served by the host"),
            std::string::npos)
      << convjit_last_error_message();
  ASSERT_EQ(convjit_set_policy(nullptr), CONVJIT_STATUS_SUCCESS);
}

}  // namespace
}  // namespace convjit
