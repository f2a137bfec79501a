// The workshop's playground with real training: one page on http://127.0.0.1:8080/ where micro-batch,
// accumulation, a memory cap, .amp() and the loss normalization are chosen, the memory plan is drawn
// against the cap before running, and a run of the tutorial's MLP or CNN on FashionMNIST streams its
// micro-batches, optimizer steps, loss, learning rate and memory to every page that watches. The
// HTTP API behind the page is in playground_server.hpp and docs/06_report_and_playground.md.
//
//   playground [--host 127.0.0.1] [--port 8080] [--data DIR] [--device best|cpu|cuda]
//   playground --classroom --host 0.0.0.0 [--max-runs N] [--threads-per-run T]
//
// --port 0 takes a free port; the first line printed names the address. As a classroom every
// browser gets a workspace of its own, and the second line printed is the teacher's page with its
// token. Ctrl-C or SIGTERM stops the runs and the server. Each run trains in a process of its own:
// this program again, with --worker.

#include <ifaddrs.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <random>
#include <thread>

#include "../example_options.hpp"
#include "playground_server.hpp"
#include "run.hpp"

namespace accrue::detail {
std::string_view playground_page();  // playground.html, compiled in by CMake
std::string_view teacher_page();     // teacher.html
}

using namespace accrue;

namespace {

// The addresses a student can type for `host`: the machine's own for a wildcard (0.0.0.0, ::),
// else `host` itself.
std::vector<std::string> reachable_addresses(const std::string& host) {
  const bool any4 = host == "0.0.0.0", any6 = host == "::";
  if (!any4 && !any6) return {host.find(':') != std::string::npos ? "[" + host + "]" : host};
  std::vector<std::string> out;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) == 0) {
    for (const ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
      if (a->ifa_addr == nullptr || (a->ifa_addr->sa_family != AF_INET && a->ifa_addr->sa_family != AF_INET6)) continue;
      if (a->ifa_addr->sa_family == AF_INET6 && !any6) continue;
      char text[NI_MAXHOST];
      const socklen_t size = a->ifa_addr->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
      if (::getnameinfo(a->ifa_addr, size, text, sizeof text, nullptr, 0, NI_NUMERICHOST) != 0) continue;
      const std::string address = text;
      if (address.starts_with("127.") || address == "::1" || address.find('%') != std::string::npos) continue;
      out.push_back(a->ifa_addr->sa_family == AF_INET6 ? "[" + address + "]" : address);
    }
    ::freeifaddrs(list);
  }
  out.push_back(any6 ? "[::1]" : "127.0.0.1");  // this machine's own browser
  return out;
}

std::string random_token() {
  std::random_device device;
  return fmt::format("{:08x}{:08x}", device(), device());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Real training of the tutorial's model, watched in a browser"};
  std::string host = "127.0.0.1";
  int port = 8080, max_runs = 0, threads_per_run = 0, max_workspaces = 200, per_address = 4;
  double idle_minutes = 60, run_minutes = 30;
  std::string data, device = "best";
  bool classroom = false;
  std::int64_t worker = 0;
  app.add_option("--host", host, "Address to listen on; other than loopback, requests from other machines are answered")
      ->capture_default_str();
  app.add_option("--port", port, "Port to listen on (0: a free one)")
      ->check(examples::whole_number(0, 65535))
      ->capture_default_str();
  app.add_option("--data", data,
                 "Folder with the FashionMNIST IDX files (default: $ACCRUE_FASHION_MNIST_DIR or "
                 "/usr/share/datasets/fashion-mnist)");
  app.add_option("--device", device, "Where to train: best, cpu, cuda, cuda:N")->capture_default_str();
  app.add_flag("--classroom", classroom,
               "A workspace per browser, runs queued within --max-runs, a teacher's page at /teacher");
  app.add_option("--max-runs", max_runs, "Runs training at once, the others queued (default: 1 alone; in a "
                                         "classroom, the cores over --threads-per-run)")
      ->check(examples::whole_number(1, 256));
  app.add_option("--threads-per-run", threads_per_run, "Compute threads of each run (default: all cores alone, 1 in a classroom)")
      ->check(examples::whole_number(1, 1024));
  app.add_option("--max-workspaces", max_workspaces, "Classroom: workspaces at most")
      ->check(examples::whole_number(1, 10000))
      ->capture_default_str();
  app.add_option("--per-address", per_address,
                 "Classroom: workspaces one client address may open (and 4 event streams each); 0: no limit. Behind "
                 "a NAT, where the room shares one address, give the room's size")
      ->check(examples::whole_number(0, 10000))
      ->capture_default_str();
  app.add_option("--workspace-idle-minutes", idle_minutes,
                 "Classroom: a workspace with no run, no page and no request for this long closes; 0: never")
      ->check(examples::finite_number(0, 7 * 24 * 60))
      ->capture_default_str();
  app.add_option("--max-run-minutes", run_minutes, "Classroom: a run training longer stops, saying why; 0: no bound")
      ->check(examples::finite_number(0, 7 * 24 * 60))
      ->capture_default_str();
  app.add_option("--worker", worker, "Internal: train one run, settings on stdin, events on stdout")
      ->group("")
      ->check(examples::whole_number(1, 1'000'000'000));

  return examples::run_example(app, argc, argv, [&] {
    const Device target = Device::parse(device);
    if (worker > 0) {
      const auto [train, test] = datasets::fashion_mnist(data);
      playground::run_worker(train, test.take(std::min<std::int64_t>(test.size(), 2000)), target, worker, std::cin,
                             stdout);
      return;
    }
    ACCRUE_CHECK(!host.empty(), "--host: an empty address; give one such as 127.0.0.1 or 0.0.0.0");
    // SIGINT and SIGTERM go to one thread that stops the server; every other thread blocks them.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);

    const std::int64_t samples = static_cast<std::int64_t>(datasets::fashion_mnist(data).train.size());
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    if (threads_per_run == 0 && classroom) threads_per_run = 1;
    if (max_runs == 0) max_runs = classroom ? std::max(1, cores / threads_per_run) : 1;
    playground::PlaygroundOptions options{
        .worker = {std::filesystem::read_symlink("/proc/self/exe").string(), "--device", target.str()},
        .training_samples = samples,
        .device = target,
        .classroom = classroom,
        .max_runs = max_runs,
        .threads_per_run = threads_per_run,
        .max_workspaces = max_workspaces,
        .per_address = per_address,
        .workspace_idle = std::chrono::milliseconds{static_cast<std::int64_t>(idle_minutes * 60'000)},
        .max_run = std::chrono::milliseconds{static_cast<std::int64_t>(run_minutes * 60'000)},
        .teacher_token = classroom ? random_token() : ""};
    if (!data.empty()) options.worker.insert(options.worker.end(), {"--data", data});
    const bool loopback_only = host == "127.0.0.1" || host == "localhost" || host == "::1";
    playground::Playground playground{options};
    playground::http::Server server{{.remote_allowed = !loopback_only}};
    const nlohmann::json page_data{{"defaults", playground::Settings{}.to_json()},
                                   {"samples", samples},
                                   {"device", target.str()},
                                   {"classroom", classroom},
                                   {"max_runs", max_runs}};
    playground.serve(server,
                     callbacks::fill_report_page(detail::playground_page(), "Accrue playground", page_data.dump()),
                     callbacks::fill_report_page(detail::teacher_page(), "Accrue classroom", page_data.dump()));
    const int bound = server.bind(host, port);
    const std::vector<std::string> addresses = reachable_addresses(host);
    fmt::print("Playground: http://{}:{}/ ({} training samples on {}; Ctrl-C stops)\n", addresses.front(), bound,
               samples, target.str());
    if (classroom) {
      fmt::print("Teacher: http://{}:{}/teacher?token={} ({} runs at once, {} thread{} each{})\n", addresses.front(),
                 bound, options.teacher_token, max_runs, threads_per_run, threads_per_run == 1 ? "" : "s",
                 run_minutes > 0 ? fmt::format(", at most {:g} minutes", run_minutes) : "");
      for (std::size_t i = 1; i < addresses.size(); ++i) fmt::print("Also: http://{}:{}/\n", addresses[i], bound);
    }
    // Nobody can use a server whose address was not printed.
    if (std::fflush(stdout) != 0 || std::ferror(stdout))
      throw IoError(fmt::format("the address could not be printed ({}); the playground did not start", std::strerror(errno)));

    std::atomic<bool> signalled{false};
    std::thread waiter{[&] {
      int signal = 0;
      sigwait(&signals, &signal);
      signalled = true;
      server.stop();
    }};
    // The waiter waits for a signal to this process: when serving ends otherwise, send one.
    const auto release = [&] {
      if (!signalled) ::kill(::getpid(), SIGTERM);
      waiter.join();
    };
    try {
      server.run();
    } catch (...) {
      release();
      throw;
    }
    release();
  });
}
