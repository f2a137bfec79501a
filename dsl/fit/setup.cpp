// Building, planning and preparing a run before its first window.

#include <algorithm>
#include <numeric>

#include "../callbacks/progress_bar.hpp"
#include "training_run.hpp"
#include "../../framework/optim/layerwise.hpp"
#include "../../kernels/gemm.hpp"
#include "../../framework/core/log.hpp"

namespace accrue::detail {

namespace {

// Warns once per run for each layer that normalizes with batch statistics over fewer samples than
// a window's: with accumulation the statistics are the micro-batch's, not the effective batch's, and
// in a distributed run this process's share of it unless the layer shares them (.sync = true).
void warn_batch_statistics(const Model& model, const StepPlan& plan, std::int64_t micro_batch, int processes) {
  const std::int64_t effective = plan.max_effective_batch();
  for (std::size_t i = 0; i < model.size(); ++i) {
    const Layer& l = model.layer(i);
    if (!l.uses_batch_statistics()) continue;
    const bool shared = processes > 1 && l.shares_batch_statistics();
    const std::int64_t covered = shared ? micro_batch * processes : micro_batch;
    if (covered >= effective) continue;
    const std::string samples =
        shared ? fmt::format("the global micro-batch of {} samples ({} from each of {} processes, .sync = true)", covered,
                             micro_batch, processes)
        : processes > 1 ? fmt::format("this process's {} samples of each micro-batch (not the {} of all {} processes: "
                                      "set .sync = true to share them)",
                                      micro_batch, micro_batch * processes, processes)
                        : fmt::format("each micro-batch of {} samples", micro_batch);
    log::warning("layer '{}' ({}) computes its statistics over {}, not over the effective batch of {}: accumulation "
                 "does not make its statistics those of a large batch. GroupNorm or LayerNorm normalize per sample "
                 "and behave the same under accumulation",
                 l.name(), l.type_name(), samples, effective);
  }
}

// The training data's class names (an image folder's, a CSV file's) for a model of one output that
// has none and gives one entry per class (or one for two classes), so that its file names them.
void take_class_names(Model& model, const Dataset& train) {
  const std::vector<std::string>& names = train.class_names();
  if (names.empty() || model.output_count() != 1 || !model.class_names().empty()) return;
  const Shape out = model.output_shape();
  const auto count = static_cast<std::int64_t>(names.size());
  if (out.rank() == 1 && (out[0] == count || (out[0] == 1 && count == 2))) model.set_class_names(names);
}

// The training table's columns of each input (datasets::csv) for a model that states none, so that
// its file says how to read a new file's rows. After arrange(): the dataset's inputs are the model's.
void take_table_columns(Model& model, const Dataset& train) {
  const std::vector<std::optional<TableColumns>>& tables = train.table_columns();
  if (tables.size() != model.input_count()) return;
  const ModelSignature stated = model.signature();
  for (std::size_t i = 0; i < tables.size(); ++i)
    if (tables[i] && !stated.inputs[i].table) model.set_table_columns(*tables[i], i);
}

}  // namespace

TrainingRun::TrainingRun(Model& model, const Dataset& train, std::optional<Dataset> validation,
                         const TrainerOptions& options, const std::string& resume_from)
    : model_(model),
      train_(train),
      validation_(std::move(validation)),
      options_(options),
      processes_(options.distributed),
      data_parallel_{.processes = processes_.size(),
                     .rank = processes_.rank(),
                     .shard = options.shard,
                     .accumulation = options.shard_accumulation,
                     .bucket_bytes = options.bucket_bytes},
      schedule_(options.schedule),
      checkpoints_(options.checkpoint, resume_from),
      data_(train_, options) {
  model.check_compiled("fit()");
  ACCRUE_CHECK(!train.empty(), "fit: the training set '{}' is empty", train.name());
  // Backing off changes one process's micro-batch when that process runs out of memory.
  ACCRUE_CHECK(!options.distributed || !options.backoff_on_oom,
               "fit: backoff_on_oom does not combine with distributed training yet (every process would have to back "
               "off together); set the micro-batch with memory_budget or batch_size instead");
  if (processes_.size() > 1) {
    prepare_on_every_process();
    return;
  }
  prepare_model();
  prepare_run();
}

// The model, the micro-batch, the optimizer and accumulation, the checkpoint folder and the
// checkpoint to continue from (process 0's choice in a distributed run).
void TrainingRun::prepare_model() {
  Model& model = model_;
  // Each dataset's inputs and targets as the model takes them (by name where the dataset names
  // them); in a distributed run a rank whose data does not fit is named by every rank.
  train_ = model.arrange(train_, "fit");
  if (validation_) validation_ = model.arrange(*validation_, "fit's validation");
  const Dataset& train = train_;
  const TrainerOptions& options = options_;
  const bool first = processes_.rank() == 0;
  if (model.input_count() == 1) model.build(train.sample_shape());  // a model of several inputs is built already
  take_class_names(model, train);
  take_table_columns(model, train);
  if (options.recompute) model.recompute(*options.recompute);  // before the budget plans the micro-batch
  state_.batch_size = options.batch_size;
  plan_memory();
  if (validation_)
    ACCRUE_CHECK_SHAPE(validation_->layout().inputs == train.layout().inputs,
                       "fit: validation samples '{}' are {}, training samples {}", validation_->name(),
                       validation_->layout().str(), train.layout().str());
  model.ensure_optimizer();
  optimizer_ = model.optimizer_.get();
  accumulation_ = resolve_accumulation(model, options);
  accumulation_.schedule.validate_for(state_.batch_size, processes_.size());
  // The folder is this run's from here on: a second run there is refused before it reads anything.
  // In a distributed run process 0 writes the checkpoints.
  if (first) checkpoints_.open();
  // Only runs that write or read checkpoints, or compare their processes, pay for reading the
  // data's fingerprint.
  if (checkpoints_.used() || processes_.size() > 1)
    checkpoints_.set_signature(run_signature(model, train, options, accumulation_, schedule_));
}

// Under memory_budget, or a memory limit with an effective batch (where the limit less what is live
// besides the model is the budget), the planner chooses the micro-batch and the recomputation.
void TrainingRun::plan_memory() {
  const optim::Recipe& recipe = model_.recipe();
  std::optional<std::size_t> budget = recipe.memory_budget();
  std::string name = budget ? fmt::format("memory_budget({})", format_bytes(*budget)) : std::string{};
  const MemoryStats now = memory_stats(model_.device());
  if (!budget && recipe.accumulation().effective_samples() > 0 && now.limit != 0) {
    const std::size_t besides = now.live_total - now.live_of(MemoryCategory::parameters) -
                                now.live_of(MemoryCategory::gradients) - now.live_of(MemoryCategory::optimizer_state);
    budget = now.limit > besides ? now.limit - besides : 0;
    name = fmt::format("the memory limit of {}{}", format_bytes(now.limit),
                       besides > 0 ? fmt::format(" less {} live besides the model", format_bytes(besides)) : "");
  }
  if (!budget) return;
  // The processes of a distributed run must choose alike: the smallest budget of them all.
  if (processes_.size() > 1) {
    const std::vector<std::int64_t> all = processes_.all().allgather(static_cast<std::int64_t>(*budget));
    budget = static_cast<std::size_t>(*std::min_element(all.begin(), all.end()));
  }
  // In a distributed run the planner may shard what the options leave whole, least first.
  std::vector<DataParallel> shardings{data_parallel_};
  if (processes_.size() > 1 && options_.shard == Shard::none && options_.planner.shard && shard_refusal().empty())
    for (const Shard shard : {Shard::optimizer_state, Shard::gradients}) {
      DataParallel more = data_parallel_;
      more.shard = shard;
      more.accumulation = ShardAccumulation::reduce_each_micro_batch;
      shardings.push_back(more);
    }
  for (DataParallel& p : shardings) p.rank = -1;  // every process must fit: plan the largest share
  plan_choice_ = choose_plan(model_, train_, *budget, name, options_, processes_.all(), data_.read_ahead(), shardings);
  state_.batch_size = plan_choice_->choice().micro_batch;
  data_parallel_.shard = plan_choice_->choice().shard;
  data_parallel_.accumulation = plan_choice_->choice().shard_accumulation;
}

// The plan, the loader, the callbacks and the context, and the checkpoint's state put back.
void TrainingRun::prepare_run() {
  const std::optional<TrainingCheckpoint>& checkpoint = checkpoints_.resumed();
  if (checkpoint) {
    checkpoint->check_signature(checkpoints_.signature());
    // A run that backed off on out-of-memory goes on with the micro-batch it had reached.
    state_.batch_size = resumed_micro_batch(*checkpoint, processes_.all());
    state_.accumulation_factor = checkpoint->accumulation_factor();
  }
  data_.plan(model_, state_.batch_size, state_.accumulation_factor);
  check_machine_memory();
  schedule_.prepare(data_.plan());
  ACCRUE_CHECK(options_.class_weight.empty() || model_.losses().size() == 1,
               "fit: class_weight weighs the classes of one output, and model '{}' has {}: give the samples weights "
               "instead (Dataset::with_sample_weights)",
               model_.name(), model_.losses().size());
  units_.clear();
  for (std::size_t o = 0; o < model_.losses().size(); ++o)
    units_.emplace_back(model_.losses()[o].loss, train_, o, options_.class_weight);
  if (processes_.rank() == 0) warn_batch_statistics(model_, data_.plan(), state_.batch_size, processes_.size());
  state_.loader_seed = checkpoint        ? checkpoint->loader_seed()
                       : options_.seed ? *options_.seed
                                       : (static_cast<std::uint64_t>(model_.generator().next_u32()) << 32);
  make_loader();
  callbacks_.emplace(options_, processes_.rank() == 0);  // one process speaks for a distributed run
  make_context();
  optimizer_->zero_grad();
  if (checkpoint) resume();
}

// The loader of the run's plan and shuffling seed, and the batches it hands to the device.
void TrainingRun::make_loader() { data_.load(state_.loader_seed, processes_.rank(), processes_.size(), model_.device()); }

// "class_weight {0: 1, 1: 5} times the dataset's sample weights: ...", or nothing unweighted.
std::string TrainingRun::sample_weighting() const {
  const std::vector<float>& weights = units_[0].sample_weights();
  if (weights.empty()) return {};
  std::string what;
  if (!options_.class_weight.empty()) what = "class_weight " + class_weight_str(options_.class_weight);
  if (train_.sample_weights() != nullptr) what += what.empty() ? "the dataset's sample weights" : " times the dataset's sample weights";
  const double sum = std::accumulate(weights.begin(), weights.end(), 0.0);
  return fmt::format("{} (mean {:.4g} over the training set); each window's loss the weighted sum over its samples "
                     "divided by their number",
                     what, sum / static_cast<double>(weights.size()));
}

void TrainingRun::make_context() {
  context_.model = &model_;
  context_.optimizer = optimizer_;
  context_.recipe = &model_.recipe();
  context_.plan = &data_.plan();
  context_.schedule = &schedule_;
  context_.epochs = options_.epochs;
  context_.batch_size = state_.batch_size;
  context_.processes = processes_.size();
  context_.rank = processes_.rank();
  context_.data_parallel = data_parallel_;
  context_.samples_per_epoch = data_.plan().samples_per_epoch();
  context_.steps_per_epoch = data_.plan().micro_batches_per_epoch();
  context_.reads_data_ahead = data_.reads_ahead();
  if (units_[0].counts_tokens()) context_.tokens_per_epoch = units_[0].total();
  context_.base_lr = optimizer_->lr();
  context_.sample_weighting = sample_weighting();
  context_.memory_choice = plan_choice_ ? &*plan_choice_ : nullptr;
  context_.log_directions = log_directions(model_.metrics());
  schedule_.on_train_begin(context_.log_directions);
  // The trainable ones: frozen layers' parameters are out of clipping norms and gradient buckets.
  parameters_.clear();
  for (auto& [name, p] : model_.trainable_parameters()) parameters_.push_back(p);
  processes_.share_gradients(model_, parameters_, data_parallel_.bucket_bytes,
                             reducer_sharding(data_parallel_.shard, data_parallel_.accumulation));
  prepare_sharding();
  context_.reduction = processes_.reducer() ? &processes_.reducer()->stats() : nullptr;
  const std::optional<DType> amp = context_.amp_dtype = model_.recipe().amp_dtype(model_.device());
  // Said also without a progress bar: no one should believe .amp() made their run faster.
  if (amp && !kernels::gemm_low_precision_native(model_.device(), *amp) && processes_.rank() == 0)
    log::warning("{}", callbacks::slow_mixed_precision_note(*amp));
  context_.scaler = model_.scaler();
}

// A sharded run steps this process's pieces of the parameters with an optimizer of their own, of
// the model's configuration: its state is theirs alone (ZeRO stage 1).
// Checkpoints find the optimizer's state by parameter name and elements (placement_).
void TrainingRun::prepare_sharding() {
  placement_ = {.rank = processes_.rank()};
  for (std::size_t i = 0; i < optimizer_->parameters().size(); ++i) {
    const Tensor& p = optimizer_->parameters()[i];
    placement_.whole.push_back({.parameter = optimizer_->parameter_name(i), .elements = p.numel(), .shape = p.shape()});
  }
  if (data_parallel_.shard == Shard::none) return;
  if (const std::string refusal = shard_refusal(); !refusal.empty()) throw ValueError("fit: " + refusal);
  const distributed::ShardedParameters* shards = processes_.shards();
  if (shards == nullptr) return;  // one process owns every parameter: nothing to shard
  const distributed::ShardPlan& plan = processes_.reducer()->shard_plan();
  for (int r = 0; r < plan.ranks(); ++r) {
    StatePieces& pieces = placement_.processes.emplace_back();
    for (const distributed::ShardPlan::Piece& p : plan.pieces(r))
      pieces.push_back({.parameter = optimizer_->parameter_name(p.parameter), .offset = p.offset,
                        .elements = p.elements, .shape = {p.elements}});
  }
  std::vector<std::string> names;
  for (const StatePiece& p : placement_.mine()) names.push_back(p.parameter);
  shard_optimizer_ = model_.recipe().optimizer().create(shards->pieces());
  shard_optimizer_->set_parameter_names(std::move(names));
  optimizer_ = shard_optimizer_.get();
}

// Why this run cannot shard (empty when it can).
std::string TrainingRun::shard_refusal() const {
  const optim::Recipe& recipe = model_.recipe();
  if (!options_.distributed)
    return ".shard shards over the processes of a distributed run; set .distributed = true (and start the program "
           "with mpirun)";
  if (recipe.optimizer().get<optim::LARS>() || recipe.optimizer().get<optim::LAMB>())
    return fmt::format(".shard steps each process's shard of the parameters alone, but {} scales each parameter's "
                       "step by its whole norm; shard an element-wise optimizer (SGD, Adam, AdamW, RMSprop, Adagrad, Lion)",
                       recipe.optimizer().str());
  if (recipe.weight_average()) return ".shard does not keep a weight average (ema, swa) yet";
  return {};
}

// The plan and the loader for the run's micro-batch and accumulation (after a back-off), and what
// the callbacks read of them.
void TrainingRun::replan() {
  data_.plan(model_, state_.batch_size, state_.accumulation_factor);
  make_loader();
  context_.batch_size = state_.batch_size;
  context_.samples_per_epoch = data_.plan().samples_per_epoch();
  context_.steps_per_epoch = data_.plan().micro_batches_per_epoch();
}

}  // namespace accrue::detail
