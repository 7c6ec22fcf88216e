// Finding NVRTC and cuDNN (cuda/library_search.hpp): the order of the places,
// the explicit settings, and every way a file can be wrong, with fake
// libraries built beside this test (FAKE_LIBRARY_DIR) and directories laid
// out like a CUDA toolkit and like NVIDIA's Python wheels.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "dispatcher/backends/cudnn/cudnn_library.hpp"
#include "dispatcher/backends/jit/nvrtc_library.hpp"
#include "dispatcher/libraries/library_search.hpp"
#include "support/temp_directory.hpp"

namespace convjit {
namespace {

namespace fs = std::filesystem;
using test::TempDirectory;

// The environment library_search_places reads, in place of the process's.
std::map<std::string, std::string>& fake_environment() {
  static std::map<std::string, std::string> variables;
  return variables;
}
const char* fake_getenv(const char* name) {
  const auto it = fake_environment().find(name);
  return it == fake_environment().end() ? nullptr : it->second.c_str();
}

class LibrarySearch : public ::testing::Test {
 protected:
  void SetUp() override { fake_environment().clear(); }
  void TearDown() override { fake_environment().clear(); }

  // `name` in `dir` (created), a copy of the fake library `fake`.
  static fs::path place_fake(const fs::path& dir, const std::string& name, const std::string& fake) {
    fs::create_directories(dir);
    fs::copy_file(fs::path(FAKE_LIBRARY_DIR) / fake, dir / name,
                  fs::copy_options::overwrite_existing);
    return dir / name;
  }

  static std::vector<SearchPlace> places(const LibrarySpec& spec) {
    return library_search_places(spec, fake_getenv);
  }

  static std::string contains(const std::string& text, const std::string& part) {
    return text.find(part) == std::string::npos ? "'" + part + "' missing from: " + text : "";
  }

  TempDirectory dir_{"convjit-library-search"};
};

TEST_F(LibrarySearch, PlacesComeInOrderLoaderToolkitThenWheelsOfEachEnvironment) {
  const fs::path toolkit = dir_.path() / "toolkit", venv = dir_.path() / "venv",
                 conda = dir_.path() / "conda";
  const fs::path toolkit_file = place_fake(toolkit / "lib64", "libnvrtc.so.12", "libfake_nvrtc_13_0.so");
  // cu12 and cu13 wheel layouts side by side: the preferred file name first.
  const fs::path site = venv / "lib" / "python3.12" / "site-packages" / "nvidia";
  const fs::path cu12 = place_fake(site / "cuda_nvrtc" / "lib", "libnvrtc.so.12", "libfake_nvrtc_13_0.so");
  const fs::path cu13 = place_fake(site / "cu13" / "lib", "libnvrtc.so.13", "libfake_nvrtc_13_0.so");
  const fs::path conda_file =
      place_fake(conda / "lib" / "python3.11" / "site-packages" / "nvidia" / "cuda_nvrtc" / "lib",
                 "libnvrtc.so.12", "libfake_nvrtc_13_0.so");
  fake_environment() = {{"CUDA_HOME", toolkit.string()},
                        {"VIRTUAL_ENV", venv.string()},
                        {"CONDA_PREFIX", conda.string()}};

  const std::vector<SearchPlace> found = places(NvrtcLibrary::spec());
  ASSERT_EQ(found.size(), 5u);
  EXPECT_EQ(found[0].files, (std::vector<std::string>{"libnvrtc.so.13", "libnvrtc.so.12"}));
  EXPECT_EQ(contains(found[0].where, "loader's default search"), "");
  EXPECT_EQ(found[1].where, "CUDA_HOME=" + toolkit.string() + " (lib64, lib)");
  EXPECT_EQ(found[1].files, (std::vector<std::string>{toolkit_file.string()}));
  EXPECT_EQ(contains(found[2].where, "/usr/local/cuda"), "");
  EXPECT_EQ(contains(found[3].where, "VIRTUAL_ENV=" + venv.string()), "");
  EXPECT_EQ(found[3].files, (std::vector<std::string>{cu13.string(), cu12.string()}));
  EXPECT_EQ(contains(found[4].where, "CONDA_PREFIX=" + conda.string()), "");
  EXPECT_EQ(found[4].files, (std::vector<std::string>{conda_file.string()}));
  for (const SearchPlace& place : found) EXPECT_FALSE(place.explicit_setting);
}

// A program (nvdisasm) in the same places: PATH for the loader's search,
// bin/ for lib*/, then the extra Python environments after the active ones.
TEST_F(LibrarySearch, AProgramIsFoundOnPathThenInBinFoldersThenInExtraEnvironments) {
  const fs::path on_path = dir_.path() / "path", toolkit = dir_.path() / "toolkit",
                 venv = dir_.path() / "venv", build_env = dir_.path() / "build-env";
  const auto place_program = [](const fs::path& dir) {
    fs::create_directories(dir);
    std::ofstream(dir / "nvdisasm") << "#!/bin/sh\n";
    return (dir / "nvdisasm").string();
  };
  const std::string path_file = place_program(on_path), toolkit_file = place_program(toolkit / "bin"),
                    venv_file = place_program(venv / "lib" / "python3.11" / "site-packages" /
                                              "nvidia" / "cu13" / "bin"),
                    build_file = place_program(build_env / "lib" / "python3.11" / "site-packages" /
                                               "nvidia" / "cu13" / "bin");
  fake_environment() = {{"PATH", "/nonexistent::" + on_path.string()},
                        {"CUDA_HOME", toolkit.string()},
                        {"VIRTUAL_ENV", venv.string()}};
  LibrarySpec spec{"nvdisasm", "CONVJIT_NVDISASM", {"nvdisasm"}, "nvdisasm"};
  spec.executable = true;
  spec.python_environments = {build_env.string()};
  const std::vector<SearchPlace> found = places(spec);
  ASSERT_EQ(found.size(), 5u);
  EXPECT_EQ(found[0].where, "PATH");
  EXPECT_EQ(found[0].files, (std::vector<std::string>{path_file}));
  EXPECT_EQ(found[1].where, "CUDA_HOME=" + toolkit.string() + " (bin)");
  EXPECT_EQ(found[1].files, (std::vector<std::string>{toolkit_file}));
  EXPECT_EQ(contains(found[2].where, "/usr/local/cuda (bin)"), "");
  EXPECT_EQ(contains(found[3].where, "site-packages/nvidia/*/bin*"), "");
  EXPECT_EQ(found[3].files, (std::vector<std::string>{venv_file}));
  EXPECT_EQ(found[4].where, build_env.string() + " (site-packages/nvidia/*/bin*)");
  EXPECT_EQ(found[4].files, (std::vector<std::string>{build_file}));
}

TEST_F(LibrarySearch, AToolkitNamedTwiceIsSearchedOnce) {
  fake_environment() = {{"CUDA_HOME", "/usr/local/cuda"}, {"CUDA_PATH", "/usr/local/cuda/"}};
  const std::vector<SearchPlace> found = places(NvrtcLibrary::spec());
  ASSERT_EQ(found.size(), 2u);  // the loader, then the one toolkit
  EXPECT_EQ(found[1].where, "CUDA_HOME=/usr/local/cuda (lib64, lib)");
}

TEST_F(LibrarySearch, TheExplicitSettingIsTheOnlyPlace) {
  const fs::path file = place_fake(dir_.path(), "libnvrtc.so.13", "libfake_nvrtc_13_0.so");
  fake_environment() = {{"CONVJIT_NVRTC_LIBRARY", dir_.string()}, {"CUDA_HOME", "/usr/local/cuda"}};
  std::vector<SearchPlace> found = places(NvrtcLibrary::spec());
  ASSERT_EQ(found.size(), 1u);
  EXPECT_TRUE(found[0].explicit_setting);
  EXPECT_EQ(found[0].where, "CONVJIT_NVRTC_LIBRARY=" + dir_.string());
  EXPECT_EQ(found[0].files, (std::vector<std::string>{file.string()}));  // a directory: its file

  fake_environment()["CONVJIT_NVRTC_LIBRARY"] = file.string();  // a file: itself
  found = places(NvrtcLibrary::spec());
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].files, (std::vector<std::string>{file.string()}));
}

// Each wrong file named by the setting: a status naming the file, why, and
// the fix; never a crash, never a silent substitute from elsewhere.
TEST_F(LibrarySearch, AWrongFileNamedByTheSettingIsAClearErrorNamingItAndTheFix) {
  const fs::path text = dir_.path() / "libnvrtc.so.13.txt";
  std::ofstream(text) << std::string(256, '#') << "\nnot a library, but long enough to have a header\n";
  const fs::path empty = dir_.path() / "empty";
  fs::create_directories(empty);
  const fs::path old_major =
      place_fake(dir_.path() / "old", "libnvrtc.so.11.2", "libfake_nvrtc_11_8.so");
  const fs::path old_minor =
      place_fake(dir_.path() / "old", "libnvrtc.so.12", "libfake_nvrtc_12_4.so");
  const fs::path incomplete =
      place_fake(dir_.path() / "incomplete", "libnvrtc.so.13", "libfake_nvrtc_13_0.so");
  const std::map<std::string, std::string> cases = {
      {(dir_.path() / "missing.so").string(), "No such file"},
      {text.string(), "invalid ELF header"},
      {empty.string(), "none of libnvrtc.so.13, libnvrtc.so.12 there"},
      {old_major.string(), "it is NVRTC 11.8; convjit needs NVRTC 12.8 or later"},
      {old_minor.string(), "it is NVRTC 12.4; convjit needs NVRTC 12.8 or later"},
      {incomplete.string(), "it lacks nvrtcGetErrorString"},
      {"libm.so.6", "not NVRTC: it lacks nvrtcVersion"},
  };
  for (const auto& [value, why] : cases) {
    fake_environment() = {{"CONVJIT_NVRTC_LIBRARY", value}};
    const NvrtcLibrary nvrtc(places(NvrtcLibrary::spec()));
    const std::string& message = nvrtc.available().message();
    EXPECT_EQ(nvrtc.available().code(), CONVJIT_STATUS_NOT_AVAILABLE) << value;
    EXPECT_EQ(contains(message, "CONVJIT_NVRTC_LIBRARY=" + value + ": "), "");
    EXPECT_EQ(contains(message, why), "");
    EXPECT_EQ(contains(message, "point CONVJIT_NVRTC_LIBRARY at libnvrtc.so.13"), "");
    EXPECT_TRUE(nvrtc.version().empty()) << value;
    EXPECT_EQ(nvrtc.api().create_program, nullptr) << value;
  }
}

TEST_F(LibrarySearch, ARejectedLibraryIsPassedOverForTheNextPlace) {
  const NvrtcLibrary& real = NvrtcLibrary::instance();
  if (!real.available().is_ok()) GTEST_SKIP() << "no NVRTC here: " << real.available().message();
  // A wheel directory with a too-old NVRTC first, then one holding the real one.
  const fs::path old_file =
      place_fake(dir_.path() / "old", "libnvrtc.so.13", "libfake_nvrtc_11_8.so");
  const fs::path wheel = dir_.path() / "wheel";
  fs::create_directories(wheel);
  fs::create_symlink(real.origin().path, wheel / "libnvrtc.so.13");
  const std::vector<SearchPlace> search{{"old", {old_file.string()}},
                                        {"empty", {}},
                                        {"wheel", {(wheel / "libnvrtc.so.13").string()}}};
  const NvrtcLibrary nvrtc(search);
  ASSERT_TRUE(nvrtc.available().is_ok()) << nvrtc.available().message();
  EXPECT_EQ(nvrtc.origin().path, (wheel / "libnvrtc.so.13").string());
  EXPECT_EQ(nvrtc.origin().where, "wheel");
  ASSERT_EQ(nvrtc.origin().looked.size(), 2u);
  EXPECT_EQ(contains(nvrtc.origin().looked[0], "old: " + old_file.string() + ": it is NVRTC 11.8"),
            "");
  EXPECT_EQ(nvrtc.origin().looked[1], "empty: none of libnvrtc.so.13, libnvrtc.so.12 there");
  EXPECT_EQ(nvrtc.version(), real.version());
  EXPECT_NE(nvrtc.api().compile_program, nullptr);
}

TEST_F(LibrarySearch, NothingFoundListsEveryPlaceAndTheFix) {
  const std::vector<SearchPlace> search{
      {"the loader's default search", {"libnvrtc_hidden_for_this_test.so.13"}},
      {"CUDA_HOME=/nowhere (lib64, lib)", {}}};
  const NvrtcLibrary nvrtc(search);
  const std::string& message = nvrtc.available().message();
  EXPECT_EQ(contains(message, "NVRTC not found (looked in: the loader's default search: "
                              "libnvrtc_hidden_for_this_test.so.13: cannot open shared object"),
            "");
  EXPECT_EQ(contains(message, "; CUDA_HOME=/nowhere (lib64, lib): none of libnvrtc.so.13"), "");
  EXPECT_EQ(contains(message, "); install NVRTC 12.8 or later, major 12 or 13, or set "
                              "CONVJIT_NVRTC_LIBRARY to the library file or the directory"),
            "");
  EXPECT_EQ(nvrtc.origin().looked.size(), 2u);
}

TEST_F(LibrarySearch, TheToolkitsNvrtcLoadsWithoutAGpuAndSaysWhereFrom) {
  const NvrtcLibrary& nvrtc = NvrtcLibrary::instance();
  if (!nvrtc.available().is_ok()) GTEST_SKIP() << "no NVRTC here: " << nvrtc.available().message();
  EXPECT_EQ(nvrtc.version().rfind("13.", 0), 0u) << nvrtc.version();
  EXPECT_TRUE(fs::path(nvrtc.origin().path).is_absolute()) << nvrtc.origin().path;
  EXPECT_TRUE(fs::exists(nvrtc.origin().path));
  EXPECT_FALSE(nvrtc.origin().where.empty());
}

TEST_F(LibrarySearch, CudnnOfAnotherMajorOrNotCudnnAtAllIsRefusedByName) {
  // cuDNN 8 encodes its version as 8907 for 8.9.7, cuDNN 9 as 90100 for 9.1.0.
  const fs::path eight = place_fake(dir_.path(), "libcudnn.so.9", "libfake_cudnn_8.so");
  fake_environment() = {{"CONVJIT_CUDNN_LIBRARY", dir_.string()}};
  const CudnnLibrary old(places(CudnnLibrary::spec()));
  EXPECT_EQ(contains(old.available().message(),
                     "CONVJIT_CUDNN_LIBRARY=" + dir_.string() + ": " + eight.string() +
                         ": it is cuDNN 8.9; convjit needs cuDNN 9; point CONVJIT_CUDNN_LIBRARY "
                         "at libcudnn.so.9 (cuDNN 9)"),
            "");
  fake_environment() = {{"CONVJIT_CUDNN_LIBRARY", "libm.so.6"}};
  const CudnnLibrary wrong(places(CudnnLibrary::spec()));
  EXPECT_EQ(contains(wrong.available().message(), "not cuDNN: it lacks cudnnGetVersion"), "");
  EXPECT_TRUE(wrong.version().empty());
}

TEST_F(LibrarySearch, CudnnNotFoundAnywhereSaysWhereItLooked) {
  const std::vector<SearchPlace> search{
      {"the loader's default search", {"libcudnn_hidden_for_this_test.so.9"}}};
  const CudnnLibrary missing(search);
  EXPECT_EQ(missing.available().code(), CONVJIT_STATUS_NOT_AVAILABLE);
  EXPECT_EQ(contains(missing.available().message(), "cuDNN not found (looked in: the loader's"), "");
  EXPECT_EQ(contains(missing.available().message(), "install cuDNN 9, or set CONVJIT_CUDNN_LIBRARY"),
            "");
}

TEST_F(LibrarySearch, TheToolkitsCudnnLoadsWithoutAGpu) {
  const CudnnLibrary& cudnn = CudnnLibrary::instance();
  if (!cudnn.available().is_ok())
    GTEST_SKIP() << "cuDNN is not installed here: " << cudnn.available().message();
  EXPECT_EQ(cudnn.version().rfind("9.", 0), 0u) << cudnn.version();
  EXPECT_TRUE(fs::exists(cudnn.origin().path)) << cudnn.origin().path;
}

}  // namespace
}  // namespace convjit
