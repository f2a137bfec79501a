#include "optimizer_shards.hpp"

#include <charconv>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>

#include "json_state.hpp"
#include "../framework/serialization/checkpoint.hpp"

namespace accrue::detail {

using json = nlohmann::json;

namespace {

// "3.exp_avg" is tensor (or counter) "exp_avg" of the optimizer's parameter 3; a name without an
// index ("steps") is the whole optimizer's.
std::optional<std::pair<std::size_t, std::string>> of_parameter(const std::string& name) {
  const std::size_t dot = name.find('.');
  std::size_t index = 0;
  if (dot == std::string::npos || dot == 0) return std::nullopt;
  const auto [end, error] = std::from_chars(name.data(), name.data() + dot, index);
  if (error != std::errc{} || end != name.data() + dot) return std::nullopt;
  return std::make_pair(index, name.substr(dot + 1));
}

json pieces_json(const StatePieces& pieces) {
  json out = json::array();
  for (const StatePiece& p : pieces) out.push_back({p.parameter, p.offset, p.elements});
  return out;
}

StatePieces pieces_from(const json& j) {
  StatePieces out;
  for (const json& p : j) {
    const auto offset = json_integer<std::int64_t>(p.at(1), "a piece's offset");
    const auto elements = json_integer<std::int64_t>(p.at(2), "a piece's elements");
    ACCRUE_CHECK(offset >= 0 && elements > 0 && offset <= std::numeric_limits<std::int64_t>::max() - elements,
                 "a piece of parameter {} has offset {} and {} elements", p.at(0).get<std::string>(), offset, elements);
    out.push_back({.parameter = p.at(0).get<std::string>(), .offset = offset, .elements = elements, .shape = {elements}});
  }
  return out;
}

// One saved optimizer's state and where it lies: a shard file's, or an unsharded checkpoint's.
struct SavedShard {
  std::string file;
  StatePieces pieces;
  // Per piece, its tensors and counters by kind ("exp_avg", "step").
  std::vector<std::map<std::string, Tensor>> tensors;
  std::vector<std::map<std::string, std::int64_t>> counters;
};

SavedShard sorted_by_piece(std::string file, StatePieces pieces, const optim::OptimizerState& state) {
  SavedShard s{.file = std::move(file), .pieces = std::move(pieces)};
  s.tensors.resize(s.pieces.size());
  s.counters.resize(s.pieces.size());
  for (const auto& [name, t] : state.tensors)
    if (const auto at = of_parameter(name); at && at->first < s.pieces.size()) {
      if (t.numel() != s.pieces[at->first].elements)
        throw IoError(fmt::format("{}: its optimizer tensor '{}' has {} elements, its piece of parameter {} {}; it was "
                                  "not loaded",
                                  s.file, name, t.numel(), s.pieces[at->first].parameter, s.pieces[at->first].elements));
      s.tensors[at->first][at->second] = t;
    }
  for (const auto& [name, n] : state.counters)
    if (const auto at = of_parameter(name); at && at->first < s.pieces.size()) s.counters[at->first][at->second] = n;
  return s;
}

bool overlaps(const StatePieces& a, const StatePieces& b) {
  for (const StatePiece& x : a)
    for (const StatePiece& y : b)
      if (x.parameter == y.parameter && x.offset < y.offset + y.elements && y.offset < x.offset + x.elements) return true;
  return false;
}

json parsed_record(const std::string& path, const std::string& record) {
  try {
    return json::parse(record);
  } catch (const json::exception& e) {
    throw IoError(fmt::format("checkpoint {}: its record of optimizer shards is not JSON ({}); it was not loaded", path,
                              e.what()));
  }
}

// Shard `rank` of checkpoint `path`, read, verified and checked to be that checkpoint's.
SavedShard read_shard(const std::string& path, int rank, int processes, StatePieces pieces) {
  const std::string file = shard_path(path, rank, processes);
  const serialization::CheckpointFile read = serialization::load_checkpoint(file);
  const json s = json::parse(read.state, nullptr, false);
  const std::string owner = std::filesystem::path(path).filename().string();
  if (!s.is_object() || s.value("checkpoint", json()) != owner || s.value("rank", json()) != rank ||
      s.value("processes", json()) != processes || !s.contains("optimizer"))
    throw IoError(fmt::format("{}: not optimizer shard {} of {} of checkpoint {}; it was not loaded", file, rank,
                              processes, path));
  optim::OptimizerState state;
  for (const auto& [name, t] : read.tensors)
    if (name.starts_with("optimizer.")) state.tensors.emplace_back(name.substr(10), t);
  for (auto it = s["optimizer"].begin(); it != s["optimizer"].end(); ++it)
    state.counters[it.key()] = json_integer<std::int64_t>(*it, "an optimizer counter");
  return sorted_by_piece(file, std::move(pieces), state);
}

// Copies the saved pieces' state inside `wanted` into the state of wanted piece `j` of `out`;
// returns the elements covered per tensor kind.
std::map<std::string, std::int64_t> cut(const std::vector<SavedShard>& saved, const StatePiece& wanted, std::size_t j,
                                        optim::OptimizerState& out) {
  std::map<std::string, std::int64_t> covered;
  std::map<std::string, Tensor> made;
  for (const SavedShard& s : saved)
    for (std::size_t k = 0; k < s.pieces.size(); ++k) {
      const StatePiece& p = s.pieces[k];
      const std::int64_t lo = std::max(p.offset, wanted.offset);
      const std::int64_t hi = std::min(p.offset + p.elements, wanted.offset + wanted.elements);
      if (p.parameter != wanted.parameter || lo >= hi) continue;
      for (const auto& [kind, t] : s.tensors[k]) {
        Tensor& to = made[kind];
        if (!to.defined())
          to = Tensor::zeros(wanted.shape, {.dtype = t.dtype(), .device = t.device(), .category = MemoryCategory::optimizer_state});
        to.view_as_shape(Shape{to.numel()}).narrow(lo - wanted.offset, hi - wanted.offset)
            .copy_(t.view_as_shape(Shape{t.numel()}).narrow(lo - p.offset, hi - p.offset));
        covered[kind] += hi - lo;
      }
      for (const auto& [kind, n] : s.counters[k]) out.counters[fmt::format("{}.{}", j, kind)] = n;
    }
  for (auto& [kind, t] : made) out.tensors.emplace_back(fmt::format("{}.{}", j, kind), std::move(t));
  return covered;
}

}  // namespace

std::string shard_path(const std::string& path, int rank, int processes) {
  const std::filesystem::path p{path};
  return (p.parent_path() / fmt::format("{}.shard-{}-of-{}{}", p.stem().string(), rank, processes, p.extension().string()))
      .string();
}

std::int64_t write_optimizer_shard(const std::string& path, const OptimizerPlacement& placement,
                                   const optim::OptimizerState& state, int processes) {
  const std::string file = shard_path(path, placement.rank, processes);
  serialization::NamedTensors tensors;
  for (const auto& [name, t] : state.tensors)
    if (t.defined()) tensors.emplace_back("optimizer." + name, t);
  json s;
  s["checkpoint"] = std::filesystem::path(path).filename().string();
  s["rank"] = placement.rank;
  s["processes"] = processes;
  s["optimizer"] = state.counters;
  s["pieces"] = pieces_json(placement.mine());
  serialization::save_checkpoint(file, tensors, s.dump());
  return static_cast<std::int64_t>(std::filesystem::file_size(file));
}

std::map<std::string, std::int64_t> whole_optimizer_counters(const optim::OptimizerState& state) {
  std::map<std::string, std::int64_t> out;
  for (const auto& [name, n] : state.counters)
    if (!of_parameter(name)) out.emplace(name, n);
  return out;
}

std::string shards_record(const OptimizerPlacement& placement, const std::vector<std::int64_t>& shard_bytes) {
  json pieces = json::array();
  for (const StatePieces& p : placement.processes) pieces.push_back(pieces_json(p));
  return json{{"processes", placement.processes.size()}, {"bytes", shard_bytes}, {"pieces", pieces}}.dump();
}

void check_shard_files(const std::string& path, const std::string& record) {
  const json r = parsed_record(path, record);
  try {
    const int n = json_integer<int>(r.at("processes"), "its processes");
    for (int rank = 0; rank < n; ++rank) {
      const std::string file = shard_path(path, rank, n);
      const auto wanted = json_integer<std::int64_t>(r.at("bytes").at(static_cast<std::size_t>(rank)), "a shard's size");
      std::error_code ec;
      const std::uintmax_t size = std::filesystem::file_size(file, ec);
      if (ec)
        throw IoError(fmt::format("checkpoint {}: its optimizer shard {} (process {} of {}) is missing; it was not loaded",
                                  path, file, rank, n));
      if (static_cast<std::int64_t>(size) != wanted)
        throw IoError(fmt::format("checkpoint {}: its optimizer shard {} (process {} of {}) has {} bytes, not the {} it "
                                  "recorded; it was not loaded",
                                  path, file, rank, n, size, wanted));
    }
  } catch (const json::exception& e) {
    throw IoError(fmt::format("checkpoint {}: its record of optimizer shards is incomplete ({}); it was not loaded", path,
                              e.what()));
  } catch (const ValueError& e) {
    throw IoError(fmt::format("checkpoint {}: its record of optimizer shards: {}; it was not loaded", path, e.what()));
  }
}

optim::OptimizerState resharded_state(const std::string& path, const std::string& record,
                                      const optim::OptimizerState& saved, const OptimizerPlacement& placement) {
  const StatePieces& wanted = placement.mine();
  std::vector<SavedShard> shards;
  if (record.empty()) {
    shards.push_back(sorted_by_piece(path, placement.whole, saved));
  } else {
    const json r = parsed_record(path, record);
    try {
      const int n = json_integer<int>(r.at("processes"), "its processes");
      for (int rank = 0; rank < n; ++rank) {
        StatePieces pieces = pieces_from(r.at("pieces").at(static_cast<std::size_t>(rank)));
        if (overlaps(pieces, wanted)) shards.push_back(read_shard(path, rank, n, std::move(pieces)));
      }
    } catch (const json::exception& e) {
      throw IoError(fmt::format("checkpoint {}: its record of optimizer shards is incomplete ({}); it was not loaded",
                                path, e.what()));
    } catch (const ValueError& e) {
      throw IoError(fmt::format("checkpoint {}: its record of optimizer shards: {}; it was not loaded", path, e.what()));
    }
  }
  optim::OptimizerState out{.counters = whole_optimizer_counters(saved)};
  for (std::size_t j = 0; j < wanted.size(); ++j)
    for (const auto& [kind, elements] : cut(shards, wanted[j], j, out))
      if (elements != wanted[j].elements)
        throw ValueError(fmt::format("checkpoint {}: the saved optimizer state '{}' covers {} of the {} elements of "
                                     "parameter {} from {} that this process steps; nothing was loaded",
                                     path, kind, elements, wanted[j].elements, wanted[j].parameter, wanted[j].offset));
  return out;
}

}  // namespace accrue::detail
