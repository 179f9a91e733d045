// conv2d_weight_grad.wgsl: the gradient of conv2d (conv2d.wgsl) with respect to its weight:
// dw[co, c, ky, kx] = sum over n, oy, ox of g[n, co, oy, ox] * x[n, grp*cg + c, oy*sh - pt +
// ky*dh, ox*sw - pl + kx*dw] (padding reads zero), grp = co / cog.
// One workgroup per (channel pair (co, c), chunk of up to TAPS taps, slice of the reduction):
// each invocation walks a strided run of the slice's flat (n, oy, ox) terms, reads g once per
// term and x under each of its chunk's taps (neighbouring invocations read neighbouring ox, so
// loads coalesce, and the taps' x reads hit the same cache lines), keeping TAPS sums in
// registers; a workgroup-memory pass then adds the invocations' sums per tap.
// With one slice the sums are dw; with several, slice s writes its partial dw at
// dw_out[s * weights + e] and matmul_split_sum.wgsl adds them.
// Bindings: 0 info: array<i32> = [workgroups (pairs * chunks * slices), the window (12 words,
//             window.wgsl), C_in, C_out, cg, cog, N, chunks, slices, slice length (terms),
//             weights], 1 x: array<f32> (N, C_in, H, W) dense,
//           2 g: array<f32> (N, C_out, OH, OW) dense, 3 dw_out: array<f32> (slices * weights).
// Placeholders: {{ workgroup }} (invocations per workgroup), {{ taps }} (taps per chunk,
//   min(KH*KW, 16)).
#include "window.wgsl"
@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> g: array<f32>;
@group(0) @binding(3) var<storage, read_write> dw_out: array<f32>;

const WG: i32 = {{ workgroup }};
const TAPS: i32 = {{ taps }};

var<workgroup> sums: array<f32, WG * TAPS>;

@compute @workgroup_size({{ workgroup }})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let f = pyrite_flat(wid, nwg, 1u);
  let live = f < info[0];
  let win = window();
  let c_in = info[13]; let c_out = info[14]; let cg = info[15]; let cog = info[16];
  let chunks = info[18]; let slices = info[19]; let length = info[20]; let weights = info[21];
  let slice = f % slices;
  let chunk = (f / slices) % chunks;
  let pair = f / (slices * chunks);  // co * cg + c
  let co = pair / cg;
  let c = pair - co * cg;
  let ci = (co / cog) * cg + c;
  let taps = win.kh * win.kw;
  let t0 = chunk * TAPS;
  var y_off: array<i32, TAPS>;
  var x_off: array<i32, TAPS>;
  var acc: array<f32, TAPS>;
  for (var i = 0; i < TAPS; i++) {
    let t = min(t0 + i, taps - 1);
    let ky = t / win.kw;
    y_off[i] = ky * win.dh - win.pt;
    x_off[i] = (t - ky * win.kw) * win.dw - win.pl;
    acc[i] = 0.0;
  }
  let ow = win.ow;
  let plane = win.oh * ow;
  let image = win.h * win.w;
  let begin = slice * length;
  let end = select(0, min(begin + length, info[17] * plane), live);
  for (var r = begin + i32(lid); r < end; r += WG) {
    let n = r / plane;
    let pix = r - n * plane;
    let oy = pix / ow;
    let ox = pix - oy * ow;
    let gv = g[(n * c_out + co) * plane + pix];
    let xbase = (n * c_in + ci) * image;
    let y0 = oy * win.sh;
    let x0 = ox * win.sw;
    for (var i = 0; i < TAPS; i++) {
      let iy = y0 + y_off[i];
      let ix = x0 + x_off[i];
      if (iy >= 0 && iy < win.h && ix >= 0 && ix < win.w) {
        acc[i] = fma(gv, x[xbase + iy * win.w + ix], acc[i]);
      }
    }
  }
  for (var i = 0; i < TAPS; i++) {
    sums[i * WG + i32(lid)] = acc[i];
  }
  workgroupBarrier();
  // invocation i < TAPS adds tap i's WG sums (in a fixed order: deterministic)
  let i = i32(lid);
  if (live && i < TAPS && t0 + i < taps) {
    var total = 0.0;
    for (var j = 0; j < WG; j++) {
      total += sums[i * WG + j];
    }
    dw_out[slice * weights + pair * taps + t0 + i] = total;
  }
}
