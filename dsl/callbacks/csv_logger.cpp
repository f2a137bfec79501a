#include "csv_logger.hpp"

#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "../json_state.hpp"
#include "../../framework/core/error.hpp"
#include "../../framework/core/log.hpp"

namespace accrue::callbacks {

CSVLogger::CSVLogger(std::string path, CSVLoggerOptions options) : path_(std::move(path)), options_(options) {}
CSVLogger::CSVLogger(const CSVLogger& other) : path_(other.path_), options_(other.options_) {}
CSVLogger::~CSVLogger() {
  if (file_ != nullptr) std::fclose(file_);
}

void CSVLogger::on_train_begin(TrainingContext& context) {
  writes_ = context.rank == 0;  // one process writes a distributed run's log
  if (!writes_) return;
  // A resumed run keeps the rows so far (load_state cuts off any written after the checkpoint).
  const bool append = options_.append || context.resumed;
  std::error_code ec;
  const std::uintmax_t size = append ? std::filesystem::file_size(path_, ec) : 0;
  length_ = ec ? 0 : size;
  file_ = std::fopen(path_.c_str(), append ? "a" : "w");
  if (file_ == nullptr) throw IoError(fmt::format("CSVLogger: cannot write {} ({})", path_, std::strerror(errno)));
  columns_.clear();
  if (length_ > 0) columns_.push_back("");  // the header is already there
}

void CSVLogger::on_epoch_end(int epoch, Logs& logs) {
  if (!writes_) return;
  // Keras sorts the columns by name; the header comes with the first row.
  std::vector<std::string> names;
  for (const auto& [name, value] : logs.items()) names.push_back(name);
  std::sort(names.begin(), names.end());
  if (columns_.empty()) {
    columns_ = names;
    fmt::print(file_, "epoch");
    for (const auto& n : columns_) fmt::print(file_, "{}{}", options_.separator, n);
    fmt::print(file_, "\n");
  } else if (columns_.size() == 1 && columns_[0].empty()) {
    columns_ = names;
  }
  fmt::print(file_, "{}", epoch);
  for (const auto& n : columns_) {
    const auto v = logs.get(n);
    if (v) fmt::print(file_, "{}{}", options_.separator, *v);
    else fmt::print(file_, "{}", options_.separator);
  }
  fmt::print(file_, "\n");
  std::fflush(file_);
  length_ = static_cast<std::uint64_t>(std::ftell(file_));
}

void CSVLogger::on_train_end(const Logs&) {
  if (file_ != nullptr) std::fclose(file_);
  file_ = nullptr;
}

std::optional<CallbackState> CSVLogger::state() const {
  nlohmann::json j{{"length", length_}, {"columns", columns_}};
  return CallbackState{j.dump(), {}};
}

void CSVLogger::load_state(const CallbackState& state) {
  std::uint64_t length = 0;
  std::vector<std::string> columns;
  detail::read_json_state("CSVLogger", state.text, [&](const nlohmann::json& j) {
    length = detail::json_integer<std::uint64_t>(j.at("length"), "CSVLogger: length");
    columns = j.at("columns").get<std::vector<std::string>>();
  });
  if (!writes_) return;
  ACCRUE_CHECK(file_ != nullptr, "CSVLogger: load_state before on_train_begin");
  std::fflush(file_);
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path_, ec);
  if (ec || size < length) {
    log::warning("CSVLogger: {} holds {} bytes, fewer than the {} it had at the checkpoint; appending to it as it is",
                 path_, ec ? 0 : size, length);
  } else if (::ftruncate(fileno(file_), static_cast<off_t>(length)) != 0) {
    throw IoError(fmt::format("CSVLogger: cannot cut {} back to its {} bytes at the checkpoint ({})", path_, length,
                              std::strerror(errno)));
  }
  length_ = length;
  columns_ = std::move(columns);
}

}  // namespace accrue::callbacks
