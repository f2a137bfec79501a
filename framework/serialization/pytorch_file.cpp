#include "pytorch_file.hpp"

#include <cstring>
#include <limits>
#include <map>

#include "../core/error.hpp"
#include "../core/memory.hpp"
#include "../core/utf8.hpp"
#include "pickle.hpp"
#include "zip_archive.hpp"

namespace accrue::serialization {
namespace {

using pickle::Kind;
using pickle::Object;
using pickle::Pickle;

// The storage types accepted, with the dtype their tensors are read as.
struct StorageType {
  std::string_view global;
  DType dtype;
  std::size_t bytes;  // per element in the file
};
constexpr StorageType storage_types[] = {{"torch.FloatStorage", DType::f32, 4},
                                         {"torch.HalfStorage", DType::f16, 2},
                                         {"torch.BFloat16Storage", DType::bf16, 2},
                                         {"torch.LongStorage", DType::i32, 8}};

// One tensor of the state_dict, checked against its storage, not read yet.
struct TensorPlan {
  std::string name;
  const ZipArchive::Entry* storage = nullptr;
  StorageType type;
  Shape shape;
  std::vector<std::int64_t> strides;
  std::int64_t offset = 0;
};

class FileReader {
 public:
  explicit FileReader(ZipArchive zip) : zip_(std::move(zip)), path_(zip_.name()) {}
  NamedTensors read(const std::string& entry);

 private:
  [[noreturn]] void fail(const std::string& what) const { throw IoError(fmt::format("{}: {}", path_, what)); }
  const Object& state_dict(const Pickle& p, const std::string& entry) const;
  TensorPlan plan(const Pickle& p, const std::string& name, const Object& tensor) const;
  std::int64_t integer(const Pickle& p, std::size_t i, const std::string& name, const char* what) const;
  std::vector<std::int64_t> integers(const Pickle& p, std::size_t i, const std::string& name, const char* what) const;
  Tensor materialize(const TensorPlan& t, const std::vector<char>& storage) const;

  ZipArchive zip_;
  std::string path_;
  std::string prefix_;  // the archive's folder: "resnet18-f37072fd/"
};

NamedTensors FileReader::read(const std::string& entry) {
  const ZipArchive::Entry* data = nullptr;
  for (const ZipArchive::Entry& e : zip_.entries())
    if (const std::size_t slash = e.name.find('/');
        slash != std::string::npos && e.name.substr(slash + 1) == "data.pkl" && data == nullptr) {
      data = &e;
      prefix_ = e.name.substr(0, slash + 1);
    }
  if (data == nullptr) fail("a ZIP archive without <folder>/data.pkl, so not a file torch.save wrote");
  if (const ZipArchive::Entry* order = zip_.find(prefix_ + "byteorder"); order != nullptr)
    if (const std::string text = zip_.read_bytes(*order, 16); text != "little")
      fail(fmt::format("its tensors are stored {}-endian; Accrue reads little-endian files", printable_excerpt(text)));
  const Pickle p = pickle::unpickle(zip_.read_bytes(*data, std::uint64_t{32} << 20), path_ + ": " + data->name);
  const Object& dict = state_dict(p, entry);

  // Views of one storage are each made a tensor of their own: bounded, so that a few bytes of
  // pickle cannot ask for terabytes of copies (checked as they add up, which then cannot overflow).
  const std::uint64_t most = 4 * zip_.size() + (std::uint64_t{64} << 20);
  std::vector<TensorPlan> plans;
  std::uint64_t bytes = 0;
  for (std::size_t i = 0; i + 1 < dict.items.size(); i += 2) {
    const Object& key = p.at(dict.items[i]);
    if (key.kind != Kind::text) fail(fmt::format("the state_dict has a key that is {}, not a string", kind_name(key.kind)));
    plans.push_back(plan(p, key.text, p.at(dict.items[i + 1])));
    bytes += static_cast<std::uint64_t>(plans.back().shape.numel()) * dtype_size(plans.back().type.dtype);
    if (bytes > most) fail(fmt::format("its tensors would take more than {} bytes, four times the file's size", most));
  }
  require_memory_for_file(bytes, fmt::format("{}: its tensors", path_));

  // Each storage is read once, for every tensor that views it.
  std::map<const ZipArchive::Entry*, std::vector<std::size_t>> by_storage;
  for (std::size_t i = 0; i < plans.size(); ++i) by_storage[plans[i].storage].push_back(i);
  std::vector<Tensor> made(plans.size());
  for (const auto& [storage, users] : by_storage) {
    std::vector<char> bytes_read(storage->size);
    zip_.read(*storage, bytes_read.data());
    for (const std::size_t i : users) made[i] = materialize(plans[i], bytes_read);
  }
  NamedTensors out;
  for (std::size_t i = 0; i < plans.size(); ++i) out.emplace_back(plans[i].name, std::move(made[i]));
  return out;
}

const Object& FileReader::state_dict(const Pickle& p, const std::string& entry) const {
  const Object& root = p.at(p.root);
  if (root.kind != Kind::dict) fail(fmt::format("it holds {}, not a dict of tensors (a state_dict)", kind_name(root.kind)));
  const Object* dict = &root;
  if (!entry.empty()) {
    dict = p.find(root, entry);
    if (dict == nullptr || dict->kind != Kind::dict) {
      std::vector<std::string> keys;
      for (std::size_t i = 0; i < root.items.size(); i += 2)
        if (p.at(root.items[i]).kind == Kind::text) keys.push_back(printable_excerpt(p.at(root.items[i]).text));
      fail(fmt::format("no dict under {} (the file's dict holds {})", printable_excerpt(entry), fmt::join(keys, ", ")));
    }
  }
  for (std::size_t i = 0; i + 1 < dict->items.size(); i += 2) {
    const Object& value = p.at(dict->items[i + 1]);
    if (value.kind == Kind::tensor) continue;
    const Object& key = p.at(dict->items[i]);
    const std::string name = key.kind == Kind::text ? printable_excerpt(key.text) : kind_name(key.kind);
    fail(fmt::format("{} is {}, not a tensor, so this dict is no state_dict{}", name, kind_name(value.kind),
                     entry.empty() ? "; a dict that holds one (a Lightning checkpoint's) is read by naming its key: "
                                     "load_weights(path, {.entry = \"state_dict\"})"
                                   : ""));
  }
  return *dict;
}

std::int64_t FileReader::integer(const Pickle& p, std::size_t i, const std::string& name, const char* what) const {
  const Object& o = p.at(i);
  if (o.kind != Kind::integer || o.integer < 0)
    fail(fmt::format("tensor {}: its {} is {}, not a non-negative integer", name, what, kind_name(o.kind)));
  return o.integer;
}

std::vector<std::int64_t> FileReader::integers(const Pickle& p, std::size_t i, const std::string& name,
                                               const char* what) const {
  const Object& o = p.at(i);
  if (o.kind != Kind::tuple) fail(fmt::format("tensor {}: its {} are {}, not a tuple", name, what, kind_name(o.kind)));
  if (o.items.size() > static_cast<std::size_t>(Shape::max_rank))
    fail(fmt::format("tensor {} has {} dimensions; Accrue's tensors have at most {}", name, o.items.size(), Shape::max_rank));
  std::vector<std::int64_t> values;
  for (const std::size_t item : o.items) values.push_back(integer(p, item, name, what));
  return values;
}

TensorPlan FileReader::plan(const Pickle& p, const std::string& name, const Object& tensor) const {
  TensorPlan t;
  t.name = name;
  const std::string shown = printable_excerpt(name);
  if (tensor.items.size() < 4) fail(fmt::format("tensor {} is rebuilt from {} arguments, not 4 or more", shown, tensor.items.size()));
  const Object& id = p.at(tensor.items[0]);
  const Object* pid = id.kind == Kind::persistent ? &p.at(id.items[0]) : nullptr;
  if (pid == nullptr || pid->kind != Kind::tuple || pid->items.size() != 5 || p.at(pid->items[0]).text != "storage" ||
      p.at(pid->items[2]).kind != Kind::text)
    fail(fmt::format("tensor {} does not name its storage as torch.save does ('storage', type, key, location, count)", shown));
  const Object& type = p.at(pid->items[1]);
  const StorageType* found = nullptr;
  for (const StorageType& s : storage_types)
    if (type.kind == Kind::global && type.text == s.global) found = &s;
  if (found == nullptr) fail(fmt::format("tensor {}: its storage type is {}, not a storage", shown, kind_name(type.kind)));
  t.type = *found;
  const std::string& key = p.at(pid->items[2]).text;
  t.storage = zip_.find(prefix_ + "data/" + key);
  if (t.storage == nullptr) fail(fmt::format("tensor {}: its storage {} is not in the archive", shown, printable_excerpt("data/" + key)));
  const auto count = static_cast<std::uint64_t>(integer(p, pid->items[4], shown, "storage's element count"));
  if (count > t.storage->size / t.type.bytes || count * t.type.bytes != t.storage->size)
    fail(fmt::format("tensor {}: storage {} claims {} elements of {} bytes, its entry holds {} bytes", shown,
                     printable_excerpt("data/" + key), count, t.type.bytes, t.storage->size));
  t.offset = integer(p, tensor.items[1], shown, "storage offset");
  const std::vector<std::int64_t> sizes = integers(p, tensor.items[2], shown, "sizes");
  t.strides = integers(p, tensor.items[3], shown, "strides");
  if (t.strides.size() != sizes.size())
    fail(fmt::format("tensor {} has {} sizes but {} strides", shown, sizes.size(), t.strides.size()));
  // The last element a view reaches must lie in its storage (no product may overflow on the way).
  std::uint64_t elements = 1, last = static_cast<std::uint64_t>(t.offset);
  bool overflow = false;
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    std::uint64_t reach = 0;
    overflow |= __builtin_mul_overflow(elements, static_cast<std::uint64_t>(sizes[d]), &elements);
    if (sizes[d] > 0)
      overflow |= __builtin_mul_overflow(static_cast<std::uint64_t>(sizes[d] - 1), static_cast<std::uint64_t>(t.strides[d]), &reach) ||
                  __builtin_add_overflow(last, reach, &last);
  }
  if (overflow || elements > (std::uint64_t{1} << 48))
    fail(fmt::format("tensor {} of sizes ({}) and strides ({}) holds or reaches too many elements", shown, fmt::join(sizes, ", "),
                     fmt::join(t.strides, ", ")));
  if (elements > 0 && last >= count)
    fail(fmt::format("tensor {} of sizes ({}), strides ({}) and offset {} reaches element {} of a storage of {}", shown,
                     fmt::join(sizes, ", "), fmt::join(t.strides, ", "), t.offset, last, count));
  t.shape = Shape(std::span<const std::int64_t>(sizes));
  return t;
}

// The tensor `t` views in `storage`, copied out contiguously (and int64 narrowed to int32).
Tensor FileReader::materialize(const TensorPlan& t, const std::vector<char>& storage) const {
  const std::int64_t n = t.shape.numel();
  const std::size_t bytes = t.type.bytes;
  std::vector<char> gathered(static_cast<std::size_t>(n) * bytes);
  const int rank = static_cast<int>(t.strides.size());
  std::vector<std::int64_t> index(static_cast<std::size_t>(rank), 0);
  std::int64_t at = t.offset;
  for (std::int64_t i = 0; i < n; ++i) {
    std::memcpy(&gathered[static_cast<std::size_t>(i) * bytes], &storage[static_cast<std::size_t>(at) * bytes], bytes);
    for (int d = rank - 1; d >= 0; --d) {  // the next index, odometer style
      if (++index[d] < t.shape[d]) {
        at += t.strides[d];
        break;
      }
      at -= (index[d] - 1) * t.strides[d];
      index[d] = 0;
    }
  }
  Tensor out = Tensor::empty(t.shape, {.dtype = t.type.dtype, .category = MemoryCategory::data});
  if (bytes == dtype_size(t.type.dtype)) {
    if (n > 0) std::memcpy(out.data_ptr(), gathered.data(), gathered.size());
    return out;
  }
  auto* narrow = static_cast<std::int32_t*>(out.data_ptr());
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t v;
    std::memcpy(&v, &gathered[static_cast<std::size_t>(i) * 8], 8);
    if (v < std::numeric_limits<std::int32_t>::min() || v > std::numeric_limits<std::int32_t>::max())
      fail(fmt::format("tensor {}: int64 value {} at element {} is past the int32 range Accrue keeps it in",
                       printable_excerpt(t.name), v, i));
    narrow[i] = static_cast<std::int32_t>(v);
  }
  return out;
}

}  // namespace

bool is_pytorch_file(const std::string& path) { return ZipArchive::looks_like_zip(path); }

NamedTensors load_pytorch(const std::string& path, const std::string& entry) {
  return FileReader(ZipArchive::open(path)).read(entry);
}

NamedTensors load_pytorch_from_memory(std::string_view bytes, const std::string& name, const std::string& entry) {
  return FileReader(ZipArchive::in_memory(bytes, name)).read(entry);
}

}  // namespace accrue::serialization
