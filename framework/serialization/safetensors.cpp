#include "safetensors.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../autograd/autograd.hpp"
#include "../core/error.hpp"
#include "../core/files.hpp"
#include "../core/memory.hpp"
#include "json_text.hpp"
#include "../core/utf8.hpp"

namespace accrue::serialization {
namespace {

const char* safetensors_dtype(DType t) {
  switch (t) {
    case DType::f32: return "F32";
    case DType::f16: return "F16";
    case DType::bf16: return "BF16";
    case DType::i32: return "I32";
  }
  return "?";
}

bool from_safetensors_dtype(const std::string& s, DType* out) {
  if (s == "F32") *out = DType::f32;
  else if (s == "F16") *out = DType::f16;
  else if (s == "BF16") *out = DType::bf16;
  else if (s == "I32") *out = DType::i32;
  else return false;
  return true;
}

}  // namespace

const Tensor* find_tensor(const NamedTensors& tensors, const std::string& name) {
  const auto it = std::find_if(tensors.begin(), tensors.end(), [&](const auto& e) { return e.first == name; });
  return it == tensors.end() ? nullptr : &it->second;
}

std::vector<std::pair<Tensor, Tensor>> TensorMatch::match(const NamedTensors& into, const NamedTensors& file,
                                                          const std::string& prefix, bool required,
                                                          const std::string& file_kind) {
  std::vector<std::pair<Tensor, Tensor>> copies;
  for (const auto& entry : into) {
    const std::string key = prefix + entry.first;
    const Tensor& t = entry.second;
    const Tensor* saved = find_tensor(file, key);
    if (saved == nullptr) {
      if (required) problems.push_back(fmt::format("missing '{}' {}", key, t.shape()));
      continue;
    }
    claimed.push_back(key);
    if (!(saved->shape() == t.shape()) || saved->dtype() != t.dtype())
      problems.push_back(fmt::format("'{}' is {} {} in {} but {} {} in the model", key, dtype_name(saved->dtype()),
                                     saved->shape(), file_kind, dtype_name(t.dtype()), t.shape()));
    else
      copies.emplace_back(t, *saved);
  }
  return copies;
}

void TensorMatch::add_unexpected(const NamedTensors& file) {
  for (const auto& entry : file)
    if (std::find(claimed.begin(), claimed.end(), entry.first) == claimed.end())
      problems.push_back(fmt::format("unexpected '{}' {}", entry.first, entry.second.shape()));
}

bool TensorMatch::copy_all(const NamedTensors& into, const NamedTensors& file, const std::string& file_kind) {
  const auto copies = match(into, file, "", true, file_kind);
  add_unexpected(file);
  if (!problems.empty()) return false;
  const NoGradGuard no_grad;
  for (auto [to, from] : copies) to.copy_(from);
  return true;
}

std::string TensorMatch::problem_lines() const {
  std::string all;
  for (const auto& p : problems) all += "\n  " + p;
  return all;
}

void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    ACCRUE_CHECK(name != "__metadata__", "save_safetensors: a tensor cannot be named __metadata__");
    ACCRUE_CHECK(!header.contains(name), "save_safetensors: two tensors named '{}'", name);
    std::vector<std::int64_t> shape(t.shape().begin(), t.shape().end());
    header[name] = {{"dtype", safetensors_dtype(t.dtype())}, {"shape", shape}, {"data_offsets", {offset, offset + t.nbytes()}}};
    offset += t.nbytes();
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception&) {
    // Strings a JSON file cannot hold: a name or metadata value that is not UTF-8.
    throw ValueError(fmt::format("save_safetensors {}: a tensor name or metadata value is not UTF-8 text", path));
  }
  text.resize((text.size() + 7) / 8 * 8, ' ');  // pad so the data starts 8-byte aligned

  write_atomically(path, [&](std::FILE* f) {
    bool ok = true;
    std::uint8_t length[8];
    const std::uint64_t n = text.size();
    for (int i = 0; i < 8; ++i) length[i] = static_cast<std::uint8_t>(n >> (8 * i));
    ok = ok && std::fwrite(length, 1, 8, f) == 8;
    ok = ok && std::fwrite(text.data(), 1, text.size(), f) == text.size();
    for (const auto& [name, t] : tensors) {
      const Tensor host = t.to(Device::cpu());
      ok = ok && std::fwrite(host.data_ptr(), 1, host.nbytes(), f) == host.nbytes();
    }
    return ok;
  });
}

namespace {

// One tensor's entry in the header: where its bytes lie in the data that follows the header.
struct Entry {
  std::string name;
  DType dtype;
  // I64 (PyTorch's BatchNorm num_batches_tracked) is read into int32.
  bool int64 = false;
  Shape shape;
  std::uint64_t begin, end;
};

// The header's JSON, read after its length; `file_size` and the limits bound what it may claim.
nlohmann::json read_header(std::ifstream& in, const std::string& path, std::uint64_t file_size,
                           const SafetensorsLimits& limits, std::uint64_t& header_size) {
  std::uint8_t length[8];
  if (!in.read(reinterpret_cast<char*>(length), 8)) throw IoError(fmt::format("{}: too short for a safetensors file", path));
  header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | length[i];
  if (header_size > limits.max_header_bytes || header_size > file_size - 8)
    throw IoError(fmt::format("{}: the header claims {} bytes; the file has {} and the limit is {}", path, header_size,
                              file_size, limits.max_header_bytes));
  std::string text(header_size, '\0');
  if (!in.read(text.data(), static_cast<std::streamsize>(header_size)))
    throw IoError(fmt::format("{}: truncated in the header", path));
  const nlohmann::json header = parse_json(text, fmt::format("{}: the header", path));
  if (!header.is_object()) throw IoError(fmt::format("{}: the header is not a JSON object", path));
  return header;
}

// The entry `name` describes as `v`, checked against the `data_size` bytes of data.
Entry read_entry(const std::string& path, const std::string& name, const nlohmann::json& v, std::uint64_t data_size) {
  const auto where = [&](const std::string& what) {
    return IoError(fmt::format("{}: tensor {}: {}", path, printable_excerpt(name), what));
  };
  if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets"))
    throw where("needs dtype, shape and data_offsets");
  Entry e;
  e.name = name;
  e.int64 = v["dtype"] == "I64";
  if (e.int64) e.dtype = DType::i32;
  else if (!v["dtype"].is_string() || !from_safetensors_dtype(v["dtype"].get<std::string>(), &e.dtype))
    throw where(fmt::format("dtype {} is not one Accrue reads (F32, F16, BF16, I32, I64)", json_excerpt(v["dtype"])));
  if (!v["shape"].is_array() || v["shape"].size() > static_cast<std::size_t>(Shape::max_rank))
    throw where("shape is not an array of at most 8 dimensions");
  std::uint64_t bytes = e.int64 ? 8 : dtype_size(e.dtype);
  for (const auto& d : v["shape"]) {
    if (!d.is_number_unsigned()) throw where("a dimension is not a non-negative integer");
    const std::uint64_t dim = d.get<std::uint64_t>();
    if (dim != 0 && bytes > data_size / dim) throw where("its shape holds more bytes than the file");
    bytes *= dim;
    e.shape.push_back(static_cast<std::int64_t>(dim));
  }
  const auto& off = v["data_offsets"];
  if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
    throw where("data_offsets is not a pair of non-negative integers");
  e.begin = off[0].get<std::uint64_t>();
  e.end = off[1].get<std::uint64_t>();
  if (e.begin > e.end || e.end > data_size)
    throw where(fmt::format("bytes [{}, {}) lie outside the {} bytes of data", e.begin, e.end, data_size));
  if (e.end - e.begin != bytes)
    throw where(fmt::format("shape {} of {} needs {} bytes but its range holds {}", e.shape, dtype_name(e.dtype), bytes,
                            e.end - e.begin));
  return e;
}

// The format asks the tensors to cover the data with no gap: bytes beyond them are damage (a file
// appended to, or two files run together), not something to ignore.
void check_coverage(const std::string& path, const std::vector<Entry>& entries, std::uint64_t data_size) {
  std::vector<const Entry*> by_offset;
  for (const Entry& e : entries) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(), [](const Entry* a, const Entry* b) { return a->begin < b->begin; });
  std::uint64_t covered = 0;
  for (const Entry* e : by_offset) {
    if (e->begin < covered)
      throw IoError(fmt::format("{}: tensor {} overlaps the one before it", path, printable_excerpt(e->name)));
    if (e->begin > covered)
      throw IoError(fmt::format("{}: data bytes [{}, {}) before tensor {} belong to no tensor", path, covered, e->begin,
                                printable_excerpt(e->name)));
    covered = e->end;
  }
  if (covered != data_size)
    throw IoError(fmt::format("{}: {} bytes after the last tensor's data belong to no tensor (the tensors end at byte "
                              "{} of {} data bytes)",
                              path, data_size - covered, covered, data_size));
}

}  // namespace

SafetensorsFile load_safetensors(const std::string& path, const SafetensorsLimits& limits) {
  require_readable_file(path, "file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(fmt::format("{}: cannot open ({})", path, std::strerror(errno)));
  std::error_code ec;
  const std::uint64_t file_size = std::filesystem::file_size(path, ec);
  if (ec) throw IoError(fmt::format("{}: cannot find its size ({})", path, ec.message()));
  if (file_size > limits.max_file_bytes)
    throw IoError(fmt::format("{}: {} bytes is over the limit of {}", path, file_size, limits.max_file_bytes));
  std::uint64_t header_size = 0;
  const nlohmann::json header = read_header(in, path, file_size, limits, header_size);
  const std::uint64_t data_size = file_size - 8 - header_size;

  SafetensorsFile result;
  std::vector<Entry> entries;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() != "__metadata__") {
      entries.push_back(read_entry(path, it.key(), *it, data_size));
      continue;
    }
    if (!it->is_object()) throw IoError(fmt::format("{}: __metadata__ is not an object", path));
    for (auto m = it->begin(); m != it->end(); ++m) {
      if (!m->is_string()) throw IoError(fmt::format("{}: metadata {} is not a string", path, printable_excerpt(m.key())));
      result.metadata[m.key()] = m->get<std::string>();
    }
  }
  check_coverage(path, entries, data_size);
  require_memory_for_file(data_size, fmt::format("{}: its tensors", path));

  const std::streamoff data_start = static_cast<std::streamoff>(8 + header_size);
  for (const Entry& e : entries) {
    Tensor t = Tensor::empty(e.shape, {.dtype = e.dtype, .category = MemoryCategory::data});
    std::vector<std::int64_t> wide(e.int64 ? static_cast<std::size_t>(t.numel()) : 0);
    in.seekg(data_start + static_cast<std::streamoff>(e.begin));
    if (!in.read(e.int64 ? reinterpret_cast<char*>(wide.data()) : static_cast<char*>(t.data_ptr()),
                 static_cast<std::streamsize>(e.end - e.begin)))
      throw IoError(fmt::format("{}: truncated in the data of {}", path, printable_excerpt(e.name)));
    for (std::size_t i = 0; i < wide.size(); ++i) {
      if (wide[i] < INT32_MIN || wide[i] > INT32_MAX)
        throw IoError(fmt::format("{}: tensor {}: I64 value {} is past the int32 range Accrue keeps it in", path,
                                  printable_excerpt(e.name), wide[i]));
      static_cast<std::int32_t*>(t.data_ptr())[i] = static_cast<std::int32_t>(wide[i]);
    }
    result.tensors.emplace_back(e.name, std::move(t));
  }
  return result;
}

}  // namespace accrue::serialization
