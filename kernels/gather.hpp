#pragma once
// Rows of a table picked by int32 indices, and the gradient that adds them back: the arithmetic of
// embeddings.

#include <cstdint>

#include "../framework/core/tensor.hpp"

namespace accrue::kernels {

/// out[i, :] = table[indices[i], :] for table (V, D), n int32 indices and out (n, D), of table's
/// floating type. An index outside [0, V) throws ValueError naming its position and value.
void gather_rows(const Tensor& table, const Tensor& indices, const Tensor& out);

/// table_grad[indices[i], :] += grad[i, :] for every i whose index is not `skip` (an embedding's
/// padding_idx; -1: none), float32: gather_rows's gradient. Repeated indices add up.
void scatter_add_rows(const Tensor& grad, const Tensor& indices, const Tensor& table_grad, std::int64_t skip);

}  // namespace accrue::kernels
