// Miss recording: JSON content, deduplication within the process and
// against the file, and 8 threads in each of 3 processes appending at once.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "convjit/convjit.h"
#include "dispatcher/descriptor/descriptor_builder.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "dispatcher/observe/recorder.hpp"
#include "support/concurrent_workers.hpp"
#include "support/temp_directory.hpp"

namespace convjit {
namespace {

namespace fs = std::filesystem;

OpDescriptor conv_with_batch(std::int64_t batch) {
  convjit_tensor_desc_t x{}, w{};
  const std::int64_t xd[4] = {batch, 4, 6, 6}, wd[4] = {8, 4, 3, 3};
  EXPECT_EQ(convjit_tensor_desc_init(&x, CONVJIT_DTYPE_F32, 4, xd, CONVJIT_LAYOUT_NHWC), 0);
  EXPECT_EQ(convjit_tensor_desc_init(&w, CONVJIT_DTYPE_F32, 4, wd, CONVJIT_LAYOUT_NCHW), 0);
  convjit_conv_params_t p{};
  EXPECT_EQ(convjit_conv_params_init(&p, 2), 0);
  p.pad_begin[0] = p.pad_end[0] = 1;
  return make_conv_descriptor(&p, Direction::bwdfilt, &x, &w, nullptr).value();
}

std::vector<nlohmann::json> lines_of(const std::string& path) {
  std::vector<nlohmann::json> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

class RecorderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    file_ = (dir_ / "record.jsonl").string();
    ASSERT_EQ(convjit_set_record_file(file_.c_str()), CONVJIT_STATUS_SUCCESS);
  }
  void TearDown() override {
    (void)convjit_set_record_file(nullptr);
  }
  test::TempDirectory temp_{"convjit-record"};
  fs::path dir_ = temp_.path();
  std::string file_;
};

TEST_F(RecorderTest, OneJsonLinePerDistinctDescriptor) {
  const OpDescriptor a = conv_with_batch(2), b = conv_with_batch(3);
  Recorder::instance().record(a, "reference");
  Recorder::instance().record(a, "reference");
  Recorder::instance().record(b, "tuned-library");
  const auto lines = lines_of(file_);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["name"], descriptor_name(a));
  EXPECT_EQ(lines[0]["symbolic"], descriptor_name(with_symbolic_batch(a)));
  EXPECT_EQ(lines[0]["op"], "conv");
  EXPECT_EQ(lines[0]["direction"], "bwdfilt");
  EXPECT_EQ(lines[0]["dtype"], "f32");
  EXPECT_EQ(lines[0]["x"], nlohmann::json({2, 4, 6, 6}));
  EXPECT_EQ(lines[0]["x_strides"], nlohmann::json({144, 1, 24, 4}));
  EXPECT_EQ(lines[0]["pad_begin"], nlohmann::json({1, 0}));
  EXPECT_EQ(lines[0]["groups"], 1);
  EXPECT_EQ(lines[0]["backend"], "reference");
  EXPECT_EQ(lines[1]["backend"], "tuned-library");
  const std::string problem = lines[0]["problem"];
  EXPECT_EQ(problem.rfind("conv --x 2,4,6,6 --x-strides 144,1,24,4", 0), 0u) << problem;
}

TEST_F(RecorderTest, DeduplicatesAgainstLinesAlreadyInTheFile) {
  const OpDescriptor a = conv_with_batch(5), b = conv_with_batch(6);
  std::ofstream(file_) << Recorder::json_line(a, "earlier-run") << "\nnot json at all\n";
  Recorder::instance().record(a, "reference");
  Recorder::instance().record(b, "reference");
  std::ifstream in(file_);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(nlohmann::json::parse(lines[2])["name"], descriptor_name(b));
}

TEST_F(RecorderTest, EightThreadsInThreeProcessesRecordEachDescriptorOnce) {
  constexpr int kDescriptors = 40, kProcesses = 3, kThreads = 8;
  std::vector<OpDescriptor> descs;
  for (int i = 1; i <= kDescriptors; ++i) descs.push_back(conv_with_batch(i));
  const auto codes = test::run_in_processes_and_threads(kProcesses, kThreads, [&](int p, int t) {
    for (int i = 0; i < kDescriptors; ++i)
      Recorder::instance().record(
          descs[static_cast<std::size_t>((i * 7 + t * 3 + p) % kDescriptors)], "reference");
    return true;
  });
  EXPECT_EQ(codes, std::vector<int>(kProcesses, 0));
  const auto lines = lines_of(file_);  // throws on a torn line
  std::set<std::string> names;
  for (const auto& line : lines) names.insert(line["name"].get<std::string>());
  EXPECT_EQ(lines.size(), static_cast<std::size_t>(kDescriptors));
  EXPECT_EQ(names.size(), static_cast<std::size_t>(kDescriptors));
  for (const auto& d : descs) EXPECT_TRUE(names.count(descriptor_name(d)));
}

// Issue 15, item 7: the setters refused nothing, so a record (or log) file
// that could not be opened lost everything without a word.
TEST_F(RecorderTest, TheSettersRefuseAPathTheyCannotOpenAndKeepTheSetting) {
  const std::string missing = (dir_ / "missing-dir" / "record.jsonl").string();
  EXPECT_EQ(convjit_set_record_file(missing.c_str()), CONVJIT_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(convjit_last_error_message()),
            "cannot open the record file " + missing +
                " for appending: No such file or directory; pass a writable path");
  EXPECT_EQ(convjit_set_log_file(missing.c_str()), CONVJIT_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(convjit_last_error_message()).find("cannot open the log file " + missing),
            std::string::npos);
  EXPECT_EQ(convjit_set_record_file(""), CONVJIT_STATUS_INVALID_ARGUMENT);
  Recorder::instance().record(conv_with_batch(1), "reference");
  EXPECT_EQ(lines_of(file_).size(), 1u);  // still the earlier file
  EXPECT_FALSE(fs::exists(dir_ / "missing-dir"));
}

TEST_F(RecorderTest, ARecordFileThatBecomesUnwritableNeverFailsTheOperation) {
  fs::create_directory(dir_ / "gone");
  const std::string file = (dir_ / "gone" / "record.jsonl").string();
  ASSERT_EQ(convjit_set_record_file(file.c_str()), CONVJIT_STATUS_SUCCESS);
  fs::remove_all(dir_ / "gone");
  Recorder::instance().record(conv_with_batch(1), "reference");  // warns once on stderr
  EXPECT_FALSE(fs::exists(dir_ / "gone"));
}

}  // namespace
}  // namespace convjit
