// conv2d_channels.wgsl: the direct 2-D convolution (cross-correlation, NCHW, f32, any stride,
// padding, dilation and groups) with a block of {{ channels }} output channels per invocation
// and the block's weights staged in workgroup memory:
//   out[n, co, oy, ox] = bias[co] + sum over the group's input channels c and the taps of
//                        x[n, c, oy*sh - pt + ky*dh, ox*sw - pl + kx*dw] * w[co, c, ky, kx].
// One invocation is one output pixel of the batch (neighbouring invocations: neighbouring
// pixels, so the x reads of a workgroup are coalesced) for a block of output channels of one
// group; each x value it reads serves every channel of the block, read once per block rather
// than once per 4 channels (`conv2d.wgsl`). The workgroup copies its block's weights, {{ chunk }}
// input channels at a time, into `ws` laid out (channel, tap, 4 output channels), so the
// multiply-adds read one vec4 every invocation reads alike. Made for convs with few output
// channels over many input channels and pixels (SqueezeNet's 1x1 squeezes; a stride-1 input
// gradient as the forward conv with the flipped weight); `webgpu/conv_channels.py` launches it.
// Workgroups: x = a run of {{ workgroup }} pixels, y = the group and channel block, z = a slice
// of the group's input channels: with several slices each writes a partial sum of the whole
// output at z * numel (the bias with slice 0), which the caller adds up.
// Bindings: 0 info: array<i32> = [pixels of the batch (N*OH*OW), the window (12 words,
//             window.wgsl), C_in, C_out, cg, cog, blocks per group, has_bias, channels per
//             slice, numel of the output, then the weight's element offset and its strides
//             over (C_out, cg, KH, KW) (a transposed or flipped view is read in place)],
//           1 x: array<f32> (N, C_in, H, W) dense, 2 w: array<f32> (C_out, cg, KH, KW) view,
//           3 bias: array<f32> (C_out; any buffer when has_bias is 0),
//           4 out: array<f32> (N, C_out, OH, OW) dense, or (slices, N*C_out*OH*OW).
// Placeholders: {{ workgroup }} (invocations per workgroup), {{ channels }} (output channels
//   per invocation, a multiple of 4), {{ chunk }} (input channels staged at a time), {{ kh }},
//   {{ kw }} (the kernel's taps, constants so `ws` has a fixed size), {{ epilogue }}
//   (module-scope WGSL defining `pyrite_out(v: f32, i: i32) -> f32`, the value stored at dense
//   output i, fusion's epilogue with its bindings from 5 on), and the generated statements
//   {{ zero }} (the accumulators acc0.. of 4 channels each), {{ fma }} (one tap: `xv` times
//   the staged weights at `wi`), {{ fma4 }} (one tap of 4 input channels: `xv0`..`xv3` times
//   the staged weights at `wi` and the next 3 channels') and {{ store }}.
#include "window.wgsl"
{{ epilogue }}
@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

const WG: i32 = {{ workgroup }};
const OB: i32 = {{ channels }};
const OB4: i32 = OB / 4;
const CC: i32 = {{ chunk }};
const KH: i32 = {{ kh }};
const KW: i32 = {{ kw }};
const TAPS: i32 = KH * KW;
var<workgroup> ws: array<vec4<f32>, CC * TAPS * OB4>;

@compute @workgroup_size({{ workgroup }})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let win = window();
  let pixels = info[0];
  let c_in = info[13]; let c_out = info[14]; let cg = info[15]; let cog = info[16];
  let bpg = info[17];
  let per_slice = info[19];
  let w_off = info[21]; let ws_o = info[22]; let ws_c = info[23]; let ws_y = info[24];
  let ws_x = info[25];
  let t = i32(lid);
  let p = i32(wid.x) * WG + t;
  let live = p < pixels;
  let g = i32(wid.y) / bpg;
  let co0 = g * cog + (i32(wid.y) % bpg) * OB;  // the block's first output channel
  let co_end = min(co0 + OB, g * cog + cog);
  let c_begin = i32(wid.z) * per_slice;  // within the group
  let c_end = min(cg, c_begin + per_slice);
  let plane = win.oh * win.ow;
  let n = p / plane;
  let pix = p - n * plane;
  let oy = pix / win.ow;
  let ox = pix - oy * win.ow;
  let iy0 = oy * win.sh - win.pt;
  let ix0 = ox * win.sw - win.pl;
  let hw = win.h * win.w;
{{ zero }}
  for (var c0 = c_begin; c0 < c_end; c0 += CC) {
    workgroupBarrier();  // the previous chunk's reads are done
    for (var e = t; e < CC * TAPS * OB; e += WG) {
      let o = e % OB;
      let rest = e / OB;
      let tap = rest % TAPS;
      let c = rest / TAPS;
      var v = 0.0;
      if (co0 + o < co_end && c0 + c < c_end) {
        let ky = tap / KW;
        v = w[w_off + (co0 + o) * ws_o + (c0 + c) * ws_c + ky * ws_y + (tap - ky * KW) * ws_x];
      }
      ws[rest * OB4 + o / 4][o % 4] = v;
    }
    workgroupBarrier();
    if (live) {
      let cn = min(CC, c_end - c0);
      var c = 0;
      // 4 input channels a step: their loads are issued before their multiply-adds
      for (; c + 4 <= cn; c += 4) {
        let xbase = (n * c_in + g * cg + c0 + c) * hw;
        for (var ky = 0; ky < KH; ky++) {
          let iy = iy0 + ky * win.dh;
          if (iy < 0 || iy >= win.h) { continue; }
          for (var kx = 0; kx < KW; kx++) {
            let ix = ix0 + kx * win.dw;
            if (ix < 0 || ix >= win.w) { continue; }
            let xi = xbase + iy * win.w + ix;
            let xv0 = x[xi];
            let xv1 = x[xi + hw];
            let xv2 = x[xi + 2 * hw];
            let xv3 = x[xi + 3 * hw];
            let wi = ((c * TAPS) + ky * KW + kx) * OB4;
{{ fma4 }}
          }
        }
      }
      for (; c < cn; c++) {
        let xbase = (n * c_in + g * cg + c0 + c) * hw;
        for (var ky = 0; ky < KH; ky++) {
          let iy = iy0 + ky * win.dh;
          if (iy < 0 || iy >= win.h) { continue; }
          for (var kx = 0; kx < KW; kx++) {
            let ix = ix0 + kx * win.dw;
            if (ix < 0 || ix >= win.w) { continue; }
            let xv = x[xbase + iy * win.w + ix];
            let wi = ((c * TAPS) + ky * KW + kx) * OB4;
{{ fma }}
          }
        }
      }
    }
  }
  if (!live) { return; }
  let numel = info[20];
  let slice = i32(wid.z) * numel;
  let with_bias = info[18] != 0 && wid.z == 0u;
  let obase = (n * c_out) * plane + pix;
{{ store }}
}
