#include "pickle.hpp"

#include <array>
#include <bit>
#include <cstring>
#include <unordered_map>

#include "../core/error.hpp"
#include "../core/utf8.hpp"

namespace accrue::serialization::pickle {
namespace {

// The globals a state_dict is made of; anything else a pickle imports is refused.
constexpr std::array<std::string_view, 6> accepted_globals = {
    "collections.OrderedDict", "torch._utils._rebuild_tensor_v2", "torch.FloatStorage",
    "torch.HalfStorage",       "torch.BFloat16Storage",           "torch.LongStorage"};

Object value_of(Kind kind, std::int64_t integer = 0) {
  Object o;
  o.kind = kind;
  o.integer = integer;
  return o;
}
Object items_of(Kind kind, std::vector<std::size_t> items) {
  Object o;
  o.kind = kind;
  o.items = std::move(items);
  return o;
}
Object text_of(Kind kind, std::string text) {
  Object o;
  o.kind = kind;
  o.text = std::move(text);
  return o;
}

// Bounds the memory a crafted pickle can take: each opcode makes at most one value.
constexpr std::size_t max_values = 4'000'000;

class Reader {
 public:
  Reader(std::string_view bytes, const std::string& where) : bytes_(bytes), where_(where) {}

  Pickle run() {
    while (true) {
      if (at_ >= bytes_.size()) fail("the pickle ends without STOP (cut short)");
      op_at_ = at_;
      const auto op = static_cast<unsigned char>(bytes_[at_++]);
      if (op == '.') break;
      if (!structure(op) && !value(op) && !memo(op) && !call(op))
        fail(fmt::format("opcode 0x{:02x} is not one a state_dict is written with", op));
    }
    if (stack_.size() != 1 || !marks_.empty()) fail("STOP with a stack that does not hold one value");
    out_.root = stack_.back();
    return std::move(out_);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw IoError(fmt::format("{}: {} at byte {}; nothing in the file was run", where_, what, op_at_));
  }
  std::string_view take(std::uint64_t n) {
    if (n > bytes_.size() - at_) fail("a value cut short");
    const std::string_view s = bytes_.substr(at_, n);
    at_ += n;
    return s;
  }
  std::uint64_t unsigned_le(int n) {
    const std::string_view s = take(static_cast<std::uint64_t>(n));
    std::uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = v << 8 | static_cast<unsigned char>(s[i]);
    return v;
  }
  std::size_t make(Object o) {
    if (out_.objects.size() == max_values)
      fail(fmt::format("more than {} values, far more than a state_dict holds", max_values));
    out_.objects.push_back(std::move(o));
    return out_.objects.size() - 1;
  }
  void push(Object o) { stack_.push_back(make(std::move(o))); }
  std::size_t pop() {
    if (stack_.size() <= (marks_.empty() ? 0 : marks_.back())) fail("an opcode takes a value from an empty stack");
    const std::size_t v = stack_.back();
    stack_.pop_back();
    return v;
  }
  // The values since the last MARK, which is dropped.
  std::vector<std::size_t> pop_mark() {
    if (marks_.empty()) fail("an opcode needs a MARK that is not there");
    std::vector<std::size_t> items(stack_.begin() + static_cast<std::ptrdiff_t>(marks_.back()), stack_.end());
    stack_.resize(marks_.back());
    marks_.pop_back();
    return items;
  }
  Object& object(std::size_t i) { return out_.objects[i]; }
  Object& container(std::size_t i, Kind kind, const char* op) {
    if (object(i).kind != kind) fail(fmt::format("{} on {}, not {}", op, kind_name(object(i).kind), kind_name(kind)));
    return object(i);
  }
  std::size_t top() {
    if (stack_.empty()) fail("an opcode needs a value on an empty stack");
    return stack_.back();
  }

  bool structure(unsigned char op);
  bool value(unsigned char op);
  bool memo(unsigned char op);
  bool call(unsigned char op);
  void add_items(std::size_t target, const std::vector<std::size_t>& items, Kind kind, const char* op);
  void global(const std::string& module, const std::string& name);
  void reduce();

  std::string_view bytes_;
  std::string where_;
  std::size_t at_ = 0, op_at_ = 0;
  Pickle out_;
  std::vector<std::size_t> stack_, marks_;
  std::unordered_map<std::uint64_t, std::size_t> memo_;
};

bool Reader::structure(unsigned char op) {
  switch (op) {
    case 0x80: {  // PROTO
      const std::uint64_t protocol = unsigned_le(1);
      if (protocol < 2 || protocol > 5) fail(fmt::format("pickle protocol {} (torch.save writes 2)", protocol));
      return true;
    }
    case 0x95: unsigned_le(8); return true;  // FRAME: a length to read ahead, not needed here
    case '(': marks_.push_back(stack_.size()); return true;
    case '0': pop(); return true;
    case '1': pop_mark(); return true;
    case '2': stack_.push_back(top()); return true;
    case '}': push(value_of(Kind::dict)); return true;
    case ']': push(value_of(Kind::list)); return true;
    case ')': push(value_of(Kind::tuple)); return true;
    case 't': push(items_of(Kind::tuple, pop_mark())); return true;
    case 'l': push(items_of(Kind::list, pop_mark())); return true;
    case 'd': {
      std::vector<std::size_t> items = pop_mark();
      if (items.size() % 2 != 0) fail("DICT with a key left without its value");
      push(items_of(Kind::dict, std::move(items)));
      return true;
    }
    case 0x85: case 0x86: case 0x87: {  // TUPLE1, TUPLE2, TUPLE3
      std::vector<std::size_t> items(op - 0x84);
      for (auto it = items.rbegin(); it != items.rend(); ++it) *it = pop();
      push(items_of(Kind::tuple, std::move(items)));
      return true;
    }
    case 'a': { const std::size_t v = pop(); add_items(top(), {v}, Kind::list, "APPEND"); return true; }
    case 'e': { std::vector<std::size_t> items = pop_mark(); add_items(top(), items, Kind::list, "APPENDS"); return true; }
    case 's': { const std::size_t v = pop(), k = pop(); add_items(top(), {k, v}, Kind::dict, "SETITEM"); return true; }
    case 'u': { std::vector<std::size_t> items = pop_mark(); add_items(top(), items, Kind::dict, "SETITEMS"); return true; }
    default: return false;
  }
}

void Reader::add_items(std::size_t target, const std::vector<std::size_t>& items, Kind kind, const char* op) {
  Object& o = container(target, kind, op);
  if (kind == Kind::dict && items.size() % 2 != 0) fail(fmt::format("{} with a key left without its value", op));
  o.items.insert(o.items.end(), items.begin(), items.end());
}

bool Reader::value(unsigned char op) {
  switch (op) {
    case 'N': push(value_of(Kind::none)); return true;
    case 0x88: push(value_of(Kind::boolean, 1)); return true;
    case 0x89: push(value_of(Kind::boolean, 0)); return true;
    case 'K': push(value_of(Kind::integer, static_cast<std::int64_t>(unsigned_le(1)))); return true;
    case 'M': push(value_of(Kind::integer, static_cast<std::int64_t>(unsigned_le(2)))); return true;
    case 'J': {
      const auto v = static_cast<std::int32_t>(static_cast<std::uint32_t>(unsigned_le(4)));
      push(value_of(Kind::integer, v));
      return true;
    }
    case 0x8a: {  // LONG1: n little-endian bytes, two's complement
      const std::uint64_t n = unsigned_le(1);
      if (n > 8) fail(fmt::format("an integer of {} bytes, past 64 bits", n));
      std::uint64_t v = n == 0 ? 0 : unsigned_le(static_cast<int>(n));
      if (n > 0 && n < 8 && (v >> (8 * n - 1)) != 0) v |= ~std::uint64_t{0} << (8 * n);  // negative: extend the sign
      push(value_of(Kind::integer, static_cast<std::int64_t>(v)));
      return true;
    }
    case 'G': {  // BINFLOAT, big-endian
      const std::string_view s = take(8);
      std::uint64_t bits = 0;
      for (const char c : s) bits = bits << 8 | static_cast<unsigned char>(c);
      Object o = value_of(Kind::floating);
      o.floating = std::bit_cast<double>(bits);
      push(std::move(o));
      return true;
    }
    case 'X': case 0x8c: case 0x8d: {  // BINUNICODE, SHORT_BINUNICODE, BINUNICODE8
      const std::uint64_t n = unsigned_le(op == 'X' ? 4 : op == 0x8c ? 1 : 8);
      push(text_of(Kind::text, std::string(take(n))));
      return true;
    }
    default: return false;
  }
}

bool Reader::memo(unsigned char op) {
  switch (op) {
    case 'q': memo_[unsigned_le(1)] = top(); return true;
    case 'r': memo_[unsigned_le(4)] = top(); return true;
    case 0x94: memo_[memo_.size()] = top(); return true;  // MEMOIZE
    case 'h': case 'j': {
      const std::uint64_t key = unsigned_le(op == 'h' ? 1 : 4);
      const auto it = memo_.find(key);
      if (it == memo_.end()) fail(fmt::format("memo {} is read before it is written", key));
      stack_.push_back(it->second);
      return true;
    }
    default: return false;
  }
}

bool Reader::call(unsigned char op) {
  switch (op) {
    case 'c': {  // GLOBAL "module\nname\n"
      const auto line = [&] {
        const std::size_t end = bytes_.find('\n', at_);
        if (end == std::string_view::npos) fail("GLOBAL cut short");
        const std::size_t length = end - at_;
        return std::string(take(length + 1).substr(0, length));
      };
      const std::string module = line(), name = line();
      global(module, name);
      return true;
    }
    case 0x93: {  // STACK_GLOBAL
      const std::size_t name = pop(), module = pop();
      if (object(name).kind != Kind::text || object(module).kind != Kind::text) fail("STACK_GLOBAL of values that are not strings");
      global(object(module).text, object(name).text);
      return true;
    }
    case 'R': reduce(); return true;
    case 'Q': push(items_of(Kind::persistent, {pop()})); return true;
    case 'b': {  // BUILD: OrderedDict's attributes (state_dict's _metadata), which a reader needs not
      const std::size_t state = pop();
      if (object(top()).kind != Kind::dict || object(state).kind != Kind::dict)
        fail(fmt::format("BUILD of {} with {}", kind_name(object(top()).kind), kind_name(object(state).kind)));
      return true;
    }
    default: return false;
  }
}

void Reader::global(const std::string& module, const std::string& name) {
  const std::string full = module + "." + name;
  for (const std::string_view accepted : accepted_globals)
    if (full == accepted) return push(text_of(Kind::global, full));
  fail(fmt::format("global {} is refused: a state_dict holds only tensors of float32, float16, bfloat16 or int64 "
                   "(torch.save(model.state_dict())), and a pickle that imports anything else could run code",
                   printable_excerpt(full, 80)));
}

void Reader::reduce() {
  const std::size_t args = pop(), callable = pop();
  const Object& f = object(callable);
  if (object(args).kind != Kind::tuple) fail(fmt::format("REDUCE with {} for arguments", kind_name(object(args).kind)));
  if (f.kind == Kind::global && f.text == "collections.OrderedDict") {
    if (!object(args).items.empty()) fail("collections.OrderedDict called with arguments");
    return push(value_of(Kind::dict));
  }
  if (f.kind == Kind::global && f.text == "torch._utils._rebuild_tensor_v2")
    return push(items_of(Kind::tensor, object(args).items));
  fail(fmt::format("REDUCE calls {}{}, which a state_dict never does", kind_name(f.kind),
                   f.kind == Kind::global ? " " + f.text : std::string()));
}

}  // namespace

const Object* Pickle::find(const Object& dict, std::string_view key) const {
  for (std::size_t i = 0; i + 1 < dict.items.size(); i += 2) {
    const Object& k = objects[dict.items[i]];
    if (k.kind == Kind::text && k.text == key) return &objects[dict.items[i + 1]];
  }
  return nullptr;
}

Pickle unpickle(std::string_view bytes, const std::string& where) { return Reader(bytes, where).run(); }

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::none: return "None";
    case Kind::boolean: return "a boolean";
    case Kind::integer: return "an integer";
    case Kind::floating: return "a float";
    case Kind::text: return "a string";
    case Kind::tuple: return "a tuple";
    case Kind::list: return "a list";
    case Kind::dict: return "a dict";
    case Kind::global: return "a global";
    case Kind::persistent: return "a persistent id";
    case Kind::tensor: return "a tensor";
  }
  return "a value";
}

}  // namespace accrue::serialization::pickle
