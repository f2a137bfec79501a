#pragma once
// Inside onnx::Graph (onnx.hpp): the onnx library's protobuf model being written. Only the
// exporter's own files include this; it is not installed, so a program that uses Accrue needs no
// onnx headers.

#include <map>
#include <set>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "onnx.hpp"

namespace accrue::onnx {

using LayerRecord = OnnxExport::LayerNodes;

struct Graph::Impl {
  explicit Impl(Graph& g) : owner(g) {}
  Graph& owner;
  ::onnx::ModelProto model;
  ::onnx::GraphProto* graph = nullptr;
  int opset = 17;
  // The layer being written: its place in the model, one name per level ("3", "self_attn").
  std::vector<std::string> scope;
  // How often each name was given out, so that every value, node and initializer name is unique.
  std::map<std::string, int> used;
  // Constants already written, by their values.
  std::map<std::string, std::string> constants;
  // Where the top-level layer being written records its nodes.
  LayerRecord* recording = nullptr;
  // The values whose images may be of any height and width.
  std::set<std::string> any_image_size;

  std::string prefix() const;
  std::string fresh(const std::string& base);
  void add_float_initializer(const std::string& name, const std::vector<float>& values,
                             const std::vector<std::int64_t>& dims);
  /// Model layer `index`'s nodes, recorded in `record`; returns its output's name.
  std::string top_layer(std::size_t index, const Layer& layer, const std::vector<std::string>& xs, LayerRecord& record);
};

/// Per graph input of the ONNX file `path`: whether it takes uint8 (OnnxExportOptions::uint8_pixels).
std::vector<bool> uint8_inputs(const std::string& path);

}  // namespace accrue::onnx
