#include "sharding.hpp"

#include "../framework/distributed/reducer.hpp"

namespace accrue {

distributed::Sharding reducer_sharding(Shard shard, ShardAccumulation accumulation) {
  switch (shard) {
    case Shard::none: return distributed::Sharding::none;
    case Shard::optimizer_state: return distributed::Sharding::optimizer_state;
    case Shard::gradients:
      return accumulation == ShardAccumulation::reduce_each_micro_batch ? distributed::Sharding::gradients_each_micro_batch
                                                                         : distributed::Sharding::gradients_at_window_close;
  }
  return distributed::Sharding::none;
}

}  // namespace accrue
