#include "sequential.hpp"

namespace accrue {

Sequential::Sequential() : Model("sequential") {}

Sequential& Sequential::add(std::unique_ptr<Layer> layer) {
  append(std::move(layer));
  return *this;
}

Sequential& Sequential::add(const layers::Input& input) {
  declare_input(input);
  return *this;
}

}  // namespace accrue
