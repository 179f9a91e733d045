// adaptive_avg_pool2d.wgsl: adaptive average pooling over (N*C) planes, NCHW, f32, with
// PyTorch's windows rows [floor(oy*H/OH), ceil((oy+1)*H/OH)) (columns alike), and its gradient.
// Entry point `forward`: dst[p, oy, ox] = the mean of src over the window; one invocation per
// output element. Entry point `backward`: src is the output gradient (planes, OH, OW) and
// dst[p, iy, ix] the sum over the windows holding (iy, ix) of src / the window's size (the
// windows holding row iy are oy in [floor(iy*OH/H), ceil((iy+1)*OH/H))); one invocation per
// input element.
// Bindings: 0 info: array<i32> = [total, the window (12 words, window.wgsl; the kernel uses
//             H, W, OH, OW)], 1 src: array<f32> dense, 2 dst: array<f32> dense.
// Placeholders: {{ workgroup }} (invocations per workgroup).
#include "window.wgsl"
@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;

fn start(i: i32, size: i32, out: i32) -> i32 {
  return (i * size) / out;
}

fn end(i: i32, size: i32, out: i32) -> i32 {
  return ((i + 1) * size + out - 1) / out;
}

@compute @workgroup_size({{ workgroup }})
fn forward(@builtin(global_invocation_id) gid: vec3<u32>,
           @builtin(num_workgroups) nwg: vec3<u32>) {
  let idx = pyrite_flat(gid, nwg, {{ workgroup }}u);
  if (idx >= info[0]) { return; }
  let win = window();
  let o = window_output(win, idx);  // (ox, oy, the input plane's start)
  let y0 = start(o.y, win.h, win.oh); let y1 = end(o.y, win.h, win.oh);
  let x0 = start(o.x, win.w, win.ow); let x1 = end(o.x, win.w, win.ow);
  var acc = 0.0;
  for (var iy = y0; iy < y1; iy++) {
    for (var ix = x0; ix < x1; ix++) {
      acc += src[o.z + iy * win.w + ix];
    }
  }
  dst[idx] = acc / f32((y1 - y0) * (x1 - x0));
}

@compute @workgroup_size({{ workgroup }})
fn backward(@builtin(global_invocation_id) gid: vec3<u32>,
            @builtin(num_workgroups) nwg: vec3<u32>) {
  let idx = pyrite_flat(gid, nwg, {{ workgroup }}u);
  if (idx >= info[0]) { return; }
  let win = window();
  let h = win.h; let wd = win.w; let oh = win.oh; let ow = win.ow;
  let p = window_input(win, idx);  // (ix, iy, the output plane's start)
  let ix = p.x; let iy = p.y;
  var acc = 0.0;
  for (var oy = start(iy, oh, h); oy < min(oh, end(iy, oh, h)); oy++) {
    let y0 = start(oy, h, oh); let y1 = end(oy, h, oh);
    if (iy < y0 || iy >= y1) { continue; }
    for (var ox = start(ix, ow, wd); ox < min(ow, end(ix, ow, wd)); ox++) {
      let x0 = start(ox, wd, ow); let x1 = end(ox, wd, ow);
      if (ix < x0 || ix >= x1) { continue; }
      acc += src[p.z + oy * ow + ox] / f32((y1 - y0) * (x1 - x0));
    }
  }
  dst[idx] = acc;
}
