"""Recurrent layers as in Burn: GateController, Lstm, BiLstm and Gru, each from its Config."""

from .gate import GateController, GateControllerConfig
from .gru import Gru, GruConfig
from .lstm import BiLstm, BiLstmConfig, Lstm, LstmConfig, LstmState

__all__ = ["BiLstm", "BiLstmConfig", "GateController", "GateControllerConfig", "Gru",
           "GruConfig", "Lstm", "LstmConfig", "LstmState"]
