"""The demo models that pages and the server's `/api/predict/{name}` run, by name.

Each entry says where its record is (shipped with the demo, or built from a model file the
user provides: see models.py), builds the model on a device from that record and any other
files it needs (labels), and turns a JSON-able input into a JSON-able prediction with the same
Python code natively and in the page. It also names the demo package whose `page/` folder is
its page, and the page's URL name (`/mnist`, `/classify`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pyrite
from pyrite.argtypes import SEED, Range
from pyrite.module import Module

from .inputs import Field, check_inputs
from .models import ModelMissing

Device = str | pyrite.Backend
Source = Path | bytes  # a file natively, its bytes in a page
Builder = Callable[[Device, Source, Mapping[str, Source]], Module]
Inputs = dict[str, object]
Result = dict[str, object]


def _no_files() -> dict[str, Path]:
    return {}


@dataclass(frozen=True)
class DemoModel:
    """A servable model: `load(device)` then `predict(model, inputs)`.

    `locate()` gives the record file and `files()` the other files the model loads, by name
    (both raise ModelMissing, saying where to put the model, when it is not installed);
    `build(device, record, files)` makes the model from them, as files natively and as bytes
    in a page.
    """

    name: str
    description: str
    inputs: str  # what `predict` takes, for error messages and the API's docs
    build: Builder
    run: Callable[[Module, dict[str, object]], dict[str, object]]
    example: dict[str, object]  # a valid input (the bundle build runs it to list the kernels)
    locate: Callable[[], Path]
    files: Callable[[], dict[str, Path]] = _no_files
    package: str = ""  # the demos sub-package whose page/ is its page (default: `name`)
    page: str = ""  # the page's URL name, `/{page}` (default: `name`)
    fields: tuple[Field, ...] = ()  # what `check` accepts (the server's request schema)
    #: several checked inputs in one forward pass, where the model allows (None: one by one)
    run_batch: Callable[[Module, list[Inputs]], list[Result]] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "package", self.package or self.name)
        object.__setattr__(self, "page", self.page or self.name)

    @property
    def record(self) -> Path:
        """The record file (ModelMissing when the model is not installed)."""
        return self.locate()

    def missing(self) -> str | None:
        """Why the model cannot be loaded here (its files are not installed), or None."""
        try:
            self.locate()
            self.files()
        except ModelMissing as exc:
            return f"{self.name}: {exc}"
        return None

    def load(self, device: Device, record: Source | None = None,
             files: Mapping[str, Source] | None = None) -> Module:
        """The model on `device`, from `record` and `files` (default: its own, natively)."""
        return self.build(device, self.locate() if record is None else record,
                          self.files() if files is None else files)

    def predict(self, model: Module, inputs: object) -> dict[str, object]:
        """Run the model on a JSON object; a ValueError names what a valid input is."""
        if not isinstance(inputs, dict):
            raise ValueError(f"{self.name}: the input must be a JSON object: {self.inputs}")
        return self.run(model, inputs)

    def check(self, inputs: object) -> Inputs:
        """The request's fields, strictly checked (types, ranges, lengths; unknown fields
        refused), defaults filled in; InputError names the field and shows a valid body."""
        return check_inputs(self.name, inputs, self.fields, self.inputs)

    def predict_many(self, model: Module, batch: list[Inputs]) -> list[Result]:
        """The predictions for several checked inputs: one forward pass where the model
        allows it (`run_batch`), else one after another."""
        if self.run_batch is not None and len(batch) > 1:
            return self.run_batch(model, batch)
        return [self.run(model, inputs) for inputs in batch]


def _mnist() -> DemoModel:
    from .mnist import predict  # only what inference needs (a page loads no training code)

    def build(device: Device, record: Source, files: Mapping[str, Source]) -> Module:
        return predict.load(device, record)

    def run(model: Module, inputs: dict[str, object]) -> dict[str, object]:
        if "pixels" not in inputs:
            raise ValueError("mnist: the input needs 'pixels': 784 grey levels 0..255 "
                             "(28x28, row-major, white digit on black)")
        return predict.predict(model, inputs["pixels"])  # type: ignore[arg-type]

    def run_batch(model: Module, batch: list[Inputs]) -> list[Result]:
        return predict.predict_batch(model, [i["pixels"] for i in batch])  # type: ignore[arg-type, misc]

    return DemoModel("mnist", "Burn's guide CNN trained on MNIST by pyrite (99.13 %)",
                     '{"pixels": [784 numbers 0..255]}', build, run,
                     {"pixels": [0.0] * predict.PIXELS}, locate=lambda: predict.SHIPPED,
                     fields=(Field("pixels", list, required=True, length=predict.PIXELS,
                                   convert=predict.check_pixels),),
                     run_batch=run_batch)


def _squeezenet() -> DemoModel:
    # only what inference needs: the page imports this; the record is built natively
    from .image_classification import predict

    def locate() -> Path:
        from .image_classification import files

        return files.record_path()

    def labels() -> dict[str, Path]:
        from .image_classification import files

        return {"labels": files.labels_path()}

    def build(device: Device, record: Source, files: Mapping[str, Source]) -> Module:
        if "labels" not in files:
            raise ModelMissing("squeezenet: the ImageNet labels (synset.txt) were not given")
        return predict.load(device, record, files["labels"])

    def run(model: Module, inputs: dict[str, object]) -> dict[str, object]:
        if "pixels" not in inputs:
            raise ValueError(f"squeezenet: the input needs 'pixels': {predict.INPUT_TEXT}")
        return predict.predict(model, inputs["pixels"])  # type: ignore[arg-type]

    def run_batch(model: Module, batch: list[Inputs]) -> list[Result]:
        return predict.predict_batch(model, [i["pixels"] for i in batch])  # type: ignore[arg-type]

    return DemoModel("squeezenet", "SqueezeNet 1.1, an ImageNet classifier imported from ONNX: "
                     "photos to 1000 classes", f'{{"pixels": [{predict.PIXELS} numbers 0..255: '
                     f'RGB, row-major, {predict.SIDE}x{predict.SIDE}]}}', build, run,
                     {"pixels": [0] * predict.PIXELS}, locate=locate, files=labels,
                     package="image_classification", page="classify",
                     fields=(Field("pixels", list, required=True, length=predict.PIXELS,
                                   convert=predict.check_pixels),),
                     run_batch=run_batch)


def _charlm() -> DemoModel:
    from .charlm import generate, session  # inference only (a page loads no training code)

    def build(device: Device, record: Source, files: Mapping[str, Source]) -> Module:
        config = files.get("config", generate.CONFIG)
        model = generate.load(device, record, config)
        session.use(model)  # the page's streaming session generates with the latest one
        return model

    def run(model: Module, inputs: dict[str, object]) -> dict[str, object]:
        given = check_inputs("charlm", inputs, fields, example)
        text = generate.generate(model, given["prompt"], given["tokens"],  # type: ignore[arg-type]
                                 temperature=given["temperature"],  # type: ignore[arg-type]
                                 top_k=given["top_k"],  # type: ignore[arg-type]
                                 seed=given["seed"])  # type: ignore[arg-type]
        return {"text": text}

    example = ('{"prompt": "text", "tokens": 0..2000, "temperature": 0.8, "top_k": 20, '
               '"seed": 0}')
    fields = (Field("prompt", str, default="", max_length=2_000),
              Field("tokens", int, default=100, range=Range(0, 2000, integer=True)),
              Field("temperature", float, default=0.8, range=Range(0, 100)),
              Field("top_k", int, default=20, range=Range(1, 1000, integer=True),
                    nullable=True),
              Field("seed", int, default=0, range=SEED))

    return DemoModel("charlm", "a character-level transformer trained by pyrite on the "
                     "standard library's docstrings: continues your text",
                     example, build, run, {"prompt": "Return the", "tokens": 4},
                     locate=lambda: generate.SHIPPED,
                     files=lambda: {"config": generate.CONFIG}, fields=fields)


_BUILDERS: dict[str, Callable[[], DemoModel]] = {"mnist": _mnist, "squeezenet": _squeezenet}
_BUILDERS["charlm"] = _charlm


#: demo pages that are not one model's: URL name -> (demos sub-package holding page/, what
#: it is)
PAGES: dict[str, tuple[str, str]] = {
    "train": ("train", "train an MNIST model in this page on WebGPU, with a live dashboard, "
                       "then draw digits for it"),
}


def names() -> list[str]:
    """The demo models' names."""
    return sorted(_BUILDERS)


def get(name: str) -> DemoModel:
    """The demo model called `name`; KeyError naming the known ones."""
    builder = _BUILDERS.get(name)
    if builder is None:
        raise KeyError(f"unknown model {name!r}; known models: {', '.join(names())}")
    return builder()


__all__ = ["PAGES", "DemoModel", "ModelMissing", "get", "names"]
