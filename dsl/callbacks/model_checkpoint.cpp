#include "model_checkpoint.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>

#include "../json_state.hpp"
#include "../model.hpp"
#include "../../framework/optim/optimizer.hpp"
#include "../../framework/optim/recipe.hpp"

namespace accrue::callbacks {

ModelCheckpoint::ModelCheckpoint(std::string folder, ModelCheckpointOptions options)
    : folder_(std::move(folder)),
      options_(std::move(options)),
      best_(options_.monitor, options_.mode, /*min_delta=*/0.0, "ModelCheckpoint") {
  ACCRUE_CHECK(!folder_.empty(), "ModelCheckpoint: the folder is empty");
  ACCRUE_CHECK(options_.every >= 1, "ModelCheckpoint: every must be at least 1, got {}", options_.every);
}

std::string ModelCheckpoint::last_path() const { return (std::filesystem::path(folder_) / "last.safetensors").string(); }
std::string ModelCheckpoint::best_path() const { return (std::filesystem::path(folder_) / "best.safetensors").string(); }

void ModelCheckpoint::on_train_begin(TrainingContext& context) {
  context_ = &context;
  if (options_.keep_best) best_.resolve(context.log_directions);
  best_.set_best(std::nullopt);
  best_epoch_.reset();
  const auto& average = context.recipe->weight_average();
  ACCRUE_CHECK(average || options_.averaged != true,
               "ModelCheckpoint: averaged = true saves the weight average, but the recipe keeps none (add .ema() or .swa())");
  saves_average_ = average && options_.averaged.value_or(average->validate);
  // Every process tracks the best epoch (their logs are the same); one writes the files.
  if (context.rank != 0) return;
  std::error_code ec;
  std::filesystem::create_directories(folder_, ec);
  if (ec) throw IoError(fmt::format("ModelCheckpoint: cannot create {} ({})", folder_, ec.message()));
}

void ModelCheckpoint::on_epoch_end(int epoch, Logs& logs) {
  const bool writes = context_->rank == 0;
  if (writes && ((epoch + 1) % options_.every == 0 || epoch + 1 == context_->epochs))
    save(last_path());
  if (!options_.keep_best) return;
  const auto value = logs.get(options_.monitor);
  ACCRUE_CHECK(value.has_value(), "ModelCheckpoint keeps the best '{}', which the epoch's logs do not have ({}); pass "
                                  "validation data or monitor \"loss\"",
               options_.monitor, logs.str());
  if (best_.improves(*value)) {
    best_.set_best(*value);
    best_epoch_ = epoch;
    if (writes) save(best_path());
  }
}

void ModelCheckpoint::save(const std::string& path) const {
  const optim::AverageInParameters averaged{*context_->optimizer, saves_average_};
  context_->model->save_weights(path);
}

std::optional<CallbackState> ModelCheckpoint::state() const {
  nlohmann::json j = nlohmann::json::object();
  if (best_.best()) j["best"] = *best_.best();
  if (best_epoch_) j["best_epoch"] = *best_epoch_;
  return CallbackState{j.dump(), {}};
}

void ModelCheckpoint::load_state(const CallbackState& state) {
  detail::read_json_state("ModelCheckpoint", state.text, [&](const nlohmann::json& j) {
    const auto best = j.contains("best") ? std::optional{j["best"].get<double>()} : std::nullopt;
    const auto best_epoch = j.contains("best_epoch") ? std::optional{detail::json_integer<int>(j["best_epoch"], "ModelCheckpoint: best_epoch")} : std::nullopt;
    best_.set_best(best);
    best_epoch_ = best_epoch;
  });
}

}  // namespace accrue::callbacks
