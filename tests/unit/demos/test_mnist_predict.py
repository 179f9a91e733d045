"""The MNIST demo's input: checked pixels normalised and packed straight into f32 data, the
same bytes TensorData makes of the list (which also checks every value's range)."""

from __future__ import annotations

import random

from pyrite import TensorData
from pyrite.demos.mnist import predict
from pyrite.demos.mnist.data import MEAN, STD


def test_packed_input_equals_tensor_data_of_the_list() -> None:
    rng = random.Random(0)
    images = [[float(rng.choice((0, 255, rng.randint(0, 255), rng.random() * 255)))
               for _ in range(predict.PIXELS)] for _ in range(3)]
    got = predict._normalised([predict.check_pixels(i) for i in images])
    values = [(p / 255.0 - MEAN) / STD for image in images for p in image]
    want = TensorData(values, shape=(3, 28, 28), dtype="f32")
    assert (got.bytes, got.shape, got.dtype) == (want.bytes, want.shape, want.dtype)


def test_one_image_and_a_batch_predict_alike() -> None:
    model = predict.load("numpy")
    rng = random.Random(1)
    images = [[float(rng.randint(0, 255)) for _ in range(predict.PIXELS)] for _ in range(2)]
    batch = predict.predict_batch(model, images)
    for got, image in zip(batch, images, strict=True):
        alone = predict.predict(model, image)  # one image: another matmul, other roundings
        assert got["label"] == alone["label"]
        pairs = zip(got["probabilities"], alone["probabilities"], strict=True)
        assert max(abs(a - b) for a, b in pairs) < 1e-5
