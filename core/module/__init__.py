"""pyrite.module: Module (parameter containers found from attributes), Param, Config.

See docs/modules.md.
"""

from .base import PARAM_IDS_KEY, Module
from .config import Config
from .deferred import init_from_record, init_skipped
from .display import format_value
from .param import Param, ParamId, new_param_id

__all__ = ["PARAM_IDS_KEY", "Config", "Module", "Param", "ParamId", "format_value",
           "init_from_record", "init_skipped", "new_param_id"]
