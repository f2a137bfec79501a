// Crash safety: a training process killed with SIGKILL at random moments (while it trains, while
// it writes a checkpoint) and started again each time resumes from its newest checkpoint and ends
// with the same weights, bit for bit, and the same CSV log as a run never killed.
// ACCRUE_KILL_SEED=<n> repeats a sequence of kill times.

#include "../test_util.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include <accrue/dsl/training_checkpoint.hpp>
#include <accrue/framework/serialization/safetensors.hpp>

using namespace accrue;
using namespace accrue::test;
namespace fs = std::filesystem;

namespace {

std::ptrdiff_t files_in(const fs::path& dir) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  return ec ? 0 : std::distance(it, fs::directory_iterator{});
}

pid_t spawn(const std::string& dir, const std::string& out) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    // Output of the worker goes away; a failure shows as its exit status.
    std::freopen("/dev/null", "w", stdout);
    ::execl(ACCRUE_CHECKPOINT_WORKER, ACCRUE_CHECKPOINT_WORKER, dir.c_str(), out.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  BOOST_REQUIRE(pid > 0);
  return pid;
}

int wait_exit(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::vector<std::string> weight_bytes(const std::string& path) {
  std::vector<std::string> out;
  for (const auto& [name, t] : serialization::load_safetensors(path).tensors)
    out.push_back(name + std::string(static_cast<const char*>(t.data_ptr()), t.nbytes()));
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(killed_at_random_moments_ends_as_if_never_killed) {
  const fs::path root = fs::temp_directory_path() / fmt::format("accrue_kill_{}", ::getpid());
  fs::remove_all(root);
  fs::create_directories(root / "reference");
  fs::create_directories(root / "killed");

  const auto start = std::chrono::steady_clock::now();
  BOOST_REQUIRE(wait_exit(spawn((root / "reference").string(), (root / "reference.safetensors").string())) == 0);
  const double full = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::uint64_t seed = std::random_device{}();
  if (const char* s = std::getenv("ACCRUE_KILL_SEED")) seed = std::stoull(s);
  BOOST_TEST_MESSAGE("uninterrupted run: " << full << " s; kill times from seed " << seed
                                           << " (ACCRUE_KILL_SEED to repeat)");
  std::mt19937_64 rng{seed};
  std::uniform_real_distribution<double> fraction{0.02, 0.3};
  // Each kill comes before 30% of the uninterrupted run's time, so three or more are needed before
  // a run can finish. When the machine's load changes that (a worker faster than the reference
  // run), the round starts again afresh with kill times half as long.
  int kills = 0;
  double scale = 1.0;
  for (int round = 0; round < 4; ++round, scale /= 2) {
    fs::remove_all(root / "killed");
    fs::create_directories(root / "killed");
    kills = 0;
    bool finished = false;
    for (int attempt = 0; attempt < 25 && !finished; ++attempt) {
      const pid_t pid = spawn((root / "killed").string(), (root / "killed.safetensors").string());
      const double delay = fraction(rng) * full * scale;
      std::this_thread::sleep_for(std::chrono::duration<double>(delay));
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        BOOST_REQUIRE_MESSAGE(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the worker failed on attempt " << attempt);
        finished = true;
        break;
      }
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      ++kills;
      const auto saved = detail::checkpoints_in((root / "killed/ckpt").string());
      BOOST_TEST_MESSAGE("killed after " << delay << " s; newest checkpoint: "
                                         << (saved.empty() ? std::string{"none"} : fs::path(saved.front()).filename().string())
                                         << ", files in the folder: " << files_in(root / "killed/ckpt"));
    }
    if (!finished)
      BOOST_REQUIRE(wait_exit(spawn((root / "killed").string(), (root / "killed.safetensors").string())) == 0);
    BOOST_TEST_MESSAGE("round " << round + 1 << ": " << kills << " kills");
    if (kills >= 3) break;
  }
  BOOST_TEST(kills >= 3);
  BOOST_TEST(weight_bytes((root / "killed.safetensors").string()) ==
             weight_bytes((root / "reference.safetensors").string()));
  BOOST_TEST(read_file((root / "killed/log.csv").string()) == read_file((root / "reference/log.csv").string()));
  fs::remove_all(root);
}
