// conv2d_input_grad.wgsl: the gradient of conv2d (conv2d.wgsl) with respect to its input,
// gathered rather than scattered: dx[n, ci, iy, ix] = sum over the taps (ky, kx) and the group's
// output channels co of g[n, co, oy, ox] * w[co, ci % cg, ky, kx], where oy = (iy + pt - ky*dh)
// / sh when that divides exactly and lands in [0, OH) (the same for ox). One invocation per
// input pixel and block of 4 input channels of a group (each g value read once for the
// block); no atomics, no zero-interleaved copy of g.
// Invocations go by phase: the pixels of one (iy % sh, ix % sw) class reach the same taps, so
// neighbouring invocations take one pixel each of a class (ix / sw fastest, then iy / sh, then
// the class, the block of channels and the image), and a strided conv's warps do not split
// between taps (SqueezeNet's first layer, 3x3 at stride 2: 3 of 4 neighbours took other taps).
// Invocations past the image's edge (H or W not a multiple of the stride) return.
// Bindings: 0 info: array<i32> = [total (N * groups * ceil(cg / 4) * sh * sw * ceil(H / sh) *
//             ceil(W / sw)), the window (12 words, window.wgsl), C_in, C_out, cg, cog] (as in
//             conv2d.wgsl),
//           1 g: array<f32> (N, C_out, OH, OW) dense,
//           2 w: array<f32> (C_out, cg, KH, KW) dense, 3 dx: array<f32> (N, C_in, H, W) dense.
// Placeholders: {{ workgroup }} (invocations per workgroup).
#include "window.wgsl"
@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read> g: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read_write> dx: array<f32>;

@compute @workgroup_size({{ workgroup }})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let idx = pyrite_flat(gid, nwg, {{ workgroup }}u);
  if (idx >= info[0]) { return; }
  let win = window();
  let c_in = info[13]; let c_out = info[14]; let cg = info[15]; let cog = info[16];
  let hq = (win.h + win.sh - 1) / win.sh;
  let wq = (win.w + win.sw - 1) / win.sw;
  let phases = win.sh * win.sw;
  let blocks = (cg + 3) / 4;  // blocks of 4 input channels per group
  let at = pyrite_unravel(idx, vec3<i32>(wq, hq, phases * blocks * (c_in / cg)));
  let phase = at.z % phases;
  let ix = at.x * win.sw + phase % win.sw;
  let iy = at.y * win.sh + phase / win.sw;
  if (ix >= win.w || iy >= win.h) { return; }
  let block = at.z / phases;  // (group, block of channels)
  let grp = block / blocks;
  let c0 = (block % blocks) * 4;  // the block's first channel within the group
  let lanes = min(4, cg - c0);
  let n = at.w;
  let taps = win.kh * win.kw;
  let plane = win.oh * win.ow;
  let gbase = (n * c_out + grp * cog) * plane;
  let wbase = (grp * cog * cg + c0) * taps;
  let wlast = lanes - 1;  // lanes past the group's channels read the last one's weight
  var acc = vec4<f32>(0.0);
  for (var ky = 0; ky < win.kh; ky++) {
    let ty = iy + win.pt - ky * win.dh;
    if (ty < 0 || ty % win.sh != 0) { continue; }
    let oy = ty / win.sh;
    if (oy >= win.oh) { continue; }
    for (var kx = 0; kx < win.kw; kx++) {
      let tx = ix + win.pl - kx * win.dw;
      if (tx < 0 || tx % win.sw != 0) { continue; }
      let ox = tx / win.sw;
      if (ox >= win.ow) { continue; }
      let gp = gbase + oy * win.ow + ox;
      let wp = wbase + ky * win.kw + kx;
      for (var c = 0; c < cog; c++) {
        let gv = g[gp + c * plane];
        let wc = wp + c * cg * taps;
        acc += gv * vec4<f32>(w[wc], w[wc + min(1, wlast) * taps], w[wc + min(2, wlast) * taps],
                              w[wc + min(3, wlast) * taps]);
      }
    }
  }
  let out = ((n * c_in + grp * cg + c0) * win.h + iy) * win.w + ix;
  let step = win.h * win.w;
  for (var e = 0; e < lanes; e++) {
    dx[out + e * step] = acc[e];
  }
}
