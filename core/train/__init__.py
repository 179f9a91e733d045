"""pyrite.train: the Learner (Burn's training loop), metrics, loggers, checkpoints, renderers.

Re-exports only; see docs/training.md.
"""

from .checkpoint import (
    CheckpointingStrategy,
    FileCheckpointer,
    KeepLastNCheckpoints,
    MetricCheckpointingStrategy,
)
from .events import EventRenderer, start_event
from .interrupt import Interrupter
from .learner import Learner, LearnerBuilder
from .logger import (
    FileApplicationLoggerInstaller,
    FileMetricLogger,
    InMemoryMetricLogger,
    MetricLogger,
)
from .metric import Metric, MetricEntry, MetricMetadata
from .metrics import Accuracy, LearningRate, Loss, TopKAccuracy
from .output import ClassificationOutput, RegressionOutput, TrainOutput
from .renderer import (
    MultiRenderer,
    NoRenderer,
    PlainRenderer,
    Progress,
    Renderer,
    TerminalRenderer,
)
from .summary import LearnerSummary
from .system import CpuMemory, CpuTemperature, CpuUse

__all__ = [
    "Accuracy",
    "CheckpointingStrategy",
    "ClassificationOutput",
    "CpuMemory",
    "CpuTemperature",
    "CpuUse",
    "EventRenderer",
    "FileApplicationLoggerInstaller",
    "FileCheckpointer",
    "FileMetricLogger",
    "InMemoryMetricLogger",
    "Interrupter",
    "KeepLastNCheckpoints",
    "Learner",
    "LearnerBuilder",
    "LearnerSummary",
    "LearningRate",
    "Loss",
    "Metric",
    "MetricCheckpointingStrategy",
    "MetricEntry",
    "MetricLogger",
    "MetricMetadata",
    "MultiRenderer",
    "NoRenderer",
    "PlainRenderer",
    "Progress",
    "RegressionOutput",
    "Renderer",
    "TerminalRenderer",
    "TopKAccuracy",
    "TrainOutput",
    "start_event",
]
