// conv2d_input_grad_staged.wgsl: conv2d_input_grad.wgsl's gathered input gradient (any stride,
// padding, dilation and groups) with the weights of the workgroup's channel block staged in
// workgroup memory and the geometry compiled in as constants, for strided convs with few input
// channels (SqueezeNet's first layer: 3 channels, 3x3 at stride 2, 64 outputs).
//
// dx[n, ci, iy, ix] = sum over the taps (ky, kx) and the group's output channels co of
// g[n, co, oy, ox] * w[co, ci % cg, ky, kx], where oy = (iy + PT - ky * DH) / SH when that
// divides exactly and lands in [0, OH) (the same for ox). One invocation per input pixel and
// block of 4 input channels of a group. Workgroup y is one (image, group, block of channels):
// its invocations stage that block's weights, COG * TAPS vec4s (the 4 channels' weights of
// one output channel and tap), so the inner loop reads one g value from storage and one vec4
// that every invocation shares from workgroup memory per output channel (the plain kernel reads
// 4 weights from storage there). Workgroup x walks the pixels by phase: the pixels of one
// (iy % SH, ix % SW) class reach the same taps, so neighbouring invocations take the same
// branches and read neighbouring g.
//
// Bindings: 0 g: array<f32> (N, C_out, OH, OW) dense, 1 w: array<f32> (C_out, cg, KH, KW) dense,
//           2 dx: array<f32> (N, C_in, H, W) dense.
// Dispatch: (ceil(SH * SW * ceil(H / SH) * ceil(W / SW) / WORKGROUP), N * GROUPS * ceil(cg / 4), 1).
// Placeholders: {{ workgroup }} (invocations per workgroup), {{ geometry }} (the constants H, W,
//   OH, OW, KH, KW, SH, SW, PT, PL, DH, DW, C_IN, C_OUT, CG, COG as `const X: i32 = ...;`).
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
const PHASE_PIXELS: i32 = HQ * WQ;
const PIXELS: i32 = SH * SW * PHASE_PIXELS;  // invocations per (image, group, block)
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
  if (idx >= PIXELS) { return; }
  let phase = idx / PHASE_PIXELS;
  let rest = idx - phase * PHASE_PIXELS;
  let qy = rest / WQ;
  let ix = (rest - qy * WQ) * SW + phase % SW;
  let iy = qy * SH + phase / SW;
  if (ix >= W || iy >= H) { return; }
  let gbase = (n * C_OUT + grp * COG) * PLANE;
  var acc = vec4<f32>(0.0);
  for (var ky = 0; ky < KH; ky++) {
    let ty = iy + PT - ky * DH;
    if (ty < 0 || ty % SH != 0 || ty / SH >= OH) { continue; }
    let oy = ty / SH;
    for (var kx = 0; kx < KW; kx++) {
      let tx = ix + PL - kx * DW;
      if (tx < 0 || tx % SW != 0 || tx / SW >= OW) { continue; }
      let gp = gbase + oy * OW + tx / SW;
      let tap = ky * KW + kx;
      for (var c = 0; c < COG; c++) {
        acc += g[gp + c * PLANE] * ws[c * TAPS + tap];
      }
    }
  }
  let out = ((n * C_IN + grp * CG + c0) * H + iy) * W + ix;
  for (var e = 0; e < lanes; e++) {
    dx[out + e * H * W] = acc[e];
  }
}
