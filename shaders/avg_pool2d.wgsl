// avg_pool2d.wgsl: average pooling over (N*C) planes, NCHW, f32, and its input gradient.
// Entry point `forward`: dst[p, oy, ox] = the sum of src[p, iy, ix] over the window
// iy in [oy*sh - pt, +KH), ix in [ox*sw - pl, +KW) (padding adds zero), divided by KH*KW when
// include_pad is 1, else by the number of window pixels inside the input. One invocation per
// output element. Entry point `backward`: src is the output gradient (planes, OH, OW) and
// dst[p, iy, ix] the sum over the windows holding (iy, ix) of src / that window's divisor;
// one invocation per input element.
// Bindings: 0 info: array<i32> = [total, H, W, OH, OW, KH, KW, sh, sw, pt, pl, include_pad],
//           1 src: array<f32> dense, 2 dst: array<f32> dense.
// Placeholders: {{ workgroup }} (invocations per workgroup).
@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;

fn linear_id(gid: vec3<u32>, nwg: vec3<u32>) -> i32 {
  return i32(gid.x + gid.y * nwg.x * {{ workgroup }}u);
}

// the divisor of the window of output (oy, ox)
fn divisor(oy: i32, ox: i32) -> f32 {
  let h = info[1]; let wd = info[2]; let kh = info[5]; let kw = info[6];
  if (info[11] != 0) { return f32(kh * kw); }
  let y0 = oy * info[7] - info[9];
  let x0 = ox * info[8] - info[10];
  let rows = min(h, y0 + kh) - max(0, y0);
  let cols = min(wd, x0 + kw) - max(0, x0);
  return f32(rows * cols);
}

@compute @workgroup_size({{ workgroup }})
fn forward(@builtin(global_invocation_id) gid: vec3<u32>,
           @builtin(num_workgroups) nwg: vec3<u32>) {
  let idx = linear_id(gid, nwg);
  if (idx >= info[0]) { return; }
  let h = info[1]; let wd = info[2]; let oh = info[3]; let ow = info[4];
  let ox = idx % ow;
  let oy = (idx / ow) % oh;
  let base = (idx / (ow * oh)) * h * wd;
  let y0 = oy * info[7] - info[9];
  let x0 = ox * info[8] - info[10];
  var acc = 0.0;
  for (var iy = max(0, y0); iy < min(h, y0 + info[5]); iy++) {
    for (var ix = max(0, x0); ix < min(wd, x0 + info[6]); ix++) {
      acc += src[base + iy * wd + ix];
    }
  }
  dst[idx] = acc / divisor(oy, ox);
}

@compute @workgroup_size({{ workgroup }})
fn backward(@builtin(global_invocation_id) gid: vec3<u32>,
            @builtin(num_workgroups) nwg: vec3<u32>) {
  let idx = linear_id(gid, nwg);
  if (idx >= info[0]) { return; }
  let h = info[1]; let wd = info[2]; let oh = info[3]; let ow = info[4];
  let kh = info[5]; let kw = info[6]; let sh = info[7]; let sw = info[8];
  let ix = idx % wd;
  let iy = (idx / wd) % h;
  let base = (idx / (wd * h)) * oh * ow;
  // windows holding iy: oy*sh - pt <= iy < oy*sh - pt + kh
  let ty = iy + info[9];
  let tx = ix + info[10];
  let oy0 = max(0, (ty - kh + sh) / sh);
  let ox0 = max(0, (tx - kw + sw) / sw);
  var acc = 0.0;
  for (var oy = oy0; oy <= min(oh - 1, ty / sh); oy++) {
    if (ty - oy * sh >= kh) { continue; }
    for (var ox = ox0; ox <= min(ow - 1, tx / sw); ox++) {
      if (tx - ox * sw >= kw) { continue; }
      acc += src[base + oy * ow + ox] / divisor(oy, ox);
    }
  }
  dst[idx] = acc;
}
