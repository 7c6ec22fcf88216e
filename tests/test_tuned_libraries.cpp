// Tuned lib<descriptor>.so libraries in both ABIs: probing order, argument
// passing, workspace, every rejection, rescan, single flight and unloading
// at exit.  The libraries (tests/tuned_libraries/) write a recognisable
// record into their output instead of computing the op.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "convjit/convjit.hpp"
#include "dispatcher/backends/reference/reference_backend.hpp"
#include "dispatcher/backends/tuned/tuned_library_backend.hpp"
#include "dispatcher/cuda/cuda_driver.hpp"
#include "dispatcher/descriptor/descriptor_builder.hpp"
#include "dispatcher/descriptor/descriptor_flags.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "dispatcher/dispatcher.hpp"
#include "support/host_backend.hpp"
#include "support/host_device.hpp"

namespace convjit {
namespace {

namespace fs = std::filesystem;

using test::kHost;
constexpr const char* kFwd = CONVJIT_TEST_FWD_NAME;
constexpr const char* kFwdSymbolic = CONVJIT_TEST_FWD_SYMBOLIC_NAME;

convjit_tensor_desc_t contiguous(std::initializer_list<std::int64_t> dims) {
  convjit_tensor_desc_t t{};
  std::vector<std::int64_t> d(dims);
  EXPECT_EQ(convjit_tensor_desc_init(&t, CONVJIT_DTYPE_F32, static_cast<int>(d.size()), d.data(),
                                     CONVJIT_LAYOUT_NCHW),
            CONVJIT_STATUS_SUCCESS);
  return t;
}

std::vector<std::unique_ptr<Backend>> default_chain() {
  std::vector<std::unique_ptr<Backend>> chain;
  chain.push_back(std::make_unique<TunedLibraryBackend>());
  chain.push_back(std::make_unique<ReferenceBackend>());
  return chain;
}

class TunedLibraries : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "convjit-tuned-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
    cache_ = make_directory("cache");
    ASSERT_EQ(convjit_set_cache_path(cache_.c_str()), CONVJIT_STATUS_SUCCESS);
    x_.assign(100, 1.0f), w_.assign(54, 2.0f), dy_.assign(150, 3.0f), out_.assign(150, 0.0f);
  }
  void TearDown() override {
    dispatcher_.reset();
    (void)convjit_set_cache_path(nullptr);
    fs::remove_all(root_);
  }

  std::string make_directory(const std::string& name, fs::perms perms = fs::perms::owner_all) {
    const fs::path dir = root_ / name;
    fs::create_directories(dir);
    fs::permissions(dir, perms);
    return dir.string();
  }

  // Copies build/tests/tuned_libraries/lib<library>.so to <directory>/lib<name>.so.
  std::string install(const std::string& library, const std::string& name,
                      std::string directory = "") {
    if (directory.empty()) directory = cache_;
    const fs::path target = fs::path(directory) / ("lib" + name + ".so");
    fs::copy_file(fs::path(CONVJIT_TEST_LIBRARY_DIR) / ("lib" + library + ".so"), target,
                  fs::copy_options::overwrite_existing);
    fs::permissions(target, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                fs::perms::others_read | fs::perms::others_exec);
    return target.string();
  }

  OpDescriptor descriptor(Direction direction) const {
    convjit_conv_params_t p{};
    (void)convjit_conv_params_init(&p, 2);
    p.pad_begin[0] = p.pad_begin[1] = p.pad_end[0] = p.pad_end[1] = 1;
    const auto x = contiguous({2, 2, 5, 5}), w = contiguous({3, 2, 3, 3}),
               y = contiguous({2, 3, 5, 5});
    return make_conv_descriptor(&p, direction, &x, &w, &y).value();
  }

  Status run(Direction direction, double alpha = 1, double beta = 0, void* workspace = nullptr,
             std::size_t workspace_bytes = 0) {
    ExecArgs args;
    args.alpha = alpha, args.beta = beta, args.workspace = workspace,
    args.workspace_bytes = workspace_bytes;
    if (direction == Direction::fwd) args.x = x_.data(), args.w = w_.data();
    if (direction == Direction::bwddata) args.dy = dy_.data(), args.w = w_.data();
    if (direction == Direction::bwdfilt) args.x = x_.data(), args.dy = dy_.data();
    args.out = out_.data();
    return dispatcher_->execute(descriptor(direction), kHost, args, &backend_);
  }

  ProbeReport probe(Direction direction = Direction::fwd) const {
    return probe_tuned_libraries(descriptor(direction), kHost, {cache_}, ProbeMode::load);
  }

  // Runs fwd and expects the reference to have served it, the tuned library
  // rejected with `reason`.
  void expect_rejected(const std::string& reason) {
    const ProbeReport report = probe();
    EXPECT_EQ(report.kernel, nullptr);
    EXPECT_NE(report.summary().find(reason), std::string::npos) << report.summary();
    ASSERT_TRUE(run(Direction::fwd).is_ok());
    EXPECT_EQ(backend_, "reference");
    EXPECT_EQ(out_[0], 2.0f * 2 * 4);  // a real conv: corner output sees 2x2 taps per channel
  }

  fs::path root_;
  std::string cache_;
  std::unique_ptr<Dispatcher> dispatcher_ = std::make_unique<Dispatcher>(default_chain());
  std::vector<float> x_, w_, dy_, out_;
  std::string_view backend_;
};

TEST_F(TunedLibraries, WithoutALibraryTheReferenceServes) {
  ASSERT_TRUE(run(Direction::fwd).is_ok());
  EXPECT_EQ(backend_, "reference");
  const ProbeReport report = probe();
  ASSERT_EQ(report.steps.size(), 2u);
  EXPECT_EQ(report.steps[0].candidate.path, cache_ + "/lib" + kFwd + ".so");
  EXPECT_EQ(report.steps[1].candidate.path, cache_ + "/lib" + kFwdSymbolic + ".so");
  EXPECT_EQ(report.steps[0].outcome, "not found");
}

TEST_F(TunedLibraries, DaceConcreteLibraryGetsPointersInDacesOrderAndAlphaBeta) {
  install("dace_fwd", kFwd);
  const Status s = run(Direction::fwd, 0.5, 0.25);
  ASSERT_TRUE(s.is_ok()) << s.message();
  EXPECT_EQ(backend_, "tuned-library");
  EXPECT_EQ(out_[0], 1);      // marker
  EXPECT_EQ(out_[1], 0.5f);   // alpha
  EXPECT_EQ(out_[2], 0.25f);  // beta
  EXPECT_EQ(out_[3], -1);     // concrete: no B
  EXPECT_EQ(out_[5], 2);      // p0 = w
  EXPECT_EQ(out_[6], 1);      // p1 = x, p2 = y (written)
}

TEST_F(TunedLibraries, DacePointerOrderForBackwardDirections) {
  install("dace_bwddata", descriptor_name(descriptor(Direction::bwddata)));
  install("dace_bwdfilt", descriptor_name(descriptor(Direction::bwdfilt)));
  ASSERT_TRUE(run(Direction::bwddata).is_ok());
  EXPECT_EQ(backend_, "tuned-library");
  EXPECT_EQ(out_[0], 3);
  EXPECT_EQ(out_[5], 2);  // p0 = w, p1 = dx (written)
  EXPECT_EQ(out_[6], 3);  // p2 = dy
  ASSERT_TRUE(run(Direction::bwdfilt).is_ok());
  EXPECT_EQ(out_[0], 4);  // p0 = dw (written)
  EXPECT_EQ(out_[5], 1);  // p1 = x
  EXPECT_EQ(out_[6], 3);  // p2 = dy
}

TEST_F(TunedLibraries, SymbolicLibraryReceivesTheBatchInInitAndProgram) {
  install("dace_fwd_symbolic", kFwdSymbolic);
  ASSERT_TRUE(run(Direction::fwd).is_ok());
  EXPECT_EQ(out_[0], 2);
  EXPECT_EQ(out_[3], 2);  // B == batch 2
}

TEST_F(TunedLibraries, ConcreteBeatsSymbolic) {
  install("dace_fwd_symbolic", kFwdSymbolic);
  install("dace_fwd", kFwd);
  ASSERT_TRUE(run(Direction::fwd).is_ok());
  EXPECT_EQ(out_[0], 1);
}

TEST_F(TunedLibraries, SearchPathDirectoriesAreProbedInOrder) {
  const std::string first = make_directory("first"), second = make_directory("second");
  install("dace_fwd", kFwd, second);
  ASSERT_EQ(convjit_set_cache_path((first + ":" + second).c_str()), CONVJIT_STATUS_SUCCESS);
  ASSERT_TRUE(run(Direction::fwd).is_ok());
  EXPECT_EQ(out_[0], 1);
  // A library in an earlier directory wins, even under the symbolic name.
  install("dace_fwd_symbolic", kFwdSymbolic, first);
  dispatcher_ = std::make_unique<Dispatcher>(default_chain());
  ASSERT_TRUE(run(Direction::fwd).is_ok());
  EXPECT_EQ(out_[0], 2);
}

TEST_F(TunedLibraries, DaceWorkspaceIsSetBeforeTheProgramAndChecked) {
  install("dace_fwd_workspace", kFwd);
  ASSERT_TRUE(run(Direction::fwd).is_ok());
  EXPECT_EQ(out_[0], 5);
  EXPECT_EQ(out_[4], 1);  // dispatcher-owned workspace was set and writable
  std::vector<std::byte> small(16), enough(64);
  out_[4] = 0;
  const Status too_small = run(Direction::fwd, 1, 0, small.data(), small.size());
  EXPECT_EQ(too_small.code(), CONVJIT_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(too_small.message().find("workspace of 16 bytes is smaller than the 64 bytes"),
            std::string::npos)
      << too_small.message();
  EXPECT_EQ(out_[4], 0);  // not run
  ASSERT_TRUE(run(Direction::fwd, 1, 0, enough.data(), enough.size()).is_ok());
  EXPECT_EQ(out_[4], 1);
  EXPECT_EQ(enough[0], std::byte{0x5a});  // the caller's memory was the one used
}

TEST_F(TunedLibraries, SymbolicDaceWorkspaceTakesTheBatch) {
  install("dace_fwd_symbolic_workspace", kFwdSymbolic);
  ASSERT_TRUE(run(Direction::fwd).is_ok());
  EXPECT_EQ(out_[0], 6);
  EXPECT_EQ(out_[3], 2);
  EXPECT_EQ(out_[4], 1);
}

TEST_F(TunedLibraries, ConvjitAbiLibraryGetsNamedPointersBatchAndWorkspace) {
  install("abi_fwd", kFwd);
  ASSERT_TRUE(run(Direction::fwd, 2.0, 0.5).is_ok());
  EXPECT_EQ(backend_, "tuned-library");
  EXPECT_EQ(out_[0], 10);
  EXPECT_EQ(out_[1], 2.0f);
  EXPECT_EQ(out_[2], 0.5f);
  EXPECT_EQ(out_[3], 2);   // batch
  EXPECT_EQ(out_[5], 1);   // x
  EXPECT_EQ(out_[6], 2);   // w
  EXPECT_EQ(out_[7], -1);  // no dy for fwd
}

TEST_F(TunedLibraries, ConvjitAbiSymbolicAndWorkspaceVariants) {
  install("abi_fwd_symbolic", kFwdSymbolic);
  ASSERT_TRUE(run(Direction::fwd).is_ok());
  EXPECT_EQ(out_[0], 11);
  EXPECT_EQ(out_[3], 2);
  fs::remove(cache_ + "/lib" + kFwdSymbolic + ".so");
  install("abi_fwd_workspace", kFwd);
  dispatcher_ = std::make_unique<Dispatcher>(default_chain());
  ASSERT_TRUE(run(Direction::fwd).is_ok());
  EXPECT_EQ(out_[0], 12);
  EXPECT_EQ(out_[4], 1);
}

TEST_F(TunedLibraries, RejectsAMissingRequiredSymbol) {
  install("dace_without_exit", kFwd);
  expect_rejected("rejected (DaCe ABI): missing required DaCe symbol __dace_exit_conv");
}

TEST_F(TunedLibraries, RejectsAWrongAbiVersion) {
  install("abi_wrong_version", kFwd);
  expect_rejected("convjit kernel ABI version 3, but this convjit speaks 1 to 2");
}

// Version 1 libraries keep loading: they see the version 2 arguments' v1
// prefix, unchanged.
TEST_F(TunedLibraries, LoadsAVersion1Library) {
  install("abi_v1_fwd", kFwd);
  ASSERT_TRUE(run(Direction::fwd, 0.5, 0.0).is_ok());
  EXPECT_EQ(backend_, "tuned-library");
  EXPECT_EQ(out_[0], 13);
  EXPECT_EQ(out_[1], 0.5f);
  EXPECT_EQ(out_[5], 1);  // x
}

// A batchnorm library speaks version 2 and gets its per-channel operands;
// a version 1 one, which could not, is rejected with the reason.  A resize
// needs nothing beyond version 1's slots.
TEST_F(TunedLibraries, BatchNormLibrariesTakeTheirOperandsInVersion2AndResizesLoadInAny) {
  const auto x = contiguous({2, 3, 4, 4});
  const BatchNormParams params;
  const OpDescriptor bn =
      make_batchnorm_descriptor(&params, Direction::fwd, kNormScale | kNormShift, &x, &x).value();
  ASSERT_EQ(descriptor_name(bn), CONVJIT_TEST_BATCHNORM_NAME);
  std::vector<float> bx(96, 1.0f), by(96, 0.0f), scale(3, 0.75f), shift(3, 0.0f), mean(3, 0.0f),
      invstd(3, 0.0f);
  ExecArgs args;
  args.x = bx.data(), args.out = by.data();
  args.norm.scale = scale.data(), args.norm.shift = shift.data();
  args.norm.mean = mean.data(), args.norm.invstd = invstd.data(), args.norm.momentum = 0.25;
  install("abi_batchnorm_v1", CONVJIT_TEST_BATCHNORM_NAME);
  const ProbeReport v1 = probe_tuned_libraries(bn, kHost, {cache_}, ProbeMode::load);
  EXPECT_EQ(v1.kernel, nullptr);
  EXPECT_NE(v1.summary().find("a batchnorm library must declare version 2"), std::string::npos)
      << v1.summary();
  install("abi_batchnorm", CONVJIT_TEST_BATCHNORM_NAME);
  dispatcher_ = std::make_unique<Dispatcher>(default_chain());
  ASSERT_TRUE(dispatcher_->execute(bn, kHost, args, &backend_).is_ok());
  EXPECT_EQ(backend_, "tuned-library");
  EXPECT_EQ(by[0], 14);
  EXPECT_EQ(by[8], 1);      // norm came
  EXPECT_EQ(by[9], 0.25f);  // momentum
  EXPECT_EQ(by[10], 0.75f);  // scale
  EXPECT_EQ(mean[0], 14);    // the saved mean it wrote

  ResizeParams resize(2, CONVJIT_RESIZE_NEAREST);
  const auto y = contiguous({2, 3, 8, 8});
  const OpDescriptor up = make_resize_descriptor(&resize, Direction::fwd, &x, &y).value();
  ASSERT_EQ(descriptor_name(up), CONVJIT_TEST_RESIZE_NAME);
  install("abi_resize_v1", CONVJIT_TEST_RESIZE_NAME);
  std::vector<float> ry(384, 0.0f);
  ExecArgs resize_args;
  resize_args.x = bx.data(), resize_args.out = ry.data();
  ASSERT_TRUE(dispatcher_->execute(up, kHost, resize_args, &backend_).is_ok());
  EXPECT_EQ(backend_, "tuned-library");
  EXPECT_EQ(ry[0], 15);
  EXPECT_EQ(ry[5], 1);  // x
}

TEST_F(TunedLibraries, RejectsALibraryImplementingAnotherDescriptor) {
  install("abi_wrong_descriptor", kFwd);
  expect_rejected(std::string("implements '") + descriptor_name(descriptor(Direction::bwddata)) +
                  "', not the '" + kFwd);
}

TEST_F(TunedLibraries, RejectsALibraryForAnotherDevice) {
  install("abi_cuda_device", kFwd);
  expect_rejected("built for the CUDA device, not the host");
}

// A GPU DaCe library initialises in its device's context (the CUDA
// runtime it is built on works in the current one); where that context
// cannot be had, its init must not run at all, on whatever is current.
TEST_F(TunedLibraries, AGpuDaceLibraryNeverInitialisesOutsideItsDevicesContext) {
  if (CudaDriver::instance().available().is_ok()) GTEST_SKIP() << "this machine has a driver";
  install("dace_gpu", kFwd);
  const std::string log = (root_ / "events.log").string();
  ::setenv("CONVJIT_TEST_EXIT_LOG", log.c_str(), 1);
  const ProbeReport report = probe_tuned_libraries(descriptor(Direction::fwd),
                                                   {CONVJIT_DEVICE_CUDA, 0}, {cache_}, ProbeMode::load);
  ::unsetenv("CONVJIT_TEST_EXIT_LOG");
  EXPECT_EQ(report.kernel, nullptr);
  EXPECT_NE(report.summary().find("no CUDA driver"), std::string::npos) << report.summary();
  EXPECT_FALSE(fs::exists(log)) << "init ran without the device's context";
  // On the host the same library is declined as a GPU one, also before init.
  EXPECT_NE(probe().summary().find("a GPU DaCe library (exports __dace_gpu_set_all_streams)"),
            std::string::npos)
      << probe().summary();
}

TEST_F(TunedLibraries, RejectsAFileThatIsNoLibrary) {
  std::ofstream(cache_ + "/lib" + kFwd + ".so") << "this is not an ELF file";
  expect_rejected("dlopen failed: ");
}

TEST_F(TunedLibraries, RejectsAWorldWritableLibrary) {
  const std::string path = install("dace_fwd", kFwd);
  fs::permissions(path, fs::perms::others_write, fs::perm_options::add);
  expect_rejected("it is writable by other users (mode 0757); run 'chmod go-w " + path + "'");
}

TEST_F(TunedLibraries, RejectsAGroupWritableDirectory) {
  install("dace_fwd", kFwd);
  fs::permissions(cache_, fs::perms::group_write, fs::perm_options::add);
  expect_rejected("refusing to load from directory " + cache_);
}

TEST_F(TunedLibraries, SymlinksMayLeaveTheDirectoryOnlyForATrustedTarget) {
  const std::string unsafe = make_directory("unsafe", fs::perms::all);
  const std::string target = install("dace_fwd", "anything", unsafe);
  fs::permissions(unsafe, fs::perms::all);  // mkdir's umask may have dropped bits
  fs::create_symlink(target, cache_ + "/lib" + kFwd + ".so");
  expect_rejected("refusing to load from directory " + unsafe);

  const std::string safe = make_directory("safe");
  fs::remove(cache_ + "/lib" + kFwd + ".so");
  fs::create_symlink(install("dace_fwd", "anything", safe), cache_ + "/lib" + kFwd + ".so");
  dispatcher_ = std::make_unique<Dispatcher>(default_chain());
  ASSERT_TRUE(run(Direction::fwd).is_ok());
  EXPECT_EQ(backend_, "tuned-library");
}

// Issue 15, item 8: a loop is no dangling link; each says what it is.
TEST_F(TunedLibraries, ASymlinkLoopAndADanglingSymlinkAreToldApart) {
  const std::string link = cache_ + "/lib" + kFwd + ".so";
  fs::create_symlink(link, link);
  expect_rejected(link + " is a symlink loop; remove it or point it at a file");
  fs::remove(link);
  fs::create_symlink(cache_ + "/missing.so", link);
  expect_rejected(link + " is a dangling symlink (No such file or directory)");
}

TEST_F(TunedLibraries, AFailingKernelReportsExecutionFailure) {
  install("abi_failing", kFwd);
  const Status s = run(Direction::fwd);
  EXPECT_EQ(s.code(), CONVJIT_STATUS_EXECUTION_FAILED);
  EXPECT_NE(s.message().find("convjit_kernel_run returned 7"), std::string::npos) << s.message();
}

TEST_F(TunedLibraries, RescanFindsALibraryAddedLater) {
  ASSERT_TRUE(run(Direction::fwd).is_ok());
  EXPECT_EQ(backend_, "reference");
  install("dace_fwd", kFwd);
  ASSERT_TRUE(run(Direction::fwd).is_ok());
  EXPECT_EQ(backend_, "reference");  // the miss is remembered
  dispatcher_->rescan();
  ASSERT_TRUE(run(Direction::fwd).is_ok());
  EXPECT_EQ(backend_, "tuned-library");
  EXPECT_EQ(out_[0], 1);
}

TEST_F(TunedLibraries, ApiRescanReachesTheThreadLocalCallCache) {
  convjit_conv_params_t p{};
  ASSERT_EQ(convjit_conv_params_init(&p, 2), 0);
  p.pad_begin[0] = p.pad_begin[1] = p.pad_end[0] = p.pad_end[1] = 1;
  const auto x = contiguous({2, 2, 5, 5}), w = contiguous({3, 2, 3, 3}),
             y = contiguous({2, 3, 5, 5});
  auto call = [&] {
    return convjit_conv_forward(&p, &x, x_.data(), &w, w_.data(), &y, out_.data(), 1, 0, nullptr);
  };
  ASSERT_EQ(call(), CONVJIT_STATUS_SUCCESS) << convjit_last_error_message();
  EXPECT_EQ(convjit_last_backend(), test::host_backend());
  install("dace_fwd", kFwd);
  ASSERT_EQ(call(), CONVJIT_STATUS_SUCCESS);
  EXPECT_EQ(convjit_last_backend(), test::host_backend());  // the cached miss
  ASSERT_EQ(convjit_rescan(), CONVJIT_STATUS_SUCCESS);
  ASSERT_EQ(call(), CONVJIT_STATUS_SUCCESS);
  EXPECT_STREQ(convjit_last_backend(), "tuned-library");
  EXPECT_EQ(out_[0], 1);
}

TEST_F(TunedLibraries, ManyThreadsLoadANewLibraryOnce) {
  install("dace_fwd", kFwd);
  const OpDescriptor desc = descriptor(Direction::fwd);
  std::vector<std::vector<float>> outs(8, std::vector<float>(150));
  std::vector<std::thread> threads;
  for (auto& out : outs)
    threads.emplace_back([&] {
      ExecArgs args;
      args.x = x_.data(), args.w = w_.data(), args.out = out.data();
      EXPECT_TRUE(dispatcher_->execute(desc, kHost, args).is_ok());
    });
  for (auto& t : threads) t.join();
  for (const auto& out : outs) {
    EXPECT_EQ(out[0], 1);
    EXPECT_EQ(out[7], 1);  // __dace_init_conv ran once in this process
  }
}

TEST_F(TunedLibraries, LibrariesAreShutDownAtProcessExit) {
  install("dace_fwd", kFwd);
  const std::string log = (root_ / "exit.log").string();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::setenv("CONVJIT_TEST_EXIT_LOG", log.c_str(), 1);
    const bool ok = run(Direction::fwd).is_ok() && backend_ == "tuned-library";
    std::exit(ok ? 0 : 3);  // no destructors of this frame run: only atexit handlers
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  std::ifstream in(log);
  std::string line;
  EXPECT_TRUE(std::getline(in, line));
  EXPECT_EQ(line, "exit");
}

std::vector<std::string> read_lines(const std::string& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> lines_with(const std::vector<std::string>& lines,
                                    const std::string& prefix) {
  std::vector<std::string> out;
  for (const auto& line : lines)
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
  return out;
}

TEST_F(TunedLibraries, VerboseLogHasHeaderTemplateProbeAndDecisionLines) {
  const std::string log = (root_ / "verbose.log").string();
  ASSERT_EQ(convjit_set_log_file(log.c_str()), CONVJIT_STATUS_SUCCESS);
  ASSERT_EQ(convjit_set_verbose(1), CONVJIT_STATUS_SUCCESS);
  install("abi_wrong_version", kFwdSymbolic);                                // rejected
  install("dace_bwddata", descriptor_name(descriptor(Direction::bwddata)));  // loaded
  ASSERT_TRUE(run(Direction::fwd).is_ok());
  ASSERT_TRUE(run(Direction::bwddata).is_ok());
  ASSERT_TRUE(run(Direction::bwddata).is_ok());  // resolved: no new decision
  (void)convjit_set_verbose(-1);
  (void)convjit_set_log_file(nullptr);

  const auto lines = read_lines(log);
  ASSERT_GE(lines.size(), 7u);
  EXPECT_EQ(lines[0], "convjit_verbose,v1,info,version,0.1.0");
  EXPECT_EQ(lines_with(lines, "convjit_verbose,v1,info,cache_path,").at(0),
            "convjit_verbose,v1,info,cache_path," + cache_);
  EXPECT_EQ(lines_with(lines, "convjit_verbose,v1,template,").at(0),
            "convjit_verbose,v1,template,event,descriptor,symbolic,backend,detail,ms,problem");
  const auto probes = lines_with(lines, "convjit_verbose,v1,probe,");
  const auto decisions = lines_with(lines, "convjit_verbose,v1,decide,");
  ASSERT_EQ(probes.size(), 3u);
  ASSERT_EQ(decisions.size(), 2u);
  const std::string fwd_prefix =
      std::string("convjit_verbose,v1,probe,") + kFwd + "," + kFwdSymbolic + ",tuned-library,";
  EXPECT_EQ(probes[0], fwd_prefix + cache_ + "/lib" + kFwd + ".so: not found,,\"" +
                           descriptor_flags(descriptor(Direction::fwd)) + "\"");
  EXPECT_NE(probes[1].find("rejected (convjit ABI): convjit kernel ABI version 3"),
            std::string::npos)
      << probes[1];
  EXPECT_NE(probes[2].find(".so: loaded (DaCe ABI),,"), std::string::npos) << probes[2];
  EXPECT_NE(decisions[0].find(",reference,\"earlier backends declined: tuned-library: no usable"),
            std::string::npos)
      << decisions[0];
  EXPECT_NE(decisions[1].find(",tuned-library,first backend in the chain that supports it,"),
            std::string::npos)
      << decisions[1];
  EXPECT_TRUE(lines_with(lines, "convjit_verbose,v1,exec,").empty());
}

TEST_F(TunedLibraries, VerboseLevelTwoAddsOneLinePerExecutionAndZeroLogsNothing) {
  const std::string quiet = (root_ / "quiet.log").string(),
                    chatty = (root_ / "chatty.log").string();
  ASSERT_EQ(convjit_set_log_file(quiet.c_str()), CONVJIT_STATUS_SUCCESS);
  ASSERT_EQ(convjit_set_verbose(0), CONVJIT_STATUS_SUCCESS);
  ASSERT_TRUE(run(Direction::fwd).is_ok());
  EXPECT_FALSE(fs::exists(quiet));
  dispatcher_ = std::make_unique<Dispatcher>(default_chain());
  ASSERT_EQ(convjit_set_log_file(chatty.c_str()), CONVJIT_STATUS_SUCCESS);
  ASSERT_EQ(convjit_set_verbose(2), CONVJIT_STATUS_SUCCESS);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(run(Direction::fwd).is_ok());
  (void)convjit_set_verbose(-1);
  (void)convjit_set_log_file(nullptr);
  const auto execs = lines_with(read_lines(chatty), "convjit_verbose,v1,exec,");
  ASSERT_EQ(execs.size(), 3u);
  EXPECT_EQ(
      execs[0].rfind(
          std::string("convjit_verbose,v1,exec,") + kFwd + "," + kFwdSymbolic + ",reference,,", 0),
      0u)
      << execs[0];
}

}  // namespace
}  // namespace convjit
