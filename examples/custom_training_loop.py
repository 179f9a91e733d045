"""Burn's "Custom Training Loop" example in pyrite: train the guide's MNIST model without the
Learner, with the optimizer, `GradientsParams` and `model.valid()` used directly.

Run it (MNIST's four .gz files in $PYRITE_DATA/mnist, or downloaded to ~/.cache/pyrite/mnist):

    python examples/custom_training_loop.py                      # the book's settings
    python examples/custom_training_loop.py --epochs 1 --limit 20  # a quick look: 20 batches

`--split-rates` steps the two convolutions with their own learning rates and the rest with
the base rate, as the book's "Multiple optimizers" section shows.
"""

from __future__ import annotations

import argparse
from dataclasses import KW_ONLY
from itertools import islice

import pyrite
from pyrite.dataset import DataLoaderBuilder, MnistDataset
from pyrite.demos.mnist import MnistBatcher, ModelConfig
from pyrite.module import Config
from pyrite.nn.loss import CrossEntropyLossConfig
from pyrite.optim import AdamConfig, GradientsParams


class MnistTrainingConfig(Config):
    model: ModelConfig
    optimizer: AdamConfig
    _: KW_ONLY
    num_epochs: int = 10
    batch_size: int = 64
    num_workers: int = 4
    seed: int = 42
    lr: float = 1e-4


def accuracy(output: pyrite.Tensor, targets: pyrite.Tensor) -> float:
    """Percent of rows whose largest logit is the target."""
    predictions = output.argmax(1).reshape((targets.shape[0],))
    return 100.0 * float((predictions == targets).int().sum()) / targets.shape[0]


def run(device: str = "autodiff<numpy>", *, epochs: int | None = None, limit: int | None = None,
        split_rates: bool = False) -> None:
    # Create the configuration (the book uses a hidden size of 1024 here).
    config = MnistTrainingConfig(ModelConfig(10, 1024), AdamConfig())
    if epochs is not None:
        config = config.with_num_epochs(epochs)
    pyrite.seed(config.seed)

    # Create the model and optimizer.
    ad = pyrite.device(device)
    model = config.model.init(ad)
    optim = config.optimizer.init()

    # Create the batchers: training batches on the autodiff device, validation on the inner one.
    batcher_train = MnistBatcher(ad)
    batcher_valid = MnistBatcher(ad.inner)  # type: ignore[attr-defined]

    # Create the dataloaders.
    dataloader_train = (DataLoaderBuilder(batcher_train).batch_size(config.batch_size)
                        .shuffle(config.seed).num_workers(config.num_workers)
                        .build(MnistDataset.train()))
    dataloader_test = (DataLoaderBuilder(batcher_valid).batch_size(config.batch_size)
                       .shuffle(config.seed).num_workers(config.num_workers)
                       .build(MnistDataset.test()))
    loss_fn = CrossEntropyLossConfig().init()

    # Iterate over our training and validation loop for X epochs.
    for epoch in range(1, config.num_epochs + 1):
        # Implement our training loop.
        for iteration, batch in enumerate(islice(dataloader_train, limit)):
            output = model.forward(batch.images)
            loss = loss_fn(output, batch.targets)
            print(f"[Train - Epoch {epoch} - Iteration {iteration}] "
                  f"Loss {float(loss):.3f} | Accuracy {accuracy(output, batch.targets):.3f} %")

            # Gradients for the current backward pass.
            grads = loss.backward()
            if split_rates:
                # Different rates for different parts: each from_module call moves that
                # submodule's gradients out of `grads`; from_grads takes what is left.
                grads_conv1 = GradientsParams.from_module(grads, model.conv1)
                grads_conv2 = GradientsParams.from_module(grads, model.conv2)
                model = optim.step(config.lr * 2.0, model, grads_conv1)
                model = optim.step(config.lr * 4.0, model, grads_conv2)
            # Gradients linked to each parameter of the model.
            grads_params = GradientsParams.from_grads(grads, model)
            # Update the model using the optimizer.
            model = optim.step(config.lr, model, grads_params)

        # Get the model without autodiff: no graph, dropout off.
        model_valid = model.valid()

        # Implement our validation loop.
        for iteration, batch in enumerate(islice(dataloader_test, limit)):
            output = model_valid.forward(batch.images)
            loss = loss_fn(output, batch.targets)
            print(f"[Valid - Epoch {epoch} - Iteration {iteration}] "
                  f"Loss {float(loss):.3f} | Accuracy {accuracy(output, batch.targets):.3f} %")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, help="epochs (the book's config: 10)")
    parser.add_argument("--limit", type=int, help="batches per epoch and split (default: all)")
    parser.add_argument("--split-rates", action="store_true",
                        help="step conv1 and conv2 at 2x and 4x the base rate")
    parser.add_argument("--device", default="autodiff<numpy>")
    args = parser.parse_args()
    run(args.device, epochs=args.epochs, limit=args.limit, split_rates=args.split_rates)


if __name__ == "__main__":
    main()
