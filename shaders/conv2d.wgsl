// conv2d.wgsl: direct 2-D convolution (cross-correlation), NCHW, f32, with stride, padding,
// dilation and groups; out[n, co, oy, ox] = bias[co] + sum over the group's input channels and
// the taps of x[n, ci, oy*sh - pt + ky*dh, ox*sw - pl + kx*dw] * w[co, ci % cg, ky, kx]
// (taps that fall in the padding read zero; no padded copy of x is made).
// One invocation computes one output pixel for 4 output channels of one group (a vec4
// accumulator): it reads each input pixel once for 4 outputs, and neighbouring invocations
// (neighbouring ox) share their weights, so the weight reads are uniform across most of a
// workgroup. Threads go ox fastest, then oy, then the channel block, then n.
// Bindings: 0 info: array<i32> = [total, the window (12 words, window.wgsl), C_in, C_out,
//             cg (input channels per group), cog (output channels per group),
//             bpg (4-channel blocks per group), has_bias, then the weight's element offset and
//             its strides over (C_out, cg, KH, KW) (a transposed or flipped view is read in
//             place; strides may be negative)],
//           1 x: array<f32> (N, C_in, H, W) dense, 2 w: array<f32> (C_out, cg, KH, KW) view,
//           3 bias: array<f32> (C_out; any buffer when has_bias is 0),
//           4 out: array<f32> (N, C_out, OH, OW) dense.
// Placeholders: {{ workgroup }} (invocations per workgroup), {{ epilogue }} (module-scope WGSL
//   defining `pyrite_out(v: f32, i: i32) -> f32`, the value stored at dense output index i:
//   `return v;`, or fusion's epilogue with its bindings from 5 on).
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
  let at = pyrite_unravel(idx, vec3<i32>(win.ow, win.oh, bpg * (c_out / cog)));
  let ox = at.x; let oy = at.y; let blk = at.z; let n = at.w;
  let g = blk / bpg;
  let co0 = g * cog + (blk % bpg) * 4;
  let live = min(4, g * cog + cog - co0);  // output channels of this block inside the group
  let w_off = info[19]; let ws_c = info[21]; let ws_y = info[22]; let ws_x = info[23];
  // channels past the group's end re-read the last live one and are not stored
  let cos = vec4<i32>(co0, co0 + min(1, live - 1), co0 + min(2, live - 1),
                      co0 + min(3, live - 1));
  let wbase = cos * info[20] + w_off;
  let iy0 = oy * win.sh - win.pt;
  let ix0 = ox * win.sw - win.pl;
  var acc = vec4<f32>(0.0);
  for (var c = 0; c < cg; c++) {
    let xbase = (n * c_in + g * cg + c) * win.h * win.w;
    let wc = c * ws_c;
    for (var ky = 0; ky < win.kh; ky++) {
      let iy = iy0 + ky * win.dh;
      if (iy < 0 || iy >= win.h) { continue; }
      for (var kx = 0; kx < win.kw; kx++) {
        let ix = ix0 + kx * win.dw;
        if (ix < 0 || ix >= win.w) { continue; }
        let v = x[xbase + iy * win.w + ix];
        let t = wc + ky * ws_y + kx * ws_x;
        acc += v * vec4<f32>(w[wbase.x + t], w[wbase.y + t], w[wbase.z + t], w[wbase.w + t]);
      }
    }
  }
  if (info[18] != 0) {
    acc += vec4<f32>(bias[cos.x], bias[cos.y], bias[cos.z], bias[cos.w]);
  }
  let plane = win.oh * win.ow;
  let obase = (n * c_out + co0) * plane + oy * win.ow + ox;
  out[obase] = pyrite_out(acc.x, obase);
  if (live > 1) { out[obase + plane] = pyrite_out(acc.y, obase + plane); }
  if (live > 2) { out[obase + 2 * plane] = pyrite_out(acc.z, obase + 2 * plane); }
  if (live > 3) { out[obase + 3 * plane] = pyrite_out(acc.w, obase + 3 * plane); }
}
