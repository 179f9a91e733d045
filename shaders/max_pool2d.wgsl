// max_pool2d.wgsl: max pooling over (N*C) planes, NCHW, f32, with stride, padding and dilation,
// and where each max was: out[p, oy, ox] = the max over taps (i, j) of x[p, iy, ix] with
// iy = oy*sh - pt + i*dh, ix = ox*sw - pl + j*dw (taps in the padding read -inf), and
// index[p, oy, ox] = iy * W + ix of the first tap holding it (PyTorch's flat layout). Ties and
// NaN follow argmax: the first max wins, and a NaN is the max once seen.
// One invocation per output element, ox fastest.
// Bindings: 0 info: array<i32> = [total, the window (12 words, window.wgsl)],
//           1 x: array<f32> (planes, H, W) dense, 2 out: array<f32> (planes, OH, OW),
//           3 index: array<i32> (planes, OH, OW).
// Placeholders: {{ enable }} (the header: pyrite_bits, no f16), {{ workgroup }} (invocations
//   per workgroup).
{{ enable }}
#include "window.wgsl"
@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<storage, read_write> index: array<i32>;

fn is_nan(v: f32) -> bool {
  return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
}

@compute @workgroup_size({{ workgroup }})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let idx = pyrite_flat(gid, nwg, {{ workgroup }}u);
  if (idx >= info[0]) { return; }
  let win = window();
  let o = window_output(win, idx);  // (ox, oy, the input plane's start)
  let iy0 = o.y * win.sh - win.pt;
  let ix0 = o.x * win.sw - win.pl;
  var best = pyrite_bits(0xff800000u);
  var at = iy0 * win.w + ix0;
  for (var i = 0; i < win.kh; i++) {
    let iy = iy0 + i * win.dh;
    for (var j = 0; j < win.kw; j++) {
      let ix = ix0 + j * win.dw;
      var v = pyrite_bits(0xff800000u);
      if (iy >= 0 && iy < win.h && ix >= 0 && ix < win.w) {
        v = x[o.z + iy * win.w + ix];
      }
      if (!is_nan(best) && (v > best || is_nan(v))) {
        best = v;
        at = iy * win.w + ix;
      }
    }
  }
  out[idx] = best;
  index[idx] = at;
}
