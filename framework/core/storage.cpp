#include "storage.hpp"

namespace accrue {

Storage::Storage(std::size_t bytes, Device device, MemoryCategory category)
    : allocator_(&allocator(device)), data_(allocator_->allocate(bytes, category)), bytes_(bytes), category_(category) {}

Storage::~Storage() { allocator_->deallocate(data_, bytes_, category_); }

void Storage::set_category(MemoryCategory category) {
  allocator_->recategorize(bytes_, category_, category);
  category_ = category;
}

}  // namespace accrue
