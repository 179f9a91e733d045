"""Optimizer: applies a per-tensor update rule to every param of a module (Burn's
`OptimizerAdaptor` + `SimpleOptimizer`).

A rule (`SgdRule`, `AdamRule`, ...) knows how to update one tensor from its gradient and its
state; `Optimizer` walks the module with `module.map`, finds each param's gradient by id, clips
it, runs the rule on the inner (non-autodiff) backend and puts the result back as a fresh graph
leaf. The state of each param (moments, step counts) is kept by param id and saved as a record
of TensorData, so training resumes exactly from a checkpoint.

The learning rate is an argument of `step`, not part of the optimizer: schedulers live apart
(`scheduler.py`) and the same optimizer serves several rates (see `GradientsParams`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, TypeVar, cast

from ..backend.autodiff import Gradients
from ..capture.traced import keep_float
from ..data import TensorData
from ..errors import RecordError
from ..record.tree import Record
from ..tensor import Tensor, from_data
from .clipping import GradientClipping
from .grads import GradientsParams, ParamId

M = TypeVar("M")

# A param's state: named tensors (moments) and plain numbers (step counts); None = no state yet
State = dict[str, Tensor | int | float]


class Rule(Protocol):
    """How one tensor is updated: `step(lr, tensor, grad, state) -> (tensor, state)`.

    `tensor` and `grad` are on the inner backend; `state` is what the previous call returned
    for this param (None the first time).
    """

    name: str

    def step(self, lr: float, tensor: Tensor, grad: Tensor,
             state: State | None) -> tuple[Tensor, State | None]: ...


class Optimizer:
    """`model = optim.step(lr, model, grads)`: one update of every param with a gradient.

    Built by a config: `AdamConfig().init()`. Params without a gradient in `grads` (frozen
    ones, or those another optimizer stepped) are returned unchanged, and their state too.
    """

    def __init__(self, rule: Rule, *, grad_clipping: GradientClipping | None = None) -> None:
        self.rule = rule
        self.grad_clipping = grad_clipping
        self._states: dict[ParamId, State] = {}
        # loaded from a record, not yet on a device: turned into tensors at the param's first step
        self._pending: dict[ParamId, Mapping[str, Any]] = {}

    @property
    def name(self) -> str:
        return self.rule.name

    def step(self, lr: float, module: M, grads: GradientsParams | Gradients) -> M:
        """The module with each param that has a gradient in `grads` updated; the gradients
        used are removed from `grads`. A raw `Gradients` is taken with `from_grads` first."""
        if isinstance(grads, Gradients):
            grads = GradientsParams.from_grads(grads, module)
        lr = keep_float(lr)  # a traced rate stays traced under pyrite.compile

        def update(path: str, param: Any) -> Any:
            grad = grads.remove(param.id)
            if grad is None or not param.require_grad:
                return param
            return param.with_val(self._update(lr, param.id, param.val, grad))
        return module.map(update)  # type: ignore[attr-defined, no-any-return]

    def _update(self, lr: float, pid: ParamId, value: Tensor, grad: Tensor) -> Tensor:
        autodiff = value.device if value.device.is_autodiff else None
        tensor = value.inner()
        if grad.device != tensor.device:
            grad = grad.to_device(tensor.device)
        if self.grad_clipping is not None:
            grad = self.grad_clipping.clip(grad)
        state = self._state_for(pid, tensor)
        new, state = self.rule.step(lr, tensor, grad, state)
        if state is None:
            self._states.pop(pid, None)
        else:
            self._states[pid] = state
        return new if autodiff is None else Tensor.from_inner(new, autodiff)

    def _state_for(self, pid: ParamId, tensor: Tensor) -> State | None:
        pending = self._pending.pop(pid, None)
        if pending is not None:
            self._states[pid] = {
                k: from_data(v, device=tensor.device, dtype=tensor.dtype)
                if isinstance(v, TensorData) else v for k, v in pending.items()}
        state = self._states.get(pid)
        if state is not None:
            for key, v in state.items():
                if isinstance(v, Tensor) and v.device != tensor.device:
                    state[key] = v.to_device(tensor.device)
        return state

    # ---- records -----------------------------------------------------------------------------
    def to_record(self) -> Record:
        """The state of every param as a record: `{"optimizer": name, "params": {id: state}}`.

        Tensors become TensorData, so any pyrite recorder can save it. With a full- or
        double-precision recorder a reload continues bit for bit.
        """
        params: dict[str, Any] = {pid: dict(s) for pid, s in self._pending.items()}
        for pid, state in self._states.items():
            params[pid] = {k: v.to_data() if isinstance(v, Tensor) else v
                           for k, v in state.items()}
        return {"optimizer": self.name, "params": params}

    def load_record(self, record: Record) -> Optimizer:
        """Replace the state with the one in `record` (from `to_record`); returns self."""
        found = record.get("optimizer") if isinstance(record, Mapping) else None
        params = record.get("params") if isinstance(record, Mapping) else None
        if found is None or not isinstance(params, Mapping):
            raise RecordError("Optimizer.load_record: not an optimizer record (it needs the keys "
                              "'optimizer' and 'params', as to_record writes them)")
        if found != self.name:
            raise RecordError(f"Optimizer.load_record: the record holds {found} state, this "
                              f"optimizer is {self.name}; build the optimizer the checkpoint "
                              f"was saved with")
        self._states = {}
        # each param's state is the dict that to_record wrote
        self._pending = {str(pid): dict(cast(Mapping[str, Any], state))
                         for pid, state in params.items()}
        return self

    def num_states(self) -> int:
        """How many params have state (stepped or loaded)."""
        return len(self._states) + len(self._pending)

    def __repr__(self) -> str:
        clip = f", grad_clipping={self.grad_clipping}" if self.grad_clipping else ""
        return f"Optimizer({self.rule!r}{clip})"
