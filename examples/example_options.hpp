#pragma once
// What every example shares, so that they cannot drift apart:
//   - the flags --epochs, --data, --seed, --device and --amp, with the same meaning everywhere;
//   - checks that make a bad value an error naming the flag and the range ("--epochs: 0 is not a
//     whole number from 1 to 2147483647"), never a value silently clamped or ignored;
//   - the last line, "Accuracy: X%";
//   - the exit status: 0; 1 for any error, including output that could not be written (a full
//     disk, a closed pipe, a broken stderr); 128 + the signal when SIGINT (Ctrl-C) or SIGTERM
//     stopped training (130 for Ctrl-C, as a shell reports it).

#include <CLI/CLI.hpp>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <accrue/accrue.hpp>
#include <cerrno>
#include <csignal>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <new>
#include <optional>
#include <string>
#include <string_view>

namespace accrue::examples {

/// `text` as a whole number in [low, high], written in digits only (no sign, no exponent, no
/// fraction), so that "-1" or "1e23" is refused rather than wrapped or clamped; none otherwise.
inline std::optional<std::uint64_t> parse_whole_number(std::string_view text, std::uint64_t low, std::uint64_t high) {
  std::uint64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || stop != end || error != std::errc{} || value < low || value > high) return std::nullopt;
  return value;
}

/// A flag's value must be a whole number in [low, high] (parse_whole_number).
inline CLI::Validator whole_number(std::uint64_t low, std::uint64_t high) {
  return CLI::Validator(
      [low, high](std::string& text) -> std::string {
        if (!parse_whole_number(text, low, high)) return fmt::format("{} is not a whole number from {} to {}", text, low, high);
        return {};
      },
      fmt::format("INT in [{}, {}]", low, high));
}

/// A flag's value must be a finite number of at least `low`, and at most `high` when given ("nan"
/// and "inf" are refused).
inline CLI::Validator finite_number(double low, std::optional<double> high = std::nullopt) {
  return CLI::Validator(
      [low, high](std::string& text) -> std::string {
        char* stop = nullptr;
        errno = 0;
        const double value = std::strtod(text.c_str(), &stop);
        if (text.empty() || *stop != '\0' || errno == ERANGE || !std::isfinite(value) || value < low || (high && value > *high))
          return high ? fmt::format("{} is not a finite number from {} to {}", text, low, *high)
                      : fmt::format("{} is not a finite number of at least {}", text, low);
        return {};
      },
      high ? fmt::format("NUMBER in [{}, {}]", low, *high) : fmt::format("NUMBER >= {}", low));
}

/// The tutorial's MLP: 784 -> 512 -> 512 -> 10 with ReLU between.
inline Sequential tutorial_mlp() {
  return Sequential{layers::Input{1, 28, 28}, layers::Flatten{}, layers::Dense{512}, layers::ReLU{},
                    layers::Dense{512},       layers::ReLU{},    layers::Dense{10}};
}

/// The CNN of 05_fashion_mnist_cnn, 06_data_parallel and the playground: two blocks of 3x3 convolution (same size), ReLU and
/// 2x2 max-pooling, then 128 -> 10.
inline Sequential tutorial_cnn() {
  return Sequential{layers::Input{1, 28, 28},
                    layers::Conv2d{32, 3, {.padding = layers::same}}, layers::ReLU{}, layers::MaxPool2d{2},
                    layers::Conv2d{64, 3, {.padding = layers::same}}, layers::ReLU{}, layers::MaxPool2d{2},
                    layers::Flatten{}, layers::Dense{128}, layers::ReLU{}, layers::Dense{10}};
}

/// --export-onnx: writes `model` to `path` and, where ONNX Runtime is installed, checks it there on
/// `inputs` (none: OnnxExportOptions' own samples); prints what each layer became.
inline void export_to_onnx(Model& model, const std::string& path, const Tensor& inputs = {}) {
  std::string why;
  const bool runtime = !onnx::onnxruntime_folder(&why).empty();
  const OnnxExport exported = model.export_onnx(path, {.verify = runtime, .verify_inputs = inputs});
  fmt::print("Exported the model to {}\n{}", path, exported.str());
  if (!runtime) fmt::print("Not run in ONNX Runtime: {}\n", why);
}

/// The flags every example takes.
struct ExampleOptions {
  int epochs = 1;
  std::string data;
  std::uint64_t seed = 0;
  std::string device = "best";
  std::string amp = "off";
  bool distributed = false;
  std::string report;
  CLI::Option* report_flag_ = nullptr;
  // The --report page callbacks() made, kept to link files made after training.
  mutable std::shared_ptr<callbacks::Report> report_page_;
  const CLI::App* app_ = nullptr;

  /// Adds --epochs (with this object's value as the default), --data (described by `data_help`),
  /// --seed, --device, --amp and --distributed.
  void add_to(CLI::App& app, const std::string& data_help = "Folder with the FashionMNIST IDX files (default: "
                                                            "$ACCRUE_FASHION_MNIST_DIR or /usr/share/datasets/fashion-mnist)") {
    app.add_option("--epochs", epochs, "Passes over the training set")
        ->check(whole_number(1, std::numeric_limits<int>::max()))
        ->capture_default_str();
    app.add_option("--data", data, data_help);
    app.add_option("--seed", seed, "Seed of initialisation and shuffling")
        ->check(whole_number(0, std::numeric_limits<std::uint64_t>::max()))
        ->capture_default_str();
    app.add_option("--device", device, "Where to train: best (a GPU when there is one), cpu, cuda, cuda:N")
        ->capture_default_str();
    app.add_flag("--amp{auto}", amp,
                 "Mixed precision (off by default): --amp (bfloat16 on the CPU, float16 on a GPU), --amp=f16, --amp=bf16")
        ->check(CLI::IsMember({"off", "auto", "f16", "bf16"}));
    app.add_flag("--distributed", distributed,
                 "Train over the processes mpirun started (mpirun -np 2 ...): each trains its share of every batch");
  }

  /// Adds --report PATH (the examples that train one model take it).
  void add_report_flag(CLI::App& app) {
    app_ = &app;
    report_flag_ = app.add_option("--report", report,
                                  "Write an HTML report of the training to PATH (and its data as JSON lines beside "
                                  "it), rewritten at every epoch's end");
  }

  /// What a run reads, each with what it is for messages: outputs must not overwrite them.
  using Inputs = std::vector<std::pair<std::string, std::string>>;
  /// The FashionMNIST folder --data names (or the default one), as Inputs.
  Inputs fashion_mnist_inputs() const { return {{datasets::fashion_mnist_folder(data), "the training data"}}; }

  /// Refuses, before any work, a --report that names nothing, cannot be written, or would replace
  /// what must stay: a device (/dev/null), a folder, or one of `inputs`; its JSON lines too when the
  /// report has them (callbacks::Report).
  void check_report(const Inputs& inputs, bool json_lines = true) const {
    if (report_flag_ != nullptr && report_flag_->count() > 0 && report.empty())
      throw ValueError("--report: the path is empty; name the HTML file to write");
    if (report.empty()) return;
    const callbacks::Report page{report};
    require_output_file(page.path(), "--report", inputs);
    if (json_lines) require_output_file(page.json_lines_path(), "--report's JSON lines", inputs);
  }

  /// The callbacks these flags ask for (callbacks::Report for --report), with `more` after them.
  std::vector<CallbackHandle> callbacks(std::vector<CallbackHandle> more = {}) const {
    if (!report.empty()) {
      report_page_ = std::make_shared<callbacks::Report>(report, callbacks::ReportOptions{.title = run_name()});
      more.insert(more.begin(), report_page_);
    }
    return more;
  }
  /// The run's name for its report: the program and the flags given, "02_accumulation_tutorial
  /// --epochs 3 --amp" (the report's own path left out).
  std::string run_name() const {
    std::string name = program_invocation_short_name;
    if (app_ == nullptr) return name;
    for (const CLI::Option* option : app_->get_options()) {
      if (option->count() == 0 || option == report_flag_) continue;
      name += " " + option->get_name();
      for (const std::string& value : option->results())
        if (!value.empty() && value != "true") name += " " + value;
    }
    return name;
  }

  /// Prints "Accuracy: 84.3%" (the line every example ends with) and shows it as the test accuracy in
  /// the --report page's header.
  void print_accuracy(double accuracy) const {
    fmt::print("Accuracy: {:.1f}%\n", 100.0 * accuracy);
    if (report_page_) report_page_->result("test accuracy", accuracy);
  }

  /// Links `path` from the --report page (callbacks::Report::link), when there is one.
  void link_in_report(const std::string& label, const std::string& path) const {
    if (report_page_) report_page_->link(label, path);
  }

  /// Whether this process prints and writes files: the first of a distributed run, or the only one.
  bool speaks() const { return !distributed || distributed::world().rank() == 0; }

  /// The device --device names (a clear error for a name that is none); in a distributed run
  /// "best" and "cuda" give each process on a machine its own GPU, cuda:local_rank.
  Device target() const {
    const Device d = Device::parse(device);
    if (!distributed || d.is_cpu() || (device != "best" && device != "cuda")) return d;
    return Device::cuda(distributed::local_rank() % std::max(1, Device::cuda_device_count()));
  }

  /// `recipe` with the mixed precision --amp asks for.
  optim::Recipe with_amp(optim::Recipe recipe) const {
    if (amp == "auto") return recipe.amp();
    if (amp == "f16") return recipe.amp(dtype::f16);
    if (amp == "bf16") return recipe.amp(dtype::bf16);
    return recipe;
  }
};

/// --save-model and --export-onnx, as the training examples take them: checked before training
/// (each can be written, they differ, neither is an input), written after it.
struct ModelOutputs {
  std::string save_model, export_onnx;

  void add_to(CLI::App& app) {
    app.add_option("--save-model", save_model, "Write the trained model to this safetensors file (load_model, 12_predict)");
    app.add_option("--export-onnx", export_onnx, "Write the trained model to this ONNX file, checked in ONNX Runtime where installed");
  }
  /// Before any work: refuses outputs that would replace one of `inputs` or each other.
  void check(const ExampleOptions::Inputs& inputs) const {
    if (!save_model.empty()) require_output_file(save_model, "--save-model", inputs);
    if (!export_onnx.empty()) require_output_file(export_onnx, "--export-onnx", inputs);
    require_distinct_outputs({{save_model, "--save-model"}, {export_onnx, "--export-onnx"}});
  }
  /// After training: what was asked for, the export checked on `samples` (export_to_onnx), each
  /// linked in the --report page of `common`.
  void write(Model& model, const ExampleOptions& common, const Tensor& samples = {}) const {
    if (!save_model.empty()) {
      model.save(save_model);
      fmt::print("Saved the model to {}\n", save_model);
      common.link_in_report("the whole model", save_model);
    }
    if (!export_onnx.empty()) {
      export_to_onnx(model, export_onnx, samples);
      common.link_in_report("ONNX model", export_onnx);
    }
  }
};

namespace detail {
// Under mpirun, a process's standard output is a pipe to mpirun, which writes it on and exits 0
// whatever became of it: what mpirun's own standard output cannot take (/dev/full, a full disk,
// closed), found from /proc before any work. Nothing when the parent is not mpirun.
inline std::optional<std::string> launcher_output_problem() {
  if (!distributed::launched_by_mpi()) return std::nullopt;
  const std::string parent = fmt::format("/proc/{}", ::getppid());
  std::string name;
  if (std::FILE* comm = std::fopen((parent + "/comm").c_str(), "r")) {
    char text[64] = {};
    if (std::fgets(text, sizeof text, comm) != nullptr) name = text;
    std::fclose(comm);
  }
  name = name.substr(0, name.find('\n'));
  if (name != "mpirun" && name != "mpiexec" && name != "orterun" && name != "prterun") return std::nullopt;
  struct stat out {};
  if (::stat((parent + "/fd/1").c_str(), &out) != 0)
    return errno == ENOENT ? std::optional<std::string>{"mpirun's standard output is closed"} : std::nullopt;
  if (S_ISCHR(out.st_mode) && major(out.st_rdev) == 1 && minor(out.st_rdev) == 7)
    return "mpirun's standard output is /dev/full: nothing printed can be written";
  struct statvfs space {};
  if (S_ISREG(out.st_mode) && ::statvfs((parent + "/fd/1").c_str(), &space) == 0 && space.f_bavail == 0)
    return "no space is left on the disk of mpirun's standard output";
  return std::nullopt;
}

// A message on stderr when it can still be written; a failure to write it changes nothing else.
inline void report(const std::string& message) {
  std::fputs(message.c_str(), stderr);
  std::fputc('\n', stderr);
  std::fflush(stderr);
}
}  // namespace detail

/// Parses the flags and runs `train`, returning the process's exit status as the header says.
inline int run_example(CLI::App& app, int argc, char** argv, const std::function<void()>& train) {
  // A closed stdin, stdout or stderr would let the next file opened take its number, and messages
  // meant for the terminal would land in a checkpoint or weights file: point them at /dev/null.
  // Output that has nowhere to go is an error found now, not after training.
  // A closed pipe (`| head`) makes writes fail with EPIPE, reported below as output that could not
  // be written, rather than SIGPIPE ending the process without a word (status 141).
  std::signal(SIGPIPE, SIG_IGN);
  bool closed[3] = {};
  for (int fd = 0; fd <= 2; ++fd) {
    closed[fd] = ::fcntl(fd, F_GETFD) == -1 && errno == EBADF;
    if (closed[fd]) ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
  }
  if (closed[1]) {
    detail::report("error: the output could not be written (standard output is closed)");
    return 1;
  }
  // Before MPI starts, so that every process ends at once.
  if (const std::optional<std::string> problem = detail::launcher_output_problem()) {
    detail::report(fmt::format("error: the output could not be written ({})", *problem));
    return 1;
  }
  // Every flag's help shows its default ("--batch-size ...=64"), whichever example added it.
  for (CLI::Option* option : app.get_options())
    if (option->get_name() != "--help" && option->get_default_str().empty()) option->capture_default_str();
  app.set_version_flag("--version", [] { return build_info().str(); }, "Print the build of Accrue and what it runs with here");
  int status = 0;
  try {
    app.parse(argc, argv);
    train();
  } catch (const CLI::ParseError& e) {
    // --help prints and ends well; any other mistake in the flags is an error.
    status = app.exit(e) == 0 ? 0 : 1;
  } catch (const Interrupted& e) {
    detail::report(fmt::format("stopped: {}", e.what()));
    status = e.exit_status();
  } catch (const std::bad_alloc&) {  // an allocation outside Accrue's accounting (a library's, a container's)
    detail::report("error: out of memory: the system refused an allocation (std::bad_alloc)");
    status = 1;
  } catch (const std::exception& e) {  // accrue::Error, and std::system_error from output that failed
    detail::report(fmt::format("error: {}", e.what()));
    status = 1;
  }
  const bool flushed = std::fflush(stdout) == 0;
  const int flush_error = errno;
  if (!flushed || std::ferror(stdout)) {
    detail::report(fmt::format("error: the output could not be written ({})",
                               flushed ? "an earlier write failed" : std::strerror(flush_error)));
    if (status == 0) status = 1;
  }
  return status;
}

}  // namespace accrue::examples
