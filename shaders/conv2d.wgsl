// conv2d.wgsl: direct 2-D convolution (cross-correlation), NCHW, f32, with stride, padding,
// dilation and groups; out[n, co, oy, ox] = bias[co] + sum over the group's input channels and
// the taps of x[n, ci, oy*sh - pt + ky*dh, ox*sw - pl + kx*dw] * w[co, ci % cg, ky, kx]
// (taps that fall in the padding read zero; no padded copy of x is made).
// One invocation computes a block of {{ pixels }} neighbouring output pixels of one row (ox,
// ox+1, ...) for {{ channels }} output channels of one group, in vec4 accumulators (one per
// pixel and 4 channels): each weight it reads serves every pixel of the block, each input
// value every channel, and neighbouring invocations (neighbouring ox) share their weights, so
// the weight reads are uniform across most of a workgroup. `conv_direct.py` writes the
// unrolled per-pixel, per-channel parts. Threads go ox block fastest, then oy, then the
// channel block, then n.
// Bindings: 0 info: array<i32> = [total, the window (12 words, window.wgsl), C_in, C_out,
//             cg (input channels per group), cog (output channels per group),
//             bpg (channel blocks per group), has_bias, then the weight's element offset and
//             its strides over (C_out, cg, KH, KW) (a transposed or flipped view is read in
//             place; strides may be negative)],
//           1 x: array<f32> (N, C_in, H, W) dense, 2 w: array<f32> (C_out, cg, KH, KW) view,
//           3 bias: array<f32> (C_out; any buffer when has_bias is 0),
//           4 out: array<f32> (N, C_out, OH, OW) dense.
// Placeholders: {{ workgroup }} (invocations per workgroup), {{ epilogue }} (module-scope WGSL
//   defining `pyrite_out(v: f32, i: i32) -> f32`, the value stored at dense output index i:
//   `return v;`, or fusion's epilogue with its bindings from 5 on), {{ pixels }} and
//   {{ channels }} (the block: pixels of a row, output channels, a multiple of 4), and the
//   generated statements: {{ weights }} (the weight offset of each channel), {{ zero }} (the
//   accumulators), {{ tap }} (one tap: weights, inputs, multiply-adds), {{ bias }}, {{ store }}.
#include "window.wgsl"
{{ epilogue }}
@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

@compute @workgroup_size({{ workgroup }})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let idx = pyrite_flat(gid, nwg, {{ workgroup }}u);
  if (idx >= info[0]) { return; }
  let win = window();
  let c_in = info[13]; let c_out = info[14]; let cg = info[15]; let cog = info[16];
  let bpg = info[17];
  let at = pyrite_unravel(idx, vec3<i32>((win.ow + {{ pixels }} - 1) / {{ pixels }}, win.oh,
                                         bpg * (c_out / cog)));
  let ox0 = at.x * {{ pixels }}; let oy = at.y; let blk = at.z; let n = at.w;
  let g = blk / bpg;
  let co0 = g * cog + (blk % bpg) * {{ channels }};
  let last = g * cog + cog - 1;  // the group's last channel: channels past it re-read it
  let w_off = info[19]; let ws_o = info[20]; let ws_c = info[21]; let ws_y = info[22];
  let ws_x = info[23];
{{ weights }}
  let iy0 = oy * win.sh - win.pt;
  let ix0 = ox0 * win.sw - win.pl;
  let xw = win.w - 1;
{{ zero }}
  for (var c = 0; c < cg; c++) {
    let xbase = (n * c_in + g * cg + c) * win.h * win.w;
    let wc = c * ws_c;
    for (var ky = 0; ky < win.kh; ky++) {
      let iy = iy0 + ky * win.dh;
      if (iy < 0 || iy >= win.h) { continue; }
      let xrow = xbase + iy * win.w;
      for (var kx = 0; kx < win.kw; kx++) {
        let ix = ix0 + kx * win.dw;
        let t = wc + ky * ws_y + kx * ws_x;
{{ tap }}
      }
    }
  }
  if (info[18] != 0) {
{{ bias }}
  }
  let plane = win.oh * win.ow;
  let obase = (n * c_out + co0) * plane + oy * win.ow + ox0;
{{ store }}
}
