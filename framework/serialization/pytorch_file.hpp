#pragma once
// PyTorch's own file format, as torch.save writes it (PyTorch 1.6 and later): a ZIP archive of
// a pickle (data.pkl) and one entry of raw bytes per storage (data/0, data/1, ...). This reads the
// state_dicts people download and fine-tune from (torchvision's resnet18-f37072fd.pth) and the
// dicts that hold one (a Lightning checkpoint's "state_dict"), with the restricted reader of
// pickle.hpp: nothing in the file is run, and every tensor's sizes, strides and offset are
// checked against its storage before a byte is copied.

#include <string>
#include <string_view>

#include "safetensors.hpp"

namespace accrue::serialization {

/// Whether `path` starts as torch.save's files do (a ZIP archive, "PK\3\4").
bool is_pytorch_file(const std::string& path);

/// The tensors of the state_dict in the file at `path`, in the file's order, as CPU tensors:
/// float32, float16 and bfloat16 as they are, int64 (BatchNorm's num_batches_tracked) as int32.
/// `entry` names the key of the dict that holds the state_dict ("state_dict" in a Lightning
/// checkpoint); empty when the file is the state_dict itself. Throws IoError naming the file and
/// what is wrong: not torch.save's format, a global or call a state_dict never holds (os.system),
/// an unknown opcode, a storage missing or of another size than its count says, a tensor whose
/// strides reach past its storage, an int64 value past int32, tensors that would take more than
/// four times the file's size in memory, or a dict that is no state_dict (naming its keys).
NamedTensors load_pytorch(const std::string& path, const std::string& entry = {});
/// The same from the bytes of a file in memory, named `name` in messages.
NamedTensors load_pytorch_from_memory(std::string_view bytes, const std::string& name, const std::string& entry = {});

}  // namespace accrue::serialization
