// `convjit preload --mpi` and libconvjit_mpi under Open MPI's mpirun, with
// NVRTC: 4 ranks on one machine, grouped into 2 nodes of 2 ranks
// (--ranks-per-node), each node with its own local tier.  Built where CMake
// finds MPI; root may run mpirun through OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>

#include "support/temp_directory.hpp"

namespace {

namespace fs = std::filesystem;

struct Outcome {
  int exit_code = -1;
  std::string output;
};

Outcome shell(const std::string& command) {
  Outcome out;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return out;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;)
    out.output.append(buffer, n);
  const int status = ::pclose(pipe);
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return out;
}

std::string read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class MpiPreload : public ::testing::Test {
 protected:
  // Rank r runs `rank_command` with CONVJIT_CACHE_PATH=<temp>/shared,
  // CONVJIT_LOCAL_CACHE_PATH=<temp>/node<r/2>, output in <temp>/log.<r>.
  Outcome mpirun(int ranks, const std::string& rank_command) const {
    const std::string dir = temp_.string();
    // mpirun refuses root unless told twice; CI runs as root.
    return shell(
        "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 600 mpirun -np " +
        std::to_string(ranks) +
        " --oversubscribe sh -c 'r=$OMPI_COMM_WORLD_RANK; "
        "export CONVJIT_CACHE_PATH=" +
        dir + "/shared CONVJIT_LOCAL_CACHE_PATH=" + dir + "/node$((r / 2)); " + rank_command +
        " > " + dir + "/log.$r 2>&1'");
  }
  std::string log(int rank) const { return read(temp_.path() / ("log." + std::to_string(rank))); }
  std::string cli(const std::string& args, const std::string& local) const {
    return "CONVJIT_CACHE_PATH=" + temp_.string() + "/shared CONVJIT_LOCAL_CACHE_PATH=" + local +
           " " CONVJIT_CLI_PATH " " + args;
  }

  convjit::test::TempDirectory temp_{"convjit-mpi"};
};

TEST_F(MpiPreload, Yolo11nOnFourRanksCompilesEachKeyOnceAndFillsEveryTier) {
  const Outcome job = mpirun(4, "exec " CONVJIT_CLI_PATH
                                " preload --mpi --ranks-per-node 2 --model yolo11n --imgsz 64 "
                                "--arch sm_90 --jobs 2");
  ASSERT_EQ(job.exit_code, 0) << job.output << log(0) << log(2);
  // Exactly one compile per distinct key across the job, from the ranks' logs.
  std::map<std::string, int> compiles;
  const std::regex line(R"(^rank \d: compiled +[0-9.]+ ms  (\S+)$)");
  for (int r = 0; r < 4; ++r) {
    std::istringstream in(log(r));
    for (std::string text; std::getline(in, text);)
      if (std::smatch m; std::regex_match(text, m, line)) ++compiles[m[1]];
  }
  const std::regex summary(
      R"(preload: 4 ranks on 2 nodes, (\d+) descriptors for sm_90 in [0-9.]+ s: )"
      R"((\d+) compiled, 0 already cached, (\d+) unsupported, 0 failed)");
  std::smatch m;
  const std::string rank0 = log(0);
  ASSERT_TRUE(std::regex_search(rank0, m, summary)) << rank0;
  const auto distinct = static_cast<std::size_t>(std::stoul(m[2]));
  // Every op of the step has a JIT kernel, its BatchNorms and upsamples included.
  EXPECT_EQ(std::stoul(m[3]), 0u);
  EXPECT_EQ(std::stoul(m[1]), distinct + std::stoul(m[3]));
  EXPECT_GT(distinct, 100u);
  EXPECT_EQ(compiles.size(), distinct);
  for (const auto& [name, count] : compiles) EXPECT_EQ(count, 1) << name;
  // Every rank loads every entry from its node's local tier...
  for (int r = 0; r < 4; ++r)
    EXPECT_NE(log(r).find(std::to_string(distinct) + " entries load from " + temp_.string() +
                          "/node" + std::to_string(r / 2) + "\n"),
              std::string::npos)
        << log(r);
  for (const char* node : {"node0", "node1"}) {
    const auto local = nlohmann::json::parse(shell("CONVJIT_CACHE_PATH=" + temp_.string() + "/" +
                                                   node + " " CONVJIT_CLI_PATH " cache ls --json")
                                                 .output);
    EXPECT_EQ(local.size(), distinct) << node;
  }
  // ...and the shared tier is complete and verified.
  const Outcome verified = shell(cli("cache verify --json", "none"));
  ASSERT_EQ(verified.exit_code, 0) << verified.output;
  EXPECT_EQ(nlohmann::json::parse(verified.output)["quarantined"].size(), 0u);
  EXPECT_EQ(nlohmann::json::parse(shell(cli("cache ls --json", "none")).output).size(), distinct);

  // The same preload without MPI, on a node whose local tier is empty:
  // nothing compiled, the tier filled from the shared one.
  const Outcome alone = shell(
      cli("preload --model yolo11n --imgsz 64 --arch sm_90 --json", temp_.string() + "/fresh"));
  ASSERT_EQ(alone.exit_code, 0) << alone.output;
  const auto report = nlohmann::json::parse(alone.output);
  EXPECT_EQ(report["compiled"], 0);
  EXPECT_EQ(report["copied_from_shared"], distinct);
  EXPECT_EQ(report["local_entries"], distinct);
}

TEST_F(MpiPreload, ARankThatFailsPartWayIsReportedByTheOthersAndNoneHangs) {
  // Rank 2 (node 1's leader) may not write files larger than 0 bytes: its
  // local tier's publishes fail with EFBIG once the compiles are done.
  // (Its output goes through a pipe, which the limit does not cover.)
  const Outcome job = mpirun(
      4, "trap \"\" XFSZ; (if [ $r = 2 ]; then ulimit -f 0; fi; " CONVJIT_CLI_PATH
         " preload --mpi --ranks-per-node 2 --model cosmoflow --imgsz 32 --arch sm_90 --jobs 2 "
         "2>&1; echo \"exit $?\") | cat");
  EXPECT_NE(job.exit_code, 124) << "mpirun timed out: a rank hung";
  for (int r = 0; r < 4; ++r) {
    EXPECT_NE(log(r).find("exit 1\n"), std::string::npos) << "rank " << r << ": " << log(r);
    EXPECT_NE(log(r).find("rank 2 failed"), std::string::npos) << "rank " << r << ": " << log(r);
    EXPECT_NE(log(r).find("File too large"), std::string::npos) << log(r);
  }
}

TEST_F(MpiPreload, ACTrainerPreloadsThroughLibconvjitMpi) {
  const std::string names =
      "conv2d_1_2_5_5_0_50_25_5_1_0_3_2_3_3_0_1_3_5_5_0_75_25_5_1_0_1_1_0_1_1_0_1_1_0_1_fwd "
      "maxpool2d_1_4_8_8_0_256_64_8_1_0_2_2_0_1_4_4_4_0_64_16_4_1_0_0_0_0_2_2_0_1_1_0_fwd";
  const Outcome job = mpirun(2, "exec " CONVJIT_MPI_CALLER_PATH " " + names);
  ASSERT_EQ(job.exit_code, 0) << job.output << log(0) << log(1);
  EXPECT_NE(log(0).find("rank 0: status 0 distinct 2 compiled 2 "), std::string::npos) << log(0);
  EXPECT_NE(log(1).find("rank 1: status 0 distinct 2 compiled 2 "), std::string::npos) << log(1);
  EXPECT_NE(log(1).find("local_entries 2"), std::string::npos) << log(1);
}

}  // namespace
