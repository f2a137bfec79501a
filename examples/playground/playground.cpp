// The workshop's playground with real training: one page on http://127.0.0.1:8080/ where micro-batch,
// accumulation, a memory cap, .amp() and the loss normalization are chosen, the memory plan is drawn
// against the cap before running, and a run of the tutorial's MLP or CNN on FashionMNIST streams its
// micro-batches, optimizer steps, loss, learning rate and memory to every page that watches. The
// HTTP API behind the page is in playground_server.hpp and the README.
//
//   playground [--host 127.0.0.1] [--port 8080] [--data DIR] [--device best|cpu|cuda]
//
// --port 0 takes a free port; the first line printed names the address. Ctrl-C or SIGTERM stops
// the run and the server.

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "../example_options.hpp"
#include "playground_server.hpp"

namespace accrue::detail {
std::string_view playground_page();  // playground.html, compiled in by CMake
}

using namespace accrue;

int main(int argc, char** argv) {
  CLI::App app{"Real training of the tutorial's model, watched in a browser"};
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string data, device = "best";
  app.add_option("--host", host, "Address to listen on; other than loopback, requests from other machines are answered")
      ->capture_default_str();
  app.add_option("--port", port, "Port to listen on (0: a free one)")
      ->check(examples::whole_number(0, 65535))
      ->capture_default_str();
  app.add_option("--data", data,
                 "Folder with the FashionMNIST IDX files (default: $ACCRUE_FASHION_MNIST_DIR or "
                 "/usr/share/datasets/fashion-mnist)");
  app.add_option("--device", device, "Where to train: best, cpu, cuda, cuda:N")->capture_default_str();

  return examples::run_example(app, argc, argv, [&] {
    ACCRUE_CHECK(!host.empty(), "--host: an empty address; give one such as 127.0.0.1 or 0.0.0.0");
    // SIGINT and SIGTERM go to one thread that stops the server; every other thread blocks them.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);

    const Dataset train = datasets::fashion_mnist(data).train;
    const Device target = Device::parse(device);
    const bool loopback_only = host == "127.0.0.1" || host == "localhost" || host == "::1";
    playground::Playground playground{train, target};
    playground::http::Server server{{.remote_allowed = !loopback_only}};
    const nlohmann::json page_data{
        {"defaults", playground::Settings{}.to_json()}, {"samples", train.size()}, {"device", target.str()}};
    playground.serve(server,
                     callbacks::fill_report_page(detail::playground_page(), "Accrue playground", page_data.dump()));
    const int bound = server.bind(host, port);
    fmt::print("Playground: http://{}:{}/ ({} training samples on {}; Ctrl-C stops)\n",
               host.find(':') != std::string::npos ? "[" + host + "]" : host, bound, train.size(), target.str());
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
