"""pyrite.dataset: datasets, lazy transforms, data loaders and ready-made sources (MNIST, images).

Re-exports only; each concept lives in its own module (see docs/datasets.md).
"""

from ..errors import DatasetError, DownloadError
from .arrow import ArrowDataset
from .base import Dataset
from .columns import Audio
from .dataframe import DataframeDataset
from .dataloader import Batcher, DataLoader, DataLoaderBuilder
from .download import data_root
from .huggingface import HuggingfaceDataset, HuggingfaceDatasetLoader
from .idx import IdxArray, parse_idx
from .image import Image, decode_image, decode_image_bytes
from .image_folder import IMAGE_EXTENSIONS, ImageFolderDataset
from .memory import InMemDataset
from .mnist import MnistDataset
from .pack import PackDataset, write_pack
from .parquet import ParquetDataset
from .sampler import SamplerDataset, ShuffledDataset
from .sqlite import SqliteDataset
from .sqlite_writer import SqliteDatasetWriter
from .transform import ComposedDataset, MapperDataset, PartialDataset, WindowsDataset

__all__ = [
    "IMAGE_EXTENSIONS",
    "ArrowDataset",
    "Audio",
    "Batcher",
    "ComposedDataset",
    "DataLoader",
    "DataframeDataset",
    "DataLoaderBuilder",
    "Dataset",
    "DatasetError",
    "DownloadError",
    "HuggingfaceDataset",
    "HuggingfaceDatasetLoader",
    "IdxArray",
    "Image",
    "ImageFolderDataset",
    "InMemDataset",
    "MapperDataset",
    "MnistDataset",
    "PackDataset",
    "ParquetDataset",
    "PartialDataset",
    "SamplerDataset",
    "ShuffledDataset",
    "SqliteDataset",
    "SqliteDatasetWriter",
    "WindowsDataset",
    "data_root",
    "decode_image",
    "decode_image_bytes",
    "parse_idx",
    "write_pack",
]
