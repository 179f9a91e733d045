"""conv_layers.py --sweep: every variant of a layer's three ops (direct kernels, the implicit
GEMM's tiles, splits and options, the channel-block and tiled weight-gradient kernels, the
batched-matmul form), each a launcher into preallocated outputs, and the variant the
autotune-off rule picks."""

from __future__ import annotations

from typing import Any

from conv_shapes import Layer, out_shape

Pyrite = Any  # conv_layers.Pyrite (not imported: conv_layers imports this module)

SWEEP_TILES = ("t128x128x8_8x8_u8_pp", "t64x64x16_4x4_u16_pp", "t32x32x16_4x4_u16",
               "t128x64x8_8x8_u8", "t64x128x8_8x8_u8", "t32x64x16_4x4_u16")
# the weight gradient's K-split rules timed beside the default: (workgroups, shortest slice)
SWEEP_SPLITS = ((2048, 64), (4096, 64, 256), (8192, 32, 512), (8192, 64, 1024))
SWEEP_DIRECT_SLICES = (64, 128, 256)  # the direct weight gradient's, beside its default
# `webgpu/matmul_options.py`'s warp layout and deeper prefetch on the heuristic's ping-pong
# tile (forward and input gradient): the options that sped the 64x64 tile up at 1024^3, where
# it too leaves the GPU few workgroups
SWEEP_OPTIONS = ("_w8x4_d2", "_w8x4", "_d2")
# `webgpu/conv_slices.py`'s forms (those that fit the H100's 48 KiB and 1024 invocations)
SWEEP_SLICES = ("slices/64x64s2", "slices/32x64s2", "slices/32x64s4", "slices/64x32s2",
                "slices/64x32s4", "slices/32x32s4", "slices/16x64s4")
DGRAD_SPLITS = ((1024, 128), (1024, 256))  # the input gradient's, on the 64x64 tile
# GEMMs of at most SMALL_ROWS rows (output channels of a forward, input channels of an input
# gradient) on the other tiles of 32-64 rows, with and without ping-pong, fewer threads or
# shallower K steps, each also (input gradient) with SMALL_ROW_SPLITS: the 3x3 input gradients
# of fire4-7 (32-48 rows, 3136-12544 columns, K 1152-1728) and fire9's squeeze (64 rows)
SMALL_ROWS = 64
SMALL_ROW_TILES = ("t32x64x16_4x4_u16_pp", "t32x64x16_4x4_u16_pp_d2", "t32x32x16_4x4_u16_pp",
                   "t32x32x16_4x4_u16_pp_d2", "t32x32x8_4x4_u8", "t32x32x8_4x4_u8_pp",
                   "t64x64x8_8x4_u8", "t64x64x8_8x8_u8", "t64x64x16_4x4_u16",
                   "t64x64x16_4x4_u16_pp_cr")
SMALL_ROW_SPLITS = ((512, 128), (1024, 128))
# the forward's, on the heuristic's two tiles (a forward splits K only when asked; (1, 512)
# never splits: the default, again)
FORWARD_SPLITS = ((396, 128), (1024, 128), (2048, 64))


def launcher(p: Pyrite, layer: Layer, op: str, name: str, gx: Any, gw: Any, gb: Any,
              gdy: Any) -> Any:
    """`conv.launch_variant`'s `name` for the forward or the input gradient, into a
    preallocated output."""
    from pyrite.dtype import DType
    from pyrite.webgpu import conv as wconv

    k = p.raw.kernels
    conv = (layer["stride"], layer["padding"], layer["dilation"], layer["groups"])
    shape = out_shape(layer) if op == "forward" else layer["x"]
    out = k.empty(shape, DType.F32, "bench")
    a, bias = (gx, gb) if op == "forward" else (gdy, None)
    return lambda: wconv.launch_variant(k, op, name, out, a, gw, bias, layer["x"], *conv)


def sweep(p: Pyrite, layer: Layer, gx: Any, gw: Any, gb: Any,
           gdy: Any) -> dict[str, dict[str, Any]]:
    """--sweep: each op on the direct kernel and on the GEMM with each tile of SWEEP_TILES,
    into preallocated outputs (ms per op in the JSON's `sweep`): the data the autotune-off
    rule (`conv.prefers_gemm`, `conv_gemm.choose_tile`) is fitted to. Also the input
    gradient's gather form (`gather/<tile>`, where stride 1 takes the flipped forward by
    default), the forward's and input gradient's GEMM with the geometry read at run time
    (`gemm/<tile>/rt`; `webgpu/conv_geometry.py`) and with SWEEP_OPTIONS
    (`gemm/<tile><options>`), K split inside the workgroup (SWEEP_SLICES), the strided
    input gradient's gather with and without staged weights, a stride-1 3x3 forward's and input
    gradient's Winograd conv (`winograd`), and other K splits
    (`gemm/<tile>/s<wg>x<len>[x<most>]`): the input gradient's on the 64x64 tile, the weight
    gradient's and the forward's on the heuristic's two tiles; the direct weight gradient's
    slices (`direct/s<slices>`)."""
    from pyrite.dtype import DType
    from pyrite.webgpu import conv as wconv
    from pyrite.webgpu import conv_gemm as cg
    from pyrite.webgpu import conv_winograd as wino
    from pyrite.webgpu.matmul_config import CONFIGS
    from pyrite.webgpu.matmul_config import tile as matmul_tile

    k = p.raw.kernels
    conv = (layer["stride"], layer["padding"], layer["dilation"], layer["groups"])
    xs = layer["x"]
    y = k.empty(out_shape(layer), DType.F32, "bench")
    dx = k.empty(xs, DType.F32, "bench")
    dw = k.empty(layer["w"], DType.F32, "bench")
    ops: dict[str, dict[str, Any]] = {
        op: {"direct": (lambda op=op, out=out, a=a, b=b, bias=bias: wconv.launch_variant(
            k, op, "direct", out, a, b, bias, xs, *conv))}
        for op, out, a, b, bias in (("forward", y, gx, gw, gb), ("input_grad", dx, gdy, gw, None),
                                    ("weight_grad", dw, gx, gdy, None))}
    for slices in SWEEP_DIRECT_SLICES:
        ops["weight_grad"][f"direct/s{slices}"] = (
            lambda slices=slices: wconv.launch_variant(k, "weight_grad", f"direct/s{slices}", dw,
                                                       gx, gdy, None, xs, *conv))
    forms = (("forward", cg.FORWARD, y, gx, gw, gb),
             ("input_grad", cg.INPUT_GRAD, dx, gdy, gw, None),
             ("weight_grad", cg.WEIGHT_GRAD, dw, gx, gdy, None))
    for op, mode, out, a, b, bias in forms:
        for tile in SWEEP_TILES:
            cfg = CONFIGS[tile]
            ops[op][f"gemm/{tile}"] = (
                lambda cfg=cfg, mode=mode, out=out, a=a, b=b, bias=bias:
                cg.run(k, cfg, out, a, b, bias, xs, *conv, mode))
    ops_1x1 = _as_matmul(k, layer, gx, gw, gdy, dw)
    for op, make in ops_1x1.items():
        ops[op]["matmul"] = make
    for tile in (cg.WIDE, cg.NARROW):
        cfg = CONFIGS[tile]
        if cg.flipped_padding(layer["w"], *conv[:3]) is not None:
            ops["input_grad"][f"gather/{tile}"] = (
                lambda cfg=cfg: cg.run(k, cfg, dx, gdy, gw, None, xs, *conv, cg.INPUT_GRAD,
                                       gather=True))
        for rule in SWEEP_SPLITS:
            ops["weight_grad"][f"gemm/{tile}/s{'x'.join(map(str, rule))}"] = (
                lambda cfg=cfg, rule=rule: cg.run(k, cfg, dw, gx, gdy, None, xs, *conv,
                                                  cg.WEIGHT_GRAD, split=rule))
        for rule in FORWARD_SPLITS:
            ops["forward"][f"gemm/{tile}/s{'x'.join(map(str, rule))}"] = (
                lambda cfg=cfg, rule=rule: cg.run(k, cfg, y, gx, gw, gb, xs, *conv, cg.FORWARD,
                                                  split=rule))
    for form in channel_forms(layer, "forward"):
        ops["forward"][form] = (lambda form=form: wconv.launch_variant(
            k, "forward", form, y, gx, gw, gb, xs, *conv))
    if cg.flipped_padding(layer["w"], *conv[:3]) is not None:
        for form in channel_forms(layer, "input_grad"):
            ops["input_grad"][form] = (lambda form=form: wconv.launch_variant(
                k, "input_grad", form, dx, gdy, gw, None, xs, *conv))
    for op, mode, out, a, b, bias in forms[:2]:  # the run-time geometry form beside the default
        for tile in (cg.WIDE, cg.NARROW):
            ops[op][f"gemm/{tile}/rt"] = (
                lambda tile=tile, mode=mode, out=out, a=a, b=b, bias=bias: cg.run(
                    k, CONFIGS[tile], out, a, b, bias, xs, *conv, mode, constant=False))
            for options in SWEEP_OPTIONS if CONFIGS[tile].pingpong else ():  # `_d2` needs it
                ops[op][f"gemm/{tile}{options}"] = (
                    lambda name=tile + options, mode=mode, out=out, a=a, b=b, bias=bias: cg.run(
                        k, matmul_tile(name), out, a, b, bias, xs, *conv, mode))
    for form in SWEEP_SLICES:  # K split inside the workgroup (`webgpu/conv_slices.py`)
        for op, out, a, b, bias in (("forward", y, gx, gw, gb), ("input_grad", dx, gdy, gw, None)):
            ops[op][form] = (lambda form=form, op=op, out=out, a=a, b=b, bias=bias:
                             wconv.launch_variant(k, op, form, out, a, b, bias, xs, *conv))
    if wino.takes(layer["w"], *conv):  # a stride-1 3x3: the Winograd conv (conv_winograd.py)
        for op, out, a, b, bias in (("forward", y, gx, gw, gb), ("input_grad", dx, gdy, gw, None)):
            ops[op][wino.NAME] = (lambda op=op, out=out, a=a, b=b, bias=bias:
                                  wconv.launch_variant(k, op, wino.NAME, out, a, b, bias, xs,
                                                       *conv))
    if cg.flipped_padding(layer["w"], *conv[:3]) is None:  # the strided gather, staged or not
        for name in ("direct/staged", "direct/gather"):
            ops["input_grad"][name] = (lambda name=name: wconv.launch_variant(
                k, "input_grad", name, dx, gdy, gw, None, xs, *conv))
    _sweep_wgrad(k, ops["weight_grad"], layer, gx, gdy, dw)
    _sweep_small_rows(k, ops, layer, forms[:2])
    for rule in DGRAD_SPLITS:
        cfg = CONFIGS[cg.WIDE]
        ops["input_grad"][f"gemm/{cg.WIDE}/s{'x'.join(map(str, rule))}"] = (
            lambda cfg=cfg, rule=rule: cg.run(k, cfg, dx, gdy, gw, None, xs, *conv,
                                              cg.INPUT_GRAD, split=rule))
    return ops


def _sweep_small_rows(k: Any, ops: dict[str, dict[str, Any]], layer: Layer,
                      forms: tuple[tuple[Any, ...], ...]) -> None:
    """`gemm/<tile>` for each of SMALL_ROW_TILES on a forward or input-gradient GEMM of at most
    SMALL_ROWS rows, and `gemm/<tile>/s<wg>x<len>` with SMALL_ROW_SPLITS (input gradient)."""
    from pyrite.webgpu import conv_gemm as cg
    from pyrite.webgpu.matmul_config import tile as matmul_tile

    conv = (layer["stride"], layer["padding"], layer["dilation"], layer["groups"])
    xs = layer["x"]
    for op, mode, out, a, b, bias in forms:
        m, _, _ = cg.sizes(xs, layer["w"], out_shape(layer)[2:], layer["groups"], mode)
        if m > SMALL_ROWS:
            continue
        rules = (None, *SMALL_ROW_SPLITS) if op == "input_grad" else (None,)
        for name in SMALL_ROW_TILES:
            for rule in rules:
                key = f"gemm/{name}" + (f"/s{'x'.join(map(str, rule))}" if rule else "")
                ops[op].setdefault(key, (
                    lambda name=name, rule=rule, mode=mode, out=out, a=a, b=b, bias=bias:
                    cg.run(k, matmul_tile(name), out, a, b, bias, xs, *conv, mode,
                           split=rule)))


SWEEP_CHANNELS = (8, 16, 32)  # conv_channels.py's blocks timed (and 64 on a 1x1 kernel)
SWEEP_CHANNEL_SLICES = (1, 4)


def channel_forms(layer: Layer, op: str) -> list[str]:
    """`webgpu/conv_channels.py`'s forms timed by the sweep for `op` ("forward", or
    "input_grad": the forward conv with the flipped weight): each block of SWEEP_CHANNELS
    (64 too on a 1x1 kernel) that the conv's output channels per group need, in each of
    SWEEP_CHANNEL_SLICES."""
    from pyrite.webgpu import conv_channels

    c_out, cg, kh, kw = layer["w"]
    per_group = c_out // layer["groups"] if op == "forward" else cg
    blocks = [c for c in (*SWEEP_CHANNELS, *((64,) if kh * kw == 1 else ()))
              if c // 2 < per_group]
    return [conv_channels.Form(c, s).name for c in blocks for s in SWEEP_CHANNEL_SLICES]


# the tiled weight gradient's (conv_wgrad.py) slice lengths timed beside its rule's, on the
# rule's tile; the other tiles with the rule's length
SWEEP_WGRAD_LENGTHS = (256, 512, 1024, 2048, 4096)


def _sweep_wgrad(k: Any, ops: dict[str, Any], layer: Layer, gx: Any, gdy: Any,
                 dw: Any) -> None:
    """`wgrad/<tile>` (the rule's slices) for every tile of conv_wgrad.TILES, and
    `wgrad/<tile>/l<length>` for the rule's tile and each of SWEEP_WGRAD_LENGTHS."""
    from pyrite.webgpu import conv as wconv
    from pyrite.webgpu import conv_gemm as cg
    from pyrite.webgpu import conv_wgrad

    conv = (layer["stride"], layer["padding"], layer["dilation"], layer["groups"])
    xs = layer["x"]
    m, n, _ = cg.sizes(xs, layer["w"], out_shape(layer)[2:], layer["groups"], cg.WEIGHT_GRAD)
    best = conv_wgrad.choose_tile(m, n)
    names = [f"wgrad/{t}" for t in conv_wgrad.TILES] + \
        [f"wgrad/{best}/l{length}" for length in SWEEP_WGRAD_LENGTHS]
    for name in names:
        ops[name] = (lambda name=name: wconv.launch_variant(k, "weight_grad", name, dw, gx, gdy,
                                                            None, xs, *conv))


def _as_matmul(k: Any, layer: Layer, gx: Any, gw: Any, gdy: Any, dw: Any) -> dict[str, Any]:
    """A 1x1 conv (stride 1, no padding, one group) as the plain batched matmul of
    `webgpu/linalg.py` (vec4 loads where aligned, operands read through their strides): the
    forward W @ x[n] (without the bias), the input gradient W^T @ dy[n], the weight gradient
    dy[n] @ x[n]^T per image then the images' sum. Empty for other layers."""
    from pyrite.webgpu import linalg, matmul_variants

    n, ci, h, w = layer["x"]
    co = layer["w"][0]
    if layer["w"][2:] != (1, 1) or layer["stride"] != (1, 1) or layer["groups"] != 1 or \
            layer["padding"] != ((0, 0), (0, 0)):
        return {}
    w2 = gw.reshaped((1, co, ci))
    x3 = gx.reshaped((n, ci, h * w))
    dy3 = gdy.reshaped((n, co, h * w))

    def wgrad() -> None:
        parts = linalg.matmul(k, dy3, x3.permuted((0, 2, 1)))  # (n, co, ci)
        matmul_variants.add_partials(k, parts, dw, 1, n)

    return {"forward": lambda: linalg.matmul(k, w2.expanded((n, co, ci)), x3),
            "input_grad": lambda: linalg.matmul(
                k, w2.permuted((0, 2, 1)).expanded((n, ci, co)), dy3),
            "weight_grad": wgrad}


def heuristic_picks(p: Pyrite, layer: Layer) -> dict[str, str]:
    """The variant (a `sweep` key) the autotune-off rule picks for each op of the layer."""
    from pyrite.webgpu import conv as wconv

    conv = (layer["stride"], layer["padding"], layer["dilation"], layer["groups"])
    return {op: wconv.heuristic_variant(p.raw.kernels, op, layer["x"], layer["w"], *conv)
            for op in wconv.OPS}
