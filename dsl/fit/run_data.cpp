#include "run_data.hpp"

#include "../../datasets/batch_queue.hpp"
#include "../../framework/distributed/communicator.hpp"

namespace accrue::detail {

RunAccumulation resolve_accumulation(const Model& model, const TrainerOptions& options) {
  const optim::Recipe& recipe = model.recipe();
  if (options.accumulate.is_set() && recipe.accumulates())
    throw ValueError(fmt::format("accumulation is set twice: in compile() ({}) and in the fit/Trainer options ({}); "
                                 "set it in one place",
                                 recipe.accumulation().str(), options.accumulate.str()));
  if (options.accumulate.is_set()) return {options.accumulate, options.accumulate_options};
  if (recipe.accumulates() && options.accumulate_options != AccumulateOptions{})
    throw ValueError(fmt::format("accumulate_options in the fit/Trainer options go with their accumulate, and compile() "
                                 "set accumulation ({}); pass the options there: .accumulate({}, {{...}})",
                                 recipe.accumulation().str(), recipe.accumulation().str()));
  return {recipe.accumulation(), recipe.accumulate_options()};
}

StepPlan plan_run(const Model& model, const TrainerOptions& options, std::int64_t train_size,
                  std::int64_t micro_batch, int accumulation_factor) {
  ACCRUE_CHECK(model.compiled(), "the model is not compiled: call model.compile(optimizer, loss, metrics) first");
  const auto [schedule, accumulate] = resolve_accumulation(model, options);
  const int processes = options.distributed ? distributed::world().size() : 1;
  return StepPlan{{.dataset_size = train_size,
                   .micro_batch = micro_batch * processes,
                   .drop_last = options.drop_last,
                   .epochs = options.epochs,
                   .schedule = accumulation_factor > 1 ? schedule.scaled(accumulation_factor) : schedule,
                   .last_window = accumulate.last_window}};
}

RunData::RunData(const Dataset& train, const TrainerOptions& options) : train_(train), options_(options) {
  if (!train.in_memory()) read_ahead_ = batches_read_ahead({.workers = options.data_workers});
}

void RunData::plan(const Model& model, std::int64_t micro_batch, int accumulation_factor) {
  plan_ = plan_run(model, options_, train_.size(), micro_batch, accumulation_factor);
  micro_batch_ = micro_batch;
}

void RunData::load(std::uint64_t seed, int rank, int processes, Device device) {
  ACCRUE_ASSERT(plan_.has_value());
  batches_.reset();  // before the loader it reads from
  loader_ = std::make_unique<DataLoader>(train_, LoaderOptions{.batch_size = micro_batch_,
                                                               .shuffle = options_.shuffle,
                                                               .seed = seed,
                                                               .drop_last = options_.drop_last,
                                                               .shard = rank,
                                                               .shards = processes});
  batches_ = std::make_unique<DeviceBatches>(*loader_, device, BatchQueueOptions{.workers = options_.data_workers});
}

std::vector<EpochWindow> RunData::begin_epoch(int epoch, std::int64_t from) {
  loader_->set_epoch(epoch);
  batches_->reset();
  epoch_micro_batches_ = static_cast<std::int64_t>(plan_->epoch_slots(epoch).size());
  return plan_->epoch_run(epoch, from);
}

Batch RunData::get(std::int64_t index) {
  const std::int64_t next = index + 1;
  return batches_->get(index, next < epoch_micro_batches_ ? std::optional{next} : std::nullopt);
}

}  // namespace accrue::detail
