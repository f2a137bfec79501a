// The smallest program that serves a saved model: one file, linking only accrue::accrue. It loads
// the model once and answers requests from several threads at once, each request an image file
// given to the model as it was read (its preprocessing is inside the model: 10_image_folder
// --save-model). What it answers is what the model's signature says it gives: the most probable
// class by name.
//
//   17_serve MODEL [--threads 4] [--latency N] FILE...
//
// Prints "FILE: CLASS (p%)" for each file, in the order given, whichever thread answered it.
// --latency N measures, N times each and as the medians: one image answered at batch 1 (read and
// decoded, then predicted), and a batch of 8 images of one size predicted together.

#include <accrue/accrue.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

using namespace accrue;

namespace {

struct Answer {
  std::string name;
  float probability = 0.0f;
};

// One request: the file read as the model takes it, its most probable class.
Answer answer(Model& model, const std::string& file) {
  const Tensor image = datasets::read_image_pixels(file);
  const Tensor logits = model.predict(image.reshape(image.shape().prepend(1)));
  const std::vector<float> p = ops::softmax(logits, -1).to_vector();
  const auto best = static_cast<std::size_t>(std::max_element(p.begin(), p.end()) - p.begin());
  const std::vector<std::string>& names = model.class_names();
  // A folder's name, escaped: it must not move the terminal's cursor.
  return {best < names.size() ? printable_name(names[best]) : fmt::format("class {}", best), p[best]};
}

double median_ms(std::vector<double> times) {
  std::sort(times.begin(), times.end());
  return times[times.size() / 2] * 1e3;
}

double seconds_of(const std::function<void()>& work) {
  const auto start = std::chrono::steady_clock::now();
  work();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void measure_latency(Model& model, const std::string& file, int repeats) {
  std::vector<double> one, eight;
  const Tensor image = datasets::read_image_pixels(file);
  const Tensor batch = ops::cat(std::vector<Tensor>(8, image.reshape(image.shape().prepend(1))), 0);
  for (int r = 0; r < repeats; ++r) {
    one.push_back(seconds_of([&] { answer(model, file); }));
    eight.push_back(seconds_of([&] { model.predict(batch); }));
  }
  fmt::print("Latency, median of {}: {:.2f} ms per image at batch 1 (read, decoded, predicted); {:.2f} ms per batch of 8 "
             "({:.2f} ms per image)\n",
             repeats, median_ms(one), median_ms(eight), median_ms(eight) / 8);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::vector<std::string> args(argv + 1, argv + argc), files;
    int threads = 4, repeats = 0;
    for (std::size_t i = 0; i < args.size(); ++i) {
      if ((args[i] == "--threads" || args[i] == "--latency") && i + 1 < args.size()) {
        const int value = std::atoi(args[i + 1].c_str());
        if (value < 1 || value > 1024) throw ValueError(fmt::format("{} {}: give a number from 1 to 1024", args[i], args[i + 1]));
        (args[i] == "--threads" ? threads : repeats) = value;
        ++i;
      } else {
        files.push_back(args[i]);
      }
    }
    if (files.size() < 2) throw ValueError("usage: 17_serve MODEL [--threads 4] [--latency N] FILE...");
    Model model = load_model(files.front());
    if (!model.takes_any_image_size())
      throw ValueError(fmt::format("{} takes samples of {}, not images of any size: 17_serve serves models that resize "
                                   "images themselves (Resizing, CenterCrop); 12_predict resizes files for the others",
                                   files.front(), model.input_shape()->str()));
    files.erase(files.begin());
    fmt::print("{}", model.signature().str());

    // The requests in a shared queue, each thread taking the next; answers kept in request order.
    std::vector<Answer> answers(files.size());
    std::vector<std::string> errors(files.size());
    std::atomic<std::size_t> next{0};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&] {
        for (std::size_t i; (i = next.fetch_add(1)) < files.size();) {
          try {
            answers[i] = answer(model, files[i]);
          } catch (const Error& e) {
            errors[i] = e.what();  // a bad file is that request's answer, not the server's end
          }
        }
      });
    for (std::thread& t : pool) t.join();
    for (std::size_t i = 0; i < files.size(); ++i) {
      if (errors[i].empty()) fmt::print("{}: {} ({:.1f}%)\n", files[i], answers[i].name, 100.0 * answers[i].probability);
      else fmt::print("{}: error: {}\n", files[i], errors[i]);
    }
    if (repeats > 0) measure_latency(model, files.front(), repeats);
    return std::any_of(errors.begin(), errors.end(), [](const std::string& e) { return !e.empty(); }) ? 1 : 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "17_serve: {}\n", e.what());
    return 1;
  }
}
