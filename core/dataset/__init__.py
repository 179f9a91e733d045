"""pyrite.dataset: datasets, lazy transforms, data loaders and ready-made sources (MNIST, images).

Re-exports only; each concept lives in its own module (see docs/datasets.md).
"""

from ..errors import DatasetError, DownloadError
from .base import Dataset
from .dataloader import Batcher, DataLoader, DataLoaderBuilder
from .download import data_root
from .idx import IdxArray, parse_idx
from .image import Image, decode_image
from .image_folder import IMAGE_EXTENSIONS, ImageFolderDataset
from .memory import InMemDataset
from .mnist import MnistDataset
from .sampler import SamplerDataset, ShuffledDataset
from .sqlite import SqliteDataset
from .sqlite_writer import SqliteDatasetWriter
from .transform import ComposedDataset, MapperDataset, PartialDataset, WindowsDataset

__all__ = [
    "IMAGE_EXTENSIONS",
    "Batcher",
    "ComposedDataset",
    "DataLoader",
    "DataLoaderBuilder",
    "Dataset",
    "DatasetError",
    "DownloadError",
    "IdxArray",
    "Image",
    "ImageFolderDataset",
    "InMemDataset",
    "MapperDataset",
    "MnistDataset",
    "PartialDataset",
    "SamplerDataset",
    "ShuffledDataset",
    "SqliteDataset",
    "SqliteDatasetWriter",
    "WindowsDataset",
    "data_root",
    "decode_image",
    "parse_idx",
]
