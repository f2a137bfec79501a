// Files torch.save writes: the ZIP archive (ZIP64 included), the restricted unpickler of data.pkl
// (opcodes, memo, marks, the globals it accepts), each tensor's storage, sizes, strides and offset,
// and the dict around a state_dict (read both as the state_dict and under "state_dict").
#include <accrue/accrue.hpp>
#include <accrue/framework/serialization/pytorch_file.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes{reinterpret_cast<const char*>(data), size};
  for (const char* entry : {"", "state_dict"}) {
    try {
      for (const auto& [name, t] : accrue::serialization::load_pytorch_from_memory(bytes, "fuzz.pth", entry))
        if (t.numel() > 0 && t.dtype() == accrue::DType::f32) (void)t.to_vector<float>();
    } catch (const accrue::Error&) {
    }
  }
  return 0;
}
