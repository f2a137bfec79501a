#include "accrue/dsl/callbacks/csv_logger.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "accrue/framework/error.hpp"

namespace accrue::callbacks {

CSVLogger::CSVLogger(std::string path, CSVLoggerOptions options) : path_(std::move(path)), options_(options) {}
CSVLogger::CSVLogger(const CSVLogger& other) : path_(other.path_), options_(other.options_) {}
CSVLogger::~CSVLogger() {
  if (file_ != nullptr) std::fclose(file_);
}

void CSVLogger::on_train_begin(TrainingContext&) {
  const bool had_rows = options_.append && std::filesystem::exists(path_) && std::filesystem::file_size(path_) > 0;
  file_ = std::fopen(path_.c_str(), options_.append ? "a" : "w");
  if (file_ == nullptr) throw IoError(fmt::format("CSVLogger: cannot write {} ({})", path_, std::strerror(errno)));
  columns_.clear();
  if (had_rows) columns_.push_back("");  // the header is already there
}

void CSVLogger::on_epoch_end(int epoch, Logs& logs) {
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
}

void CSVLogger::on_train_end(const Logs&) {
  if (file_ != nullptr) std::fclose(file_);
  file_ = nullptr;
}

}  // namespace accrue::callbacks
