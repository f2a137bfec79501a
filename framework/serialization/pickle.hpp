#pragma once
// A restricted reader of the Python pickles torch.save writes for a state_dict (data.pkl in
// PyTorch's zip format). A pickle is a program: its opcodes may import any Python function and
// call it (GLOBAL + REDUCE is how a crafted file runs os.system). This reader runs nothing. It
// knows the opcodes of protocols 2 to 4 that build plain values (None, booleans, integers, floats,
// strings, tuples, lists, dicts) and accepts only the globals a state_dict is made of:
// collections.OrderedDict (called with no arguments), torch._utils._rebuild_tensor_v2 (whose call
// is kept as a tensor to be made by the caller, from its arguments), and the storage types of
// float32, float16, bfloat16 and int64, named by the persistent ids that point into data/N. Any
// other global, a call of anything else, or an opcode it does not know is refused naming it and
// the byte where it stands.
//
// The values live in one flat list and refer to each other by index, so that a pickle nested a
// million levels deep, or one that puts a list inside itself, is read and freed without recursion.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace accrue::serialization::pickle {

enum class Kind : std::uint8_t {
  none,
  boolean,
  integer,
  floating,
  text,
  tuple,
  list,
  dict,
  /// One of the globals accepted: `text` holds "module.name" ("torch.FloatStorage").
  global,
  /// A persistent id (BINPERSID): `items` holds its one value, the tuple ("storage", type, key,
  /// location, count) torch.save writes.
  persistent,
  /// torch._utils._rebuild_tensor_v2 called: `items` holds its arguments (storage, offset, sizes,
  /// strides, requires_grad, hooks[, metadata]).
  tensor,
};

struct Object {
  Kind kind = Kind::none;
  /// A boolean's or integer's value.
  std::int64_t integer = 0;
  double floating = 0.0;
  /// A string's UTF-8 bytes; a global's "module.name".
  std::string text;
  /// The elements of a tuple or list; a dict's keys and values, alternating, in order.
  std::vector<std::size_t> items;
};

struct Pickle {
  /// Every value made; objects[root] is what the pickle returns.
  std::vector<Object> objects;
  std::size_t root = 0;

  const Object& at(std::size_t i) const { return objects.at(i); }
  /// The value under string key `key` of dict `dict`, or nullptr.
  const Object* find(const Object& dict, std::string_view key) const;
};

/// Reads the pickle `bytes` (at most 4,000,000 values, far more than a state_dict holds). Throws IoError naming `where` (the file and entry) and what was
/// refused: "global 'os.system' (a state_dict holds only tensors ...) at byte 2", "opcode 0x93 at
/// byte 40 is not one a state_dict is written with", a value cut short.
Pickle unpickle(std::string_view bytes, const std::string& where);

/// The kind in words, for messages ("a dict", "a tensor").
const char* kind_name(Kind kind);

}  // namespace accrue::serialization::pickle
