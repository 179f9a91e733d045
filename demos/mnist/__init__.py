"""The MNIST guide of Burn's book as a product: the model, its batcher, training with the
Learner, inference, and the trained record shipped as `mnist.bin` (half precision).

Commands: `pyrite train mnist [--epochs N --artifacts DIR]`, `pyrite infer mnist --index 42`.
"""

from .data import MnistBatch, MnistBatcher
from .model import Model, ModelConfig

__all__ = ["MnistBatch", "MnistBatcher", "Model", "ModelConfig"]
