// `convjit export --dace` end to end, on the host: the libraries it writes
// run under a harness written from DiHydrogen's loader (dace_harness.c,
// independent of convjit), load through convjit's own tuned-library
// backend, and bad input gets a clear answer.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "support/spawned_process.hpp"
#include "support/temp_directory.hpp"

namespace {

namespace fs = std::filesystem;
using convjit::test::Outcome;
using convjit::test::spawn;
using convjit::test::TempDirectory;

Outcome convjit(const std::string& args, const std::string& env = "") {
  return spawn(env + " " CONVJIT_CLI_PATH " " + args);
}

// The harness over every library in `dir` (symbolic ones at `batches`).
Outcome harness(const fs::path& dir, const std::string& batches = "--batch 2 --batch 3") {
  return spawn(std::string(CONVJIT_DACE_HARNESS) + " " + batches + " " + dir.string() + "/lib*.so");
}

std::vector<fs::path> libraries(const fs::path& dir) {
  std::vector<fs::path> found;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().extension() == ".so") found.push_back(entry.path());
  std::sort(found.begin(), found.end());
  return found;
}

std::string bare_name(const fs::path& library) {
  const std::string file = library.filename().string();
  return file.substr(3, file.size() - 6);
}

nlohmann::json export_json(const std::string& args) {
  const Outcome r = convjit("export --json --device host " + args);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return nlohmann::json::parse(r.output.substr(r.output.find('{')), nullptr, false);
}

int count(const nlohmann::json& j, const std::string& outcome) {
  int n = 0;
  for (const auto& library : j["libraries"]) n += library["outcome"] == outcome;
  return n;
}

void write_file(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

// A record file (CONVJIT_RECORD's JSON lines) at `path` naming `names`.
void write_record(const fs::path& path, const std::vector<std::string>& names) {
  std::string lines;
  for (const std::string& name : names) lines += "{\"name\": \"" + name + "\"}\n";
  write_file(path, lines);
}

// `names` exported for the host from a record file into dir/out; out.
fs::path export_names(const TempDirectory& dir, const std::vector<std::string>& names) {
  const fs::path record = dir.path() / "run.jsonl", out = dir.path() / "out";
  write_record(record, names);
  export_json("--dace " + out.string() + " --record " + record.string());
  return out;
}

// A CosmoFlow-style 3D conv on halo buffers (rows of 10 padded to 12), small
// enough for the harness's direct convolution.
std::string halo_conv_name(const std::string& op) {
  const Outcome r = convjit(
      "describe conv --x 2,4,6,10,10 --x-strides 2880,720,120,12,1 --w 8,4,3,3,3 --pad 1,1,1 "
      "--y-strides 5760,720,120,12,1 --op " + op);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return r.first_line();
}

TEST(DaceExport, TheHarnessRunsEveryResNet50AndCosmoFlowLayerConcreteAndSymbolic) {
  TempDirectory dir("convjit-dace");
  const std::string out = "--dace " + dir.string();
  const auto resnet = export_json(out + " --model resnet50 --batch 2 --imgsz 32");
  EXPECT_EQ(count(resnet, "written"), static_cast<int>(libraries(dir.path()).size()));
  // The stem's max pool and the head's avg pool, and 24 distinct BatchNorms.
  EXPECT_EQ(count(resnet, "skipped"), 28);
  export_json(out + " --model resnet50 --batch 2 --imgsz 32 --symbolic-batch");
  const fs::path record = dir.path() / "halo.jsonl";
  write_record(record,
               {halo_conv_name("fwd"), halo_conv_name("bwddata"), halo_conv_name("bwdfilt")});
  export_json(out + " --record " + record.string());
  export_json(out + " --record " + record.string() + " --symbolic-batch --batch 2");
  const Outcome r = harness(dir.path());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(std::to_string(libraries(dir.path()).size()) +
                          " libraries: 0 failed, 0 fell back"),
            std::string::npos)
      << r.output;
  EXPECT_GT(libraries(dir.path()).size(), 2u * 3 * 20);
  // CosmoFlow's 3D layers at their smallest (32^3 through five pools); the
  // symbolic ones at batch 2, one more than they were chosen at.
  TempDirectory cosmoflow("convjit-dace");
  const std::string to = "--dace " + cosmoflow.string() + " --model cosmoflow --imgsz 32";
  EXPECT_EQ(count(export_json(to + " --batch 1"), "written"), 14);  // 5 convs, the stem's no bwddata
  EXPECT_EQ(count(export_json(to + " --batch 1 --symbolic-batch"), "written"), 14);
  const Outcome c = harness(cosmoflow.path(), "--batch 2");
  EXPECT_EQ(c.exit_code, 0) << c.output;
  EXPECT_NE(c.output.find("28 libraries: 0 failed, 0 fell back"), std::string::npos) << c.output;
}

TEST(DaceExport, ConvjitLoadsTheExportedLibrariesAndSaysWhatEachIsPinnedTo) {
  TempDirectory dir("convjit-dace");
  export_json("--dace " + dir.string() + " --model resnet50 --batch 2 --imgsz 32");
  const std::string env = "CONVJIT_CACHE_PATH=" + dir.string();
  const std::string name = bare_name(libraries(dir.path()).front());
  const Outcome query = convjit("query --load --name " + name, env);
  EXPECT_NE(query.output.find(": loaded (DaCe ABI)"), std::string::npos) << query.output;
  const Outcome describe = convjit("describe --name lib" + name + ".so", env);
  EXPECT_NE(describe.line_starting("exported").find("on host, chosen at batch 2"),
            std::string::npos)
      << describe.output;
  // A whole training step through them: every conv from a tuned library,
  // each checked against the host reference.
  const Outcome run = convjit("run --model resnet50 --batch 2 --imgsz 32 --verify --json", env);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto ops = nlohmann::json::parse(run.output)["ops"];
  int convs = 0;
  for (const auto& op : ops) {
    if (op["descriptor"].get<std::string>().rfind("conv", 0) != 0) continue;
    ++convs;
    EXPECT_EQ(op["backend"], "tuned-library") << op.dump();
    EXPECT_LT(op["max_error"].get<double>(), 1e-4) << op.dump();
  }
  EXPECT_EQ(convs, static_cast<int>(libraries(dir.path()).size()));
}

TEST(DaceExport, AnLbannLogBecomesSymbolicLibrariesAndItsBadLinesAreNamed) {
  TempDirectory dir("convjit-dace");
  const std::string fwd = halo_conv_name("fwd"), bwd = halo_conv_name("bwddata");
  auto symbolic = [](std::string name) {
    for (int i = 0; i < 2; ++i) name.replace(name.find("_2_"), 3, "_B_");
    return name;
  };
  const std::string miss = "[INFO] JIT-compiled convolution not found for ";
  const fs::path log = dir.path() / "lbann.err";
  write_file(log, "LBANN starting\n[0] " + miss + symbolic(fwd) + "\n0: [3] " + miss +
                      symbolic(fwd) + "\n[1] " + miss + symbolic(bwd) + "\n[2] [INFO] Found " +
                      "JIT-compiled convolution: x\n" + miss + symbolic(fwd) + "\n[1] " + miss +
                      symbolic(bwd).substr(0, 60) + "\n[1] " + miss + symbolic(fwd) + "[0] " +
                      miss + "\n");
  const fs::path out = dir.path() / "cache";
  const Outcome r = convjit("export --device host --dace " + out.string() + " --lbann-log " +
                            log.string() + " --batch 2");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("2 written"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("lbann.err:6: no \"[<rank>] \""), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("lbann.err:7: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("lbann.err:8: "), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("lbann.err:2"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(out / ("lib" + symbolic(fwd) + ".so")));
  const Outcome run = harness(out, "--batch 2 --batch 5");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  // Symbolic names need the batch they are chosen and preloaded at.
  const Outcome no_batch = convjit("export --device host --dace " + out.string() +
                                   " --lbann-log " + log.string());
  EXPECT_EQ(no_batch.exit_code, 2) << no_batch.output;
  EXPECT_NE(no_batch.output.find("pass --batch N"), std::string::npos) << no_batch.output;
}

TEST(DaceExport, WhatTheAbiCannotCarryIsSkippedWithTheReason) {
  TempDirectory dir("convjit-dace");
  const std::string f16 = convjit("describe conv --x 1,8,6,6 --w 8,8,3,3 --dtype f16").first_line();
  const std::string pool =
      convjit("describe pool --x 1,8,6,6 --window 2,2 --stride 2,2 --mode max").first_line();
  const std::string asymmetric =
      convjit("describe conv --x 1,8,6,6 --w 8,8,3,3 --pad-begin 0,0 --pad-end 1,1").first_line();
  const fs::path record = dir.path() / "run.jsonl";
  write_record(record, {f16, pool, asymmetric});
  const auto j = export_json("--dace " + (dir.path() / "out").string() + " --record " +
                             record.string());
  ASSERT_EQ(j["libraries"].size(), 3u) << j.dump(1);
  EXPECT_NE(j["libraries"][0]["detail"].get<std::string>().find("f16: DiHydrogen sends only f32"),
            std::string::npos);
  EXPECT_NE(j["libraries"][1]["detail"].get<std::string>().find("not a convolution"),
            std::string::npos);
  EXPECT_NE(j["libraries"][2]["detail"].get<std::string>().find("LBANN's grammar cannot name"),
            std::string::npos);
  EXPECT_EQ(count(j, "skipped"), 3);
  EXPECT_TRUE(libraries(dir.path() / "out").empty());
}

TEST(DaceExport, AnExistingFileIsKeptUnlessForcedAndWritesAreWholeWith0755) {
  TempDirectory dir("convjit-dace");
  const std::string name = halo_conv_name("fwd");
  const fs::path record = dir.path() / "run.jsonl", out = dir.path() / "out";
  write_record(record, {name});
  fs::create_directory(out);
  fs::permissions(out, fs::perms::owner_all);
  const fs::path library = out / ("lib" + name + ".so");
  write_file(library, "someone's own library");
  const std::string args = "--dace " + out.string() + " --record " + record.string();
  EXPECT_EQ(count(export_json(args), "kept"), 1);
  EXPECT_EQ(fs::file_size(library), std::string("someone's own library").size());
  EXPECT_EQ(count(export_json(args + " --force"), "written"), 1);
  EXPECT_EQ(fs::status(library).permissions() & fs::perms::all,
            fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                fs::perms::others_read | fs::perms::others_exec);
  for (const auto& entry : fs::directory_iterator(out))
    EXPECT_EQ(entry.path(), library) << "a temporary was left behind";
}

TEST(DaceExport, ADirectoryOthersCanWriteOrThatIsNoDirectoryIsRefused) {
  TempDirectory dir("convjit-dace");
  const std::string model = " --model resnet50 --imgsz 32 --device host";
  const fs::path shared = dir.path() / "shared";
  fs::create_directory(shared);
  fs::permissions(shared, fs::perms::all);
  Outcome r = convjit("export --dace " + shared.string() + model);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("writable"), std::string::npos) << r.output;
  const fs::path file = dir.path() / "file";
  write_file(file, "x");
  r = convjit("export --dace " + file.string() + model);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("is not a directory"), std::string::npos) << r.output;
  r = convjit("export --dace " + (file / "below").string() + model);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("cannot create --dace"), std::string::npos) << r.output;
  EXPECT_TRUE(libraries(shared).empty());
}

// The library's RUNPATH pointed elsewhere (bytes of the same length): what
// a library copied to a machine without convjit, or after an uninstall, meets.
void hide_libconvjit(const fs::path& library) {
  std::ifstream in(library, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string build = CONVJIT_BUILD_DIR;
  const auto at = bytes.find(build + '\0');
  ASSERT_NE(at, std::string::npos) << "no RUNPATH to the build directory";
  const std::string elsewhere = "/nonexistent" + std::string(build.size() - 12, 'x');
  bytes.replace(at, build.size(), elsewhere.substr(0, build.size()));
  std::ofstream(library, std::ios::binary | std::ios::trunc) << bytes;
}

TEST(DaceExport, WithoutLibconvjitTheLoaderRefusesTheLibraryAndTheCallerFallsBack) {
  TempDirectory dir("convjit-dace");
  const fs::path out = export_names(dir, {halo_conv_name("fwd")});
  const fs::path library = libraries(out).front();
  hide_libconvjit(library);
  const Outcome r = harness(out);
  EXPECT_EQ(r.exit_code, 3) << r.output;  // fell back, as DiHydrogen does to cuDNN
  EXPECT_NE(r.output.find("libconvjit.so.0: cannot open shared object file"), std::string::npos)
      << r.output;
  const Outcome query = convjit("query --load --name " + bare_name(library),
                                "CONVJIT_CACHE_PATH=" + out.string());
  EXPECT_NE(query.output.find("dlopen failed: libconvjit.so.0"), std::string::npos)
      << query.output;
}

TEST(DaceExport, ARenamedCopyServesItsOwnNameAndSaysSo) {
  TempDirectory dir("convjit-dace");
  const fs::path out = export_names(dir, {halo_conv_name("fwd")});
  const fs::path exported = libraries(out).front();
  fs::copy_file(exported, out / ("lib" + halo_conv_name("bwdfilt") + ".so"));
  fs::remove(exported);
  const Outcome r = harness(out);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("renamed: its pin is for another descriptor"), std::string::npos)
      << r.output;
}

// DiHydrogen shares one handle between its streams and calls without a
// lock, setting the workspace and then running: threads that do so at once
// each get their own operands' result, bit for bit the result of a call
// made alone.
TEST(DaceExport, ThreadsSharingOneHandleEachGetTheirOwnResult) {
  TempDirectory dir("convjit-dace");
  const fs::path out = export_names(
      dir, {convjit("describe conv --x 2,8,12,12 --w 16,8,3,3 --pad 1,1").first_line()});
  void* lib = ::dlopen(libraries(out).front().c_str(), RTLD_LAZY);
  ASSERT_NE(lib, nullptr) << ::dlerror();
  using Init = void* (*)();
  using Exit = int (*)(void*);
  using Size = std::size_t (*)(void*);
  using SetWorkspace = void (*)(void*, void*);
  using Program = void (*)(void*, const void*, const void*, void*, float, float);
  void* h = reinterpret_cast<Init>(::dlsym(lib, "__dace_init_conv"))();
  const auto size = reinterpret_cast<Size>(::dlsym(lib, "__dace_get_external_memory_size_GPU_Global"));
  const auto set = reinterpret_cast<SetWorkspace>(::dlsym(lib, "__dace_set_external_memory_GPU_Global"));
  const auto program = reinterpret_cast<Program>(::dlsym(lib, "__program_conv"));
  constexpr int kThreads = 4;
  struct Operands {
    std::vector<float> w = std::vector<float>(16 * 8 * 9), x = std::vector<float>(2 * 8 * 144),
                       y = std::vector<float>(2 * 16 * 144), alone;
    std::vector<std::byte> workspace;
  };
  std::vector<Operands> operands(kThreads);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-1, 1);
  for (Operands& o : operands) {
    for (auto* v : {&o.w, &o.x}) std::generate(v->begin(), v->end(), [&] { return uniform(rng); });
    o.workspace.resize(size(h) + 1);
    set(h, o.workspace.data());
    program(h, o.w.data(), o.x.data(), o.y.data(), 1.0f, 0.0f);
    o.alone = o.y;
  }
  std::vector<std::thread> threads;
  std::vector<int> mismatches(kThreads, 0);
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      Operands& o = operands[static_cast<std::size_t>(t)];
      for (int i = 0; i < 50; ++i) {
        std::fill(o.y.begin(), o.y.end(), 0.0f);
        set(h, o.workspace.data());
        program(h, o.w.data(), o.x.data(), o.y.data(), 1.0f, 0.0f);
        mismatches[static_cast<std::size_t>(t)] += o.y != o.alone;
      }
    });
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(mismatches[static_cast<std::size_t>(t)], 0) << t;
  reinterpret_cast<Exit>(::dlsym(lib, "__dace_exit_conv"))(h);
  ::dlclose(lib);
}

}  // namespace
