// conv2d_input_grad_staged.wgsl: conv2d_input_grad.wgsl's gathered input gradient (any stride,
// padding, dilation and groups) with the weights of the workgroup's channel block staged in
// workgroup memory, the geometry compiled in as constants and one invocation per block of
// SH x SW input pixels (one of each phase), for strided convs with few input channels
// (SqueezeNet's first layer: 3 channels, 3x3 at stride 2, 64 outputs).
//
// dx[n, ci, iy, ix] = sum over the taps (ky, kx) and the group's output channels co of
// g[n, co, oy, ox] * w[co, ci % cg, ky, kx], where oy = (iy + PT - ky * DH) / SH when that
// divides exactly and lands in [0, OH) (the same for ox). For input row iy = qy * SH + py the
// taps that reach it and their rows are fixed by the phase py: oy = qy + (py + PT - ky * DH) / SH
// for each ky where that divides. So an invocation takes the SH x SW pixels (qy * SH + py,
// qx * SW + px) and 4 input channels of a group, reads each gradient value its taps need once
// per output channel (stride 2, 3x3: 4 values for 9 tap products, where one pixel per
// invocation read 9 over its 4 pixels) and multiplies it by vec4s of the 4 channels' weights
// that every invocation of the workgroup reads alike from workgroup memory. Workgroup y is one
// (image, group, block of channels), whose weights (COG * TAPS vec4s) its invocations stage.
//
// Bindings: 0 g: array<f32> (N, C_out, OH, OW) dense, 1 w: array<f32> (C_out, cg, KH, KW) dense,
//           2 dx: array<f32> (N, C_in, H, W) dense.
// Dispatch: (ceil(ceil(H / SH) * ceil(W / SW) / WORKGROUP), N * GROUPS * ceil(cg / 4), 1).
// Placeholders: {{ workgroup }} (invocations per workgroup), {{ geometry }} (the constants H, W,
//   OH, OW, KH, KW, SH, SW, PT, PL, DH, DW, C_IN, C_OUT, CG, COG as `const X: i32 = ...;`),
//   {{ setup }} (per invocation: each gradient row and column offset's index and bounds, the
//   accumulators acc_<py>_<px>), {{ body }} (per output channel c, `gc` its plane's start and
//   `wc` its first staged weight: the loads and the tap products), {{ store }} (each pixel's
//   lanes into dx, where the pixel is inside the image).
@group(0) @binding(0) var<storage, read> g: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> dx: array<f32>;

{{ geometry }}
const WG: i32 = {{ workgroup }};
const TAPS: i32 = KH * KW;
const GROUPS: i32 = C_IN / CG;
const BLOCKS: i32 = (CG + 3) / 4;  // blocks of 4 input channels per group
const HQ: i32 = (H + SH - 1) / SH;
const WQ: i32 = (W + SW - 1) / SW;
const PLANE: i32 = OH * OW;

var<workgroup> ws: array<vec4<f32>, COG * TAPS>;

@compute @workgroup_size({{ workgroup }})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
  let nb = i32(wid.y);
  let n = nb / (GROUPS * BLOCKS);
  let block = nb % (GROUPS * BLOCKS);
  let grp = block / BLOCKS;
  let c0 = (block % BLOCKS) * 4;  // the block's first channel within the group
  let lanes = min(4, CG - c0);
  for (var i = i32(t); i < COG * TAPS; i += WG) {
    let co = i / TAPS;
    let at = ((grp * COG + co) * CG + c0) * TAPS + i % TAPS;
    var v = vec4<f32>(w[at], 0.0, 0.0, 0.0);
    if (lanes > 1) { v.y = w[at + TAPS]; }
    if (lanes > 2) { v.z = w[at + 2 * TAPS]; }
    if (lanes > 3) { v.w = w[at + 3 * TAPS]; }
    ws[i] = v;
  }
  workgroupBarrier();
  let idx = i32(wid.x) * WG + i32(t);
  if (idx >= HQ * WQ) { return; }
  let qy = idx / WQ;
  let qx = idx - qy * WQ;
  let gbase = (n * C_OUT + grp * COG) * PLANE;
  let dbase = (n * C_IN + grp * CG + c0) * H * W;
  {{ setup }}
  for (var c = 0; c < COG; c++) {
    let gc = gbase + c * PLANE;
    let wc = c * TAPS;
    {{ body }}
  }
  {{ store }}
}
