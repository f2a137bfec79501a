#include "bucket_plan.hpp"

#include <algorithm>

#include "../core/error.hpp"

namespace accrue::distributed {

BucketPlan::BucketPlan(std::span<const std::int64_t> parameter_elements, std::size_t element_bytes,
                       std::size_t bucket_bytes)
    : place_(parameter_elements.size()) {
  ACCRUE_CHECK(bucket_bytes > 0, "bucket_bytes must be positive");
  const std::int64_t align = std::max<std::int64_t>(1, static_cast<std::int64_t>(kAlignBytes / element_bytes));
  const auto aligned = [&](std::int64_t elements) { return (elements + align - 1) / align * align; };
  for (std::size_t i = parameter_elements.size(); i-- > 0;) {
    const std::int64_t n = aligned(parameter_elements[i]);
    const auto bytes = [&](std::int64_t elements) { return static_cast<std::size_t>(elements) * element_bytes; };
    if (buckets_.empty() || (!buckets_.back().parameters.empty() && bytes(buckets_.back().elements + n) > bucket_bytes))
      buckets_.emplace_back();
    Bucket& b = buckets_.back();
    place_[i] = {buckets_.size() - 1, b.parameters.size()};
    b.parameters.push_back(i);
    b.offsets.push_back(b.elements);
    b.sizes.push_back(parameter_elements[i]);
    b.elements += n;
  }
}

BucketReadiness::BucketReadiness(const BucketPlan& plan) : plan_(plan) { reset(); }

void BucketReadiness::reset() {
  std::size_t parameters = 0;
  missing_.clear();
  for (const BucketPlan::Bucket& b : plan_.buckets()) {
    missing_.push_back(b.parameters.size());
    parameters += b.parameters.size();
  }
  ready_.assign(parameters, false);
  next_ = 0;
}

std::vector<std::size_t> BucketReadiness::mark_ready(std::size_t p) {
  ACCRUE_CHECK(p < ready_.size(), "mark_ready({}): there are {} parameters", p, ready_.size());
  if (ready_[p]) return {};
  ready_[p] = true;
  --missing_[plan_.bucket_of(p)];
  std::vector<std::size_t> now;
  while (next_ < missing_.size() && missing_[next_] == 0) now.push_back(next_++);
  return now;
}

}  // namespace accrue::distributed
