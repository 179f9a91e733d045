// conv2d_weight_grad.wgsl: the gradient of conv2d (conv2d.wgsl) with respect to its weight:
// dw[co, c, ky, kx] = sum over n, oy, ox of g[n, co, oy, ox] * x[n, grp*cg + c, oy*sh - pt +
// ky*dh, ox*sw - pl + kx*dw] (padding reads zero), grp = co / cog.
// One workgroup per weight element: each invocation folds a strided run of each image's OH*OW
// terms (neighbouring invocations read neighbouring ox, so loads coalesce; the run's (oy, ox)
// is stepped, not divided out) and a shared-memory tree adds the runs, as reduce.wgsl does.
// Bindings: 0 info: array<i32> = [count (weights), the window (12 words, window.wgsl), C_in,
//             C_out, cg, cog, N], 1 x: array<f32> (N, C_in, H, W) dense,
//           2 g: array<f32> (N, C_out, OH, OW) dense, 3 dw: array<f32> (C_out, cg, KH, KW).
// Placeholders: {{ workgroup }} (invocations per workgroup, a power of two).
#include "window.wgsl"
@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> g: array<f32>;
@group(0) @binding(3) var<storage, read_write> dw_out: array<f32>;

var<workgroup> partial: array<f32, {{ workgroup }}>;

@compute @workgroup_size({{ workgroup }})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let e = pyrite_flat(wid, nwg, 1u);
  let live = e < info[0];
  let win = window();
  let c_in = info[13]; let c_out = info[14]; let cg = info[15]; let cog = info[16];
  let at = pyrite_unravel(e, vec3<i32>(win.kw, win.kh, cg));
  let kx = at.x; let ky = at.y; let c = at.z; let co = at.w;
  let ci = (co / cog) * cg + c;
  let ow = win.ow;
  let plane = win.oh * ow;
  let batch = select(0, info[17], live);
  // pixel p = lid + j * workgroup of each image, its (oy, ox) stepped without dividing
  let step_y = {{ workgroup }} / ow;
  let step_x = {{ workgroup }} % ow;
  let y_off = ky * win.dh - win.pt;
  let x_off = kx * win.dw - win.pl;
  var acc = 0.0;
  for (var n = 0; n < batch; n++) {
    let gbase = (n * c_out + co) * plane;
    let xbase = (n * c_in + ci) * win.h * win.w;
    var oy = i32(lid) / ow;
    var ox = i32(lid) % ow;
    for (var p = i32(lid); p < plane; p += {{ workgroup }}) {
      let iy = oy * win.sh + y_off;
      let ix = ox * win.sw + x_off;
      if (iy >= 0 && iy < win.h && ix >= 0 && ix < win.w) {
        acc += g[gbase + p] * x[xbase + iy * win.w + ix];
      }
      oy += step_y;
      ox += step_x;
      if (ox >= ow) {
        ox -= ow;
        oy += 1;
      }
    }
  }
  partial[lid] = acc;
  workgroupBarrier();
  for (var s = {{ workgroup }}u / 2u; s > 0u; s = s / 2u) {
    if (lid < s) {
      partial[lid] = partial[lid] + partial[lid + s];
    }
    workgroupBarrier();
  }
  if (lid == 0u && live) {
    dw_out[e] = partial[0];
  }
}
