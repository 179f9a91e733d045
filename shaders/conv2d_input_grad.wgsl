// conv2d_input_grad.wgsl: the gradient of conv2d (conv2d.wgsl) with respect to its input,
// gathered rather than scattered: dx[n, ci, iy, ix] = sum over the taps (ky, kx) and the group's
// output channels co of g[n, co, oy, ox] * w[co, ci % cg, ky, kx], where oy = (iy + pt - ky*dh)
// / sh when that divides exactly and lands in [0, OH) (the same for ox). One invocation per
// input pixel; no atomics, no zero-interleaved copy of g. Threads go ix fastest.
// Bindings: 0 info: array<i32> = [total, C_in, H, W, C_out, OH, OW, KH, KW, sh, sw, pt, pl, dh,
//             dw, cg, cog], 1 g: array<f32> (N, C_out, OH, OW) dense,
//           2 w: array<f32> (C_out, cg, KH, KW) dense, 3 dx: array<f32> (N, C_in, H, W) dense.
// Placeholders: {{ workgroup }} (invocations per workgroup).
@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read> g: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read_write> dx: array<f32>;

@compute @workgroup_size({{ workgroup }})
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let idx = i32(gid.x + gid.y * nwg.x * {{ workgroup }}u);
  if (idx >= info[0]) { return; }
  let c_in = info[1]; let h = info[2]; let wd = info[3];
  let c_out = info[4]; let oh = info[5]; let ow = info[6];
  let kh = info[7]; let kw = info[8];
  let sh = info[9]; let sw = info[10]; let pt = info[11]; let pl = info[12];
  let dh = info[13]; let dw = info[14];
  let cg = info[15]; let cog = info[16];
  let ix = idx % wd;
  var r = idx / wd;
  let iy = r % h;
  r = r / h;
  let ci = r % c_in;
  let n = r / c_in;
  let grp = ci / cg;
  let taps = kh * kw;
  let plane = oh * ow;
  let gbase = (n * c_out + grp * cog) * plane;
  let wbase = (grp * cog * cg + ci % cg) * taps;
  var acc = 0.0;
  for (var ky = 0; ky < kh; ky++) {
    let ty = iy + pt - ky * dh;
    if (ty < 0 || ty % sh != 0) { continue; }
    let oy = ty / sh;
    if (oy >= oh) { continue; }
    for (var kx = 0; kx < kw; kx++) {
      let tx = ix + pl - kx * dw;
      if (tx < 0 || tx % sw != 0) { continue; }
      let ox = tx / sw;
      if (ox >= ow) { continue; }
      let gp = gbase + oy * ow + ox;
      let wp = wbase + ky * kw + kx;
      for (var c = 0; c < cog; c++) {
        acc += g[gp + c * plane] * w[wp + c * cg * taps];
      }
    }
  }
  dx[idx] = acc;
}
