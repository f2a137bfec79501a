#pragma once
// NumPy's .npz archives (np.savez, np.savez_compressed): a ZIP file of .npy files, stored or
// deflated, with ZIP64 sizes as NumPy writes them. Each member is read as npy() reads a file.
//
//   auto arrays = datasets::npz("data.npz");
//   Dataset train{arrays.at("x_train"), arrays.at("y_train")};

#include <map>
#include <string>
#include <string_view>

#include "npy.hpp"

namespace accrue::datasets {

/// The arrays of the archive at `path`, by name (without ".npy"). Throws IoError naming the file
/// (and the member, with its byte offset in the archive) for anything that is not a ZIP archive
/// of .npy files Accrue reads: encrypted or unknown compression, a wrong checksum, a member past
/// the end, or a member that is not a valid .npy file.
std::map<std::string, Tensor> npz(const std::string& path, const NpyLimits& limits = {});
/// The same from the bytes of an archive in memory.
std::map<std::string, Tensor> npz_from_memory(std::string_view bytes, const std::string& name, const NpyLimits& limits = {});

}  // namespace accrue::datasets
