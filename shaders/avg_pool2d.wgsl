// avg_pool2d.wgsl: average pooling over (N*C) planes, NCHW, f32, and its input gradient.
// Entry point `forward`: dst[p, oy, ox] = the sum of src[p, iy, ix] over the window
// iy in [oy*sh - pt, +KH), ix in [ox*sw - pl, +KW) (padding adds zero), divided by KH*KW when
// include_pad is 1, else by the number of window pixels inside the input. One invocation per
// output element. Entry point `backward`: src is the output gradient (planes, OH, OW) and
// dst[p, iy, ix] the sum over the windows holding (iy, ix) of src / that window's divisor;
// one invocation per input element.
// Bindings: 0 info: array<i32> = [total, the window (12 words, window.wgsl; dilation 1),
//             include_pad], 1 src: array<f32> dense, 2 dst: array<f32> dense.
// Placeholders: {{ workgroup }} (invocations per workgroup).
#include "window.wgsl"
@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;

// the divisor of the window of output (oy, ox)
fn divisor(win: Window, oy: i32, ox: i32) -> f32 {
  if (info[13] != 0) { return f32(win.kh * win.kw); }
  let y0 = oy * win.sh - win.pt;
  let x0 = ox * win.sw - win.pl;
  let rows = min(win.h, y0 + win.kh) - max(0, y0);
  let cols = min(win.w, x0 + win.kw) - max(0, x0);
  return f32(rows * cols);
}

@compute @workgroup_size({{ workgroup }})
fn forward(@builtin(global_invocation_id) gid: vec3<u32>,
           @builtin(num_workgroups) nwg: vec3<u32>) {
  let idx = pyrite_flat(gid, nwg, {{ workgroup }}u);
  if (idx >= info[0]) { return; }
  let win = window();
  let o = window_output(win, idx);  // (ox, oy, the input plane's start)
  let y0 = o.y * win.sh - win.pt;
  let x0 = o.x * win.sw - win.pl;
  var acc = 0.0;
  for (var iy = max(0, y0); iy < min(win.h, y0 + win.kh); iy++) {
    for (var ix = max(0, x0); ix < min(win.w, x0 + win.kw); ix++) {
      acc += src[o.z + iy * win.w + ix];
    }
  }
  dst[idx] = acc / divisor(win, o.y, o.x);
}

@compute @workgroup_size({{ workgroup }})
fn backward(@builtin(global_invocation_id) gid: vec3<u32>,
            @builtin(num_workgroups) nwg: vec3<u32>) {
  let idx = pyrite_flat(gid, nwg, {{ workgroup }}u);
  if (idx >= info[0]) { return; }
  let win = window();
  let p = window_input(win, idx);  // (ix, iy, the output plane's start)
  // windows holding iy: oy*sh - pt <= iy < oy*sh - pt + kh
  let ty = p.y + win.pt;
  let tx = p.x + win.pl;
  let oy0 = max(0, (ty - win.kh + win.sh) / win.sh);
  let ox0 = max(0, (tx - win.kw + win.sw) / win.sw);
  var acc = 0.0;
  for (var oy = oy0; oy <= min(win.oh - 1, ty / win.sh); oy++) {
    if (ty - oy * win.sh >= win.kh) { continue; }
    for (var ox = ox0; ox <= min(win.ow - 1, tx / win.sw); ox++) {
      if (tx - ox * win.sw >= win.kw) { continue; }
      acc += src[p.z + oy * win.ow + ox] / divisor(win, oy, ox);
    }
  }
  dst[idx] = acc;
}
