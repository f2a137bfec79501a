// The memory planner: under a budget, every way of holding the effective batch (micro-batch x
// accumulation, with and without recomputation) whose memory plan fits, the most promising few
// timed on the real model, and the fastest chosen. None of it changes the run's result: micro-batch
// and accumulation by exact accumulation, recomputation bit for bit, and the timing passes leave
// the parameters, buffers, gradients and generator as they found them.

#include <algorithm>
#include <chrono>
#include <limits>

#include "training_run.hpp"
#include "../../framework/runtime/device_runtime.hpp"

namespace accrue::detail {

namespace {

// The recomputations to try: the one the options fix, else none, every block of a type that holds
// layers (TransformerBlock, Residual) when the model has some, and sqrt(n) segments.
std::vector<RecomputePolicy> candidate_policies(const Model& model, const TrainerOptions& options) {
  if (options.recompute) return {*options.recompute};
  if (!options.planner.recompute) return {model.recompute_policy()};
  std::vector<RecomputePolicy> out{RecomputePolicy{}};
  std::vector<std::string> blocks;
  for (std::size_t i = 0; i + 1 < model.size(); ++i) {
    const std::string type = model.layer(i).type_name();
    if ((type == "TransformerBlock" || type == "Residual") && std::find(blocks.begin(), blocks.end(), type) == blocks.end())
      blocks.push_back(type);
  }
  if (!blocks.empty()) out.push_back(RecomputePolicy::of_types(blocks));
  if (model.size() >= 3) out.push_back(RecomputePolicy::every());
  return out;
}

// Every micro-batch per process dividing the effective batch, under each policy, with its plan's
// peak under the least of `shardings` that fits; for each policy those that fit and the next
// larger one that does not (planned with the most sharding).
std::vector<PlanCandidate> planned_candidates(Model& model, const std::vector<RecomputePolicy>& policies,
                                              std::int64_t effective, std::size_t budget, std::int64_t read_ahead,
                                              const std::vector<DataParallel>& shardings) {
  const int processes = shardings.front().processes;
  std::vector<PlanCandidate> out;
  for (const RecomputePolicy& policy : policies) {
    model.recompute(policy);
    bool cut_shown = false;
    for (std::int64_t m = 1; m * processes <= effective; ++m) {
      if (effective % (m * processes) != 0) continue;
      const bool accumulating = m * processes < effective;
      PlanCandidate c;
      for (const DataParallel& sharding : shardings) {
        c.shard = sharding.shard;
        c.shard_accumulation = sharding.accumulation;
        c.planned_peak = model.memory_plan(m, accumulating, /*under_limit=*/true, read_ahead, sharding).peak_total;
        c.fits = c.planned_peak <= budget;
        if (c.fits) break;
      }
      if (!c.fits && cut_shown) continue;
      cut_shown = cut_shown || !c.fits;
      c.micro_batch = m;
      c.accumulation = effective / (m * processes);
      c.recompute = policy;
      out.push_back(std::move(c));
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const PlanCandidate& a, const PlanCandidate& b) {
    return a.micro_batch > b.micro_batch;
  });
  return out;
}

// The candidates to time, most promising first, at most `count`. The first policy (none, when
// searching) adds no work: every micro-batch that fits under it may be the fastest (on a CPU a
// smaller one often is, its activations staying in cache), so all are timed, largest first.
// Recomputation adds a forward pass per segment, so it is timed only at micro-batches the first
// policy does not fit, the largest first: the same micro-batch recomputed is never faster.
std::vector<std::size_t> promising(const std::vector<PlanCandidate>& candidates, const std::vector<RecomputePolicy>& policies,
                                   int count) {
  const auto fitting = [&](const RecomputePolicy& policy, std::int64_t above) {
    std::vector<std::size_t> out;  // largest micro-batch first, as the candidates are sorted
    for (std::size_t i = 0; i < candidates.size(); ++i)
      if (candidates[i].fits && candidates[i].micro_batch > above && candidates[i].recompute.str() == policy.str())
        out.push_back(i);
    return out;
  };
  const std::vector<std::size_t> base = fitting(policies.front(), 0);
  const std::int64_t base_largest = base.empty() ? 0 : candidates[base.front()].micro_batch;
  std::vector<std::vector<std::size_t>> lists{base};
  for (std::size_t p = 1; p < policies.size(); ++p) lists.push_back(fitting(policies[p], base_largest));
  // Round robin: each list's first, then each list's second, ...
  std::vector<std::size_t> out;
  for (std::size_t rank = 0; static_cast<int>(out.size()) < count; ++rank) {
    bool any = false;
    for (const auto& list : lists)
      if (rank < list.size() && static_cast<int>(out.size()) < count) {
        out.push_back(list[rank]);
        any = true;
      }
    if (!any) break;
  }
  return out;
}

// Puts back what a timing pass changes: batch statistics and the generator (dropout's draws), and
// the gradients it left.
class TrialState {
 public:
  explicit TrialState(Model& model) : model_(model), seed_(model.generator().seed()), offset_(model.generator().offset()) {
    for (auto& [name, b] : model.named_buffers()) buffers_.emplace_back(b, b.clone());
    for (auto& [name, p] : model.trainable_parameters()) {
      const Tensor g = p.grad();
      grads_.emplace_back(p, g.defined() ? g.clone() : Tensor{});
    }
  }
  TrialState(const TrialState&) = delete;
  TrialState& operator=(const TrialState&) = delete;
  ~TrialState() {
    const NoGradGuard no_grad;
    for (auto& [live, saved] : buffers_) live.copy_(saved);
    // Backward adds into a gradient in place: one there before is given its values back.
    for (auto& [p, saved] : grads_) {
      if (saved.defined() && p.grad().defined()) p.grad().copy_(saved);
      else p.set_grad(saved);
    }
    model_.generator().set_state(seed_, offset_);
  }

 private:
  Model& model_;
  std::uint64_t seed_, offset_;
  std::vector<std::pair<Tensor, Tensor>> buffers_, grads_;
};

// Seconds of one forward and backward pass of `batch` through the model as `c` has it.
double time_pass(Model& model, const PlanCandidate& c, const Batch& batch) {
  model.recompute(c.recompute);
  const std::optional<DType> amp = model.recipe().amp_dtype(model.device());
  StepModes modes{{.autocast = amp, .keep_packs = amp && c.accumulation > 1}};
  const auto start = std::chrono::steady_clock::now();
  Tensor loss;
  {
    const StepModes::Pass pass = modes.forward();
    for (const Tensor& sum : model.loss_sums(model.forward(batch.inputs), batch.targets))
      loss = loss.defined() ? ops::add(loss, sum) : sum;
  }
  {
    const StepModes::Pass pass = modes.backward(true);
    loss.backward();
  }
  runtime::synchronize(model.device());
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Times the candidates `which` over the rounds, alternating, on the first samples of `train`; a
// distributed run sums each candidate's time over its processes, so that all choose alike.
void time_candidates(Model& model, const Dataset& train, std::vector<PlanCandidate>& candidates,
                     const std::vector<std::size_t>& which, const PlannerOptions& options,
                     distributed::Communicator& processes) {
  const TrainingModeGuard training{model, true};
  const TrialState restore{model};
  std::vector<double> best(which.size(), std::numeric_limits<double>::infinity());
  for (int round = 0; round < std::max(2, options.rounds); ++round)
    for (std::size_t j = 0; j < which.size(); ++j) {
      PlanCandidate& c = candidates[which[j]];
      if (!c.failed.empty()) continue;
      try {
        const DataLoader loader{train, {.batch_size = std::min(c.micro_batch, train.size())}};
        DeviceBatches batches{loader, model.device()};
        const Batch batch = batches.get(0);
        const double seconds = time_pass(model, c, batch) / static_cast<double>(batch.size());
        if (round > 0) best[j] = std::min(best[j], seconds);
      } catch (OutOfMemory& e) {
        c.failed = "out of memory";
      }
    }
  std::vector<double> summed(which.size());
  for (std::size_t j = 0; j < which.size(); ++j)
    summed[j] = candidates[which[j]].failed.empty() ? best[j] : std::numeric_limits<double>::infinity();
  processes.allreduce_sum(summed);
  for (std::size_t j = 0; j < which.size(); ++j)
    if (std::isfinite(summed[j])) candidates[which[j]].seconds_per_sample = summed[j];
    else if (candidates[which[j]].failed.empty()) candidates[which[j]].failed = "out of memory on another process";
}

// The refusal when nothing fits: the smallest plan of all, and what it would need.
[[noreturn]] void refuse(Model& model, const PlanChoice& choice, const RecomputePolicy& original,
                         std::int64_t read_ahead, const DataParallel& sharding) {
  const auto smallest = std::min_element(choice.candidates.begin(), choice.candidates.end(),
                                         [](const PlanCandidate& a, const PlanCandidate& b) { return a.planned_peak < b.planned_peak; });
  model.recompute(smallest->recompute);
  const bool accumulating = smallest->accumulation > 1;
  const std::string plan = model.memory_plan(smallest->micro_batch, accumulating, true, read_ahead, sharding).str();
  model.recompute(original);
  throw ValueError(fmt::format("{}: even a micro-batch of 1 is planned to need more; the smallest plan (micro-batch {}, "
                               "recomputing {}) peaks at {}. Raise the budget or use a smaller model:\n{}",
                               choice.budget_name, smallest->micro_batch, smallest->recompute.str(),
                               format_bytes(smallest->planned_peak), plan));
}

}  // namespace

PlanChoice choose_plan(Model& model, const Dataset& train, std::size_t budget, std::string budget_name,
                       const TrainerOptions& options, distributed::Communicator& processes, std::int64_t read_ahead,
                       const std::vector<DataParallel>& shardings) {
  PlanChoice choice;
  choice.budget = budget;
  choice.budget_name = std::move(budget_name);
  choice.effective_batch = model.recipe().accumulation().effective_samples();
  choice.processes = processes.size();
  const RecomputePolicy original = model.recompute_policy();
  const std::vector<RecomputePolicy> policies = candidate_policies(model, options);
  choice.candidates = planned_candidates(model, policies, choice.effective_batch, budget, read_ahead, shardings);
  choice.shardings = shardings.size() > 1;
  const auto first_fit = std::find_if(choice.candidates.begin(), choice.candidates.end(), [](const PlanCandidate& c) { return c.fits; });
  if (first_fit == choice.candidates.end()) refuse(model, choice, original, read_ahead, shardings.back());
  // Largest micro-batch first, and among equals the policy listed first (the least recomputation).
  choice.chosen = static_cast<std::size_t>(first_fit - choice.candidates.begin());
  const std::vector<std::size_t> timed = promising(choice.candidates, policies, options.planner.timed);
  if (timed.size() < 2) {
    choice.reason = options.planner.timed == 0 ? "the largest micro-batch that fits (PlannerOptions::timed = 0)"
                                               : "the only candidate that fits";
    model.recompute(choice.choice().recompute);
    return choice;
  }
  time_candidates(model, train, choice.candidates, timed, options.planner, processes);
  double fastest = std::numeric_limits<double>::infinity();
  for (std::size_t i : timed)
    if (const auto& s = choice.candidates[i].seconds_per_sample; s && *s < fastest) {
      fastest = *s;
      choice.chosen = i;
    }
  choice.reason = fmt::format("the fastest of {} timed (one forward and backward pass each in {} rounds, the first a "
                              "warm-up)",
                              timed.size(), std::max(2, options.planner.rounds));
  model.recompute(choice.choice().recompute);
  return choice;
}

}  // namespace accrue::detail

namespace accrue {

std::string PlanChoice::str() const {
  std::string out = fmt::format("  memory planner: {} for the effective batch of {}{}; {}\n", budget_name, effective_batch,
                                processes > 1 ? fmt::format(" over {} processes (micro-batches per process)", processes) : "",
                                reason);
  out += fmt::format("    {:>11} {:>10} {:<28}{} {:>12} {:>16}\n", "micro-batch", "accumulate", "recompute",
                     shardings ? fmt::format(" {:<8}", "shard") : "", "planned peak", "seconds/sample");
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const PlanCandidate& c = candidates[i];
    const std::string time = c.seconds_per_sample ? fmt::format("{:.3g}", *c.seconds_per_sample)
                             : !c.failed.empty()  ? c.failed
                             : c.fits             ? "not timed"
                                                  : "over budget";
    const std::string shard = c.shard == Shard::none ? "-" : c.shard == Shard::optimizer_state ? "stage 1" : "stage 2";
    out += fmt::format("  {} {:>11} {:>10} {:<28}{} {:>12} {:>16}\n", i == chosen ? "->" : "  ", c.micro_batch,
                       c.accumulation, c.recompute.str(), shardings ? fmt::format(" {:<8}", shard) : "",
                       format_bytes(c.planned_peak), time);
  }
  return out;
}

}  // namespace accrue
