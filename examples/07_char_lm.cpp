// A character-level language model: a small GPT (token and learned position embeddings, causal
// pre-LayerNorm Transformer blocks, a last LayerNorm and a linear head) trained on Debian's fortunes
// to predict each next character, with AdamW, warmup then cosine decay over the run's optimizer
// steps, gradient accumulation, clipping and (with --amp) mixed precision. Each epoch prints the
// validation loss, its bits per character and a generated sample.
//
//   07_char_lm [--epochs 1] [--data FILE_OR_FOLDER] [--batch-size 16] [--accumulate 4] [--amp[=f16|bf16]]
//              [--lr 2e-3] [--block-size 128] [--width 128] [--layers 4] [--heads 4] [--dropout 0.1]
//              [--max-blocks N] [--prompt TEXT] [--sample-tokens 300] [--seed 0] [--device ...] [--report PATH]
//              [--save-model PATH]
//   07_char_lm --generate-from PATH [--prompt TEXT] [--sample-tokens 300] [--seed 0]
//
// --save-model writes the trained model with its vocabulary (Sequential::set_vocabulary);
// --generate-from loads such a file and only generates a sample, with none of the training's code.
// The last line is "Validation loss: X", the mean cross-entropy per character in nats.

#include <cmath>
#include <limits>
#include <numbers>

#include "example_options.hpp"

using namespace accrue;

namespace {

// The blocks of --data (or the fortunes), the first `max_blocks` of each part when it is not 0;
// a text that leaves no validation block is refused now, not after an epoch of training.
datasets::TextData read_text(const std::string& path, std::int64_t block_size, std::int64_t max_blocks) {
  const datasets::TextOptions text{.block_size = block_size};
  datasets::TextData data = path.empty() ? datasets::fortunes(text) : datasets::text_file(path, text);
  if (max_blocks > 0) {
    data.train = data.train.take(max_blocks);
    data.validation = data.validation.take(std::min(max_blocks, data.validation.size()));
  }
  ACCRUE_CHECK(!data.validation.empty(),
               "{}: the last {:.0f}% of its {} characters make no validation block of {} and its next one; give more "
               "text or a smaller --block-size",
               path.empty() ? datasets::fortunes_folder() : path, 100 * text.validation_fraction, data.tokens,
               block_size);
  return data;
}

// --prompt as tokens, refused before training when the text's vocabulary cannot encode it.
std::vector<std::int32_t> prompt_tokens(const datasets::Vocabulary& vocabulary, const std::string& prompt) {
  try {
    return vocabulary.encode(prompt);
  } catch (const ValueError& e) {
    throw ValueError(fmt::format("--prompt \"{}\": {} of the training text; start it with characters the text holds",
                                 prompt, e.what()));
  }
}

// --generate-from: a sample from a model saved with its vocabulary, without the training text.
void generate_with_saved_model(const std::string& path, const std::string& prompt, std::int64_t tokens, std::uint64_t seed) {
  Model saved = load_model(path);
  ACCRUE_CHECK(saved.vocabulary() != nullptr, "--generate-from {}: the model holds no vocabulary to encode --prompt", path);
  const std::vector<std::int32_t> start = prompt_tokens(*saved.vocabulary(), prompt);
  fmt::print("{}{}\n", prompt,
             saved.vocabulary()->decode(saved.generate(start, {.max_tokens = tokens, .temperature = 0.8f, .top_k = 20, .seed = seed})));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Train a character-level GPT on Debian's fortunes"};
  examples::ExampleOptions common{.epochs = 1};
  std::int64_t batch_size = 16, block_size = 128, width = 128, heads = 4, max_blocks = 0, sample_tokens = 300;
  int accumulate = 4, blocks = 4, verbose = 1;
  double lr = 2e-3, dropout = 0.1;
  std::string prompt = "The ";
  constexpr auto most_int = static_cast<std::uint64_t>(std::numeric_limits<int>::max());
  constexpr auto most_int64 = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  common.add_to(app, "A text file, or a folder of them, to train on (default: the fortunes in $ACCRUE_FORTUNES_DIR or "
                     "/usr/share/games/fortunes)");
  common.add_report_flag(app);
  app.add_option("--batch-size", batch_size, "Sequences per micro-batch")->check(examples::whole_number(1, most_int64));
  app.add_option("--accumulate", accumulate, "Micro-batches per optimizer step")->check(examples::whole_number(1, most_int));
  app.add_option("--lr", lr, "AdamW's peak learning rate")->check(examples::finite_number(0));
  app.add_option("--block-size", block_size, "Characters of context")->check(examples::whole_number(2, 4096));
  app.add_option("--width", width, "Width of the model")->check(examples::whole_number(1, 65536));
  app.add_option("--layers", blocks, "Transformer blocks")->check(examples::whole_number(1, 1024));
  app.add_option("--heads", heads, "Attention heads (dividing the width)")->check(examples::whole_number(1, 1024));
  app.add_option("--dropout", dropout, "Dropout in the blocks")->check(examples::finite_number(0));
  app.add_option("--max-blocks", max_blocks, "Train on the first N blocks and validate on at most N (0: all)")
      ->check(examples::whole_number(0, most_int64));
  app.add_option("--prompt", prompt, "The start of each generated sample")->capture_default_str();
  app.add_option("--sample-tokens", sample_tokens, "Characters generated after each epoch")
      ->check(examples::whole_number(0, most_int64));
  app.add_option("--verbose", verbose, "0 silent, 1 progress bar on a terminal, 2 one line per epoch")
      ->check(examples::whole_number(0, 2));

  std::string save_model, generate_from;
  app.add_option("--save-model", save_model, "Write the trained model and its vocabulary to this safetensors file");
  app.add_option("--generate-from", generate_from, "Load a model written by --save-model and only generate a sample");

  return examples::run_example(app, argc, argv, [&] {
    ACCRUE_CHECK(dropout < 1.0, "--dropout: {} is not below 1", dropout);
    ACCRUE_CHECK(width % heads == 0, "--heads: {} heads do not divide the width {}", heads, width);
    ACCRUE_CHECK(sample_tokens == 0 || !prompt.empty(),
                 "--prompt: empty; a sample needs at least one character to start from (or --sample-tokens 0)");
    if (!generate_from.empty()) return generate_with_saved_model(generate_from, prompt, sample_tokens, common.seed);
    const examples::ExampleOptions::Inputs text{{common.data.empty() ? datasets::fortunes_folder() : common.data, "the training text"}};
    common.check_report(text);
    if (!save_model.empty()) require_output_file(save_model, "--save-model", text);
    manual_seed(common.seed);
    const datasets::TextData data = read_text(common.data, block_size, max_blocks);
    const std::vector<std::int32_t> start = sample_tokens > 0 ? prompt_tokens(data.vocabulary, prompt)
                                                              : std::vector<std::int32_t>{};
    const std::int64_t V = data.vocabulary.size();
    if (common.speaks())
      fmt::print("{} characters, a vocabulary of {}; {} training and {} validation blocks of {}\n", data.tokens, V,
                 data.train.size(), data.validation.size(), block_size);

    Sequential model{layers::Input{block_size}, layers::Embedding{V, width}, layers::PositionalEmbedding{block_size}};
    for (int i = 0; i < blocks; ++i)
      model.add(layers::TransformerBlock{heads, width, {.dropout = static_cast<float>(dropout), .causal = true}});
    model.add(layers::LayerNorm{});
    model.add(layers::Dense{V});
    model.to(common.target());
    model.compile(common.with_amp(optim::AdamW{.lr = lr, .weight_decay = 0.1}.accumulate(accumulate).clip(1.0)),
                  losses::CrossEntropy{});
    if (common.speaks()) model.summary();

    auto each_epoch = callbacks::Lambda{{.epoch_end = [&](int epoch, Logs& logs) {
      logs.set("val_bits_per_character", logs.at("val_loss") / std::numbers::ln2);
      if (!common.speaks()) return;
      fmt::print("epoch {}: validation loss {:.4f} nats per character, {:.3f} bits per character\n", epoch + 1,
                 logs.at("val_loss"), logs.at("val_bits_per_character"));
      if (sample_tokens > 0)
        fmt::print("sample: {}{}\n", prompt,
                   data.vocabulary.decode(model.generate(
                       start, {.max_tokens = sample_tokens, .temperature = 0.8f, .top_k = 20, .seed = common.seed})));
    }}};
    const History history = model.fit(
        data.train, {.epochs = common.epochs, .batch_size = batch_size, .validation = data.validation,
                     .schedule = schedules::warmup_cosine({.warmup_ratio = 0.05, .min_lr_ratio = 0.1}),
                     .callbacks = common.callbacks({each_epoch}), .seed = common.seed, .verbose = verbose,
                     .distributed = common.distributed});
    if (common.speaks()) fmt::print("Validation loss: {:.4f}\n", history.last("val_loss"));
    if (!save_model.empty() && common.speaks()) {
      model.set_vocabulary(data.vocabulary);
      model.save(save_model);
      fmt::print("Saved the model and its vocabulary to {}\n", save_model);
    }
  });
}
