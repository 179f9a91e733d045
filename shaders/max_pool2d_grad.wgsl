// max_pool2d_grad.wgsl: the gradient of max_pool2d (max_pool2d.wgsl) with respect to its input,
// gathered: dx[p, iy, ix] = the sum of g[p, oy, ox] over the windows that contain (iy, ix) and
// whose index[p, oy, ox] is iy * W + ix. One invocation per input element, ix fastest; no
// atomics.
// Bindings: 0 info: array<i32> = [total, the window (12 words, window.wgsl)],
//           1 g: array<f32> (planes, OH, OW) dense, 2 index: array<i32> (planes, OH, OW) dense,
//           3 dx: array<f32> (planes, H, W).
// Placeholders: {{ workgroup }} (invocations per workgroup).
#include "window.wgsl"
@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read> g: array<f32>;
@group(0) @binding(2) var<storage, read> index: array<i32>;
@group(0) @binding(3) var<storage, read_write> dx: array<f32>;

@compute @workgroup_size({{ workgroup }})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let idx = pyrite_flat(gid, nwg, {{ workgroup }}u);
  if (idx >= info[0]) { return; }
  let win = window();
  let p = window_input(win, idx);  // (ix, iy, the output plane's start)
  let me = p.y * win.w + p.x;
  var acc = 0.0;
  if (win.dh == 1 && win.dw == 1) {
    // the windows holding (iy, ix) form a box: oy*sh - pt <= iy < oy*sh - pt + kh, so
    // oy in [ceil((iy + pt - kh + 1) / sh), floor((iy + pt) / sh)] (and likewise ox): four
    // divisions an element instead of two a tap
    let ty = p.y + win.pt;
    let tx = p.x + win.pl;
    let oy1 = min(win.oh - 1, ty / win.sh);
    let ox0 = max(0, (tx - win.kw + win.sw) / win.sw);
    let ox1 = min(win.ow - 1, tx / win.sw);
    for (var oy = max(0, (ty - win.kh + win.sh) / win.sh); oy <= oy1; oy++) {
      let row = p.z + oy * win.ow;
      for (var ox = ox0; ox <= ox1; ox++) {
        if (index[row + ox] == me) {
          acc += g[row + ox];
        }
      }
    }
    dx[idx] = acc;
    return;
  }
  for (var i = 0; i < win.kh; i++) {
    let ty = p.y + win.pt - i * win.dh;
    if (ty < 0 || ty % win.sh != 0 || ty / win.sh >= win.oh) { continue; }
    for (var j = 0; j < win.kw; j++) {
      let tx = p.x + win.pl - j * win.dw;
      if (tx < 0 || tx % win.sw != 0 || tx / win.sw >= win.ow) { continue; }
      let o = p.z + (ty / win.sh) * win.ow + tx / win.sw;
      if (index[o] == me) {
        acc += g[o];
      }
    }
  }
  dx[idx] = acc;
}
