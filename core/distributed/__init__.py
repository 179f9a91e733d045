"""pyrite.distributed: data-parallel training over several devices of one process
(`LearnerBuilder.devices([...])`) and over Ray workers (`pyrite.distributed.fit`).

Ray is imported only by the functions that start workers, never at `import pyrite.distributed`.
See docs/distributed.md.
"""

from .batches import merge_items, slice_sizes, split_batch
from .collective import Collective
from .launch import fit
from .parallel import DataParallel, rank_seed
from .shard import ShardedDataLoader
from .worker import Run, Setup, WorkerContext

__all__ = ["Collective", "DataParallel", "Run", "Setup", "ShardedDataLoader", "WorkerContext",
           "fit", "merge_items", "rank_seed", "slice_sizes", "split_batch"]
