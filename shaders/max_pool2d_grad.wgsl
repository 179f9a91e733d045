// max_pool2d_grad.wgsl: the gradient of max_pool2d (max_pool2d.wgsl) with respect to its input,
// gathered: dx[p, iy, ix] = the sum of g[p, oy, ox] over the windows that contain (iy, ix) and
// whose index[p, oy, ox] is iy * W + ix. One invocation per input element, ix fastest; no
// atomics.
// Bindings: 0 info: array<i32> = [total, H, W, OH, OW, KH, KW, sh, sw, pt, pl, dh, dw],
//           1 g: array<f32> (planes, OH, OW) dense, 2 index: array<i32> (planes, OH, OW) dense,
//           3 dx: array<f32> (planes, H, W).
// Placeholders: {{ workgroup }} (invocations per workgroup).
@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read> g: array<f32>;
@group(0) @binding(2) var<storage, read> index: array<i32>;
@group(0) @binding(3) var<storage, read_write> dx: array<f32>;

@compute @workgroup_size({{ workgroup }})
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let idx = i32(gid.x + gid.y * nwg.x * {{ workgroup }}u);
  if (idx >= info[0]) { return; }
  let h = info[1]; let wd = info[2]; let oh = info[3]; let ow = info[4];
  let kh = info[5]; let kw = info[6]; let sh = info[7]; let sw = info[8];
  let pt = info[9]; let pl = info[10]; let dh = info[11]; let dw = info[12];
  let ix = idx % wd;
  let iy = (idx / wd) % h;
  let base = (idx / (wd * h)) * oh * ow;
  let me = iy * wd + ix;
  var acc = 0.0;
  for (var i = 0; i < kh; i++) {
    let ty = iy + pt - i * dh;
    if (ty < 0 || ty % sh != 0 || ty / sh >= oh) { continue; }
    for (var j = 0; j < kw; j++) {
      let tx = ix + pl - j * dw;
      if (tx < 0 || tx % sw != 0 || tx / sw >= ow) { continue; }
      let o = base + (ty / sh) * ow + tx / sw;
      if (index[o] == me) {
        acc += g[o];
      }
    }
  }
  dx[idx] = acc;
}
