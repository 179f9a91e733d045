// conv2d_winograd_output.wgsl: the output transform of the Winograd F(2x2, 3x3) convolution
// (webgpu/conv_winograd.py): the 2x2 output tile (ty, tx) of output channel k is A^T m A (plus
// the bias) for the 4x4 products m of the batched GEMM, with A^T = [[1, 1, 1, 0],
// [0, 1, -1, -1]]; an odd image's last row or column of tiles stores only what is inside.
//
// Bindings: 0 m: array<f32> (16, K, P) dense, P = N * TH * TW tiles, 1 b: array<f32> (K) the
//           bias (read where HAS_BIAS), 2 y: array<f32> (N, K, OH, OW) dense.
// Dispatch: (ceil(TH * TW / WORKGROUP), N * K, 1).
// Placeholders: {{ workgroup }}, {{ geometry }} (the constants N, K, OH, OW, TH, TW as
//   `const X: i32 = ...;` and `const HAS_BIAS: bool`).
@group(0) @binding(0) var<storage, read> m: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

{{ geometry }}
const WG: i32 = {{ workgroup }};
const P: i32 = N * TH * TW;

fn columns(r: vec4<f32>) -> vec2<f32> {  // a row of A^T m times A
  return vec2<f32>(r.x + r.y + r.z, r.y - r.z - r.w);
}

@compute @workgroup_size({{ workgroup }})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
  let idx = i32(wid.x) * WG + i32(t);
  if (idx >= TH * TW) { return; }
  let nk = i32(wid.y);
  let n = nk / K;
  let k = nk - n * K;
  let ty = idx / TW;
  let tx = idx - ty * TW;
  let at = k * P + (n * TH + ty) * TW + tx;
  var q: array<vec4<f32>, 4>;
  for (var r = 0; r < 4; r++) {
    let e = 4 * r * K * P + at;
    q[r] = vec4<f32>(m[e], m[e + K * P], m[e + 2 * K * P], m[e + 3 * K * P]);
  }
  var bias = 0.0;
  if (HAS_BIAS) { bias = b[k]; }
  let top = columns(q[0] + q[1] + q[2]) + bias;
  let bottom = columns(q[1] - q[2] - q[3]) + bias;
  let oy = 2 * ty;
  let ox = 2 * tx;
  let o = (nk * OH + oy) * OW + ox;
  y[o] = top.x;
  if (ox + 1 < OW) { y[o + 1] = top.y; }
  if (oy + 1 < OH) {
    y[o + OW] = bottom.x;
    if (ox + 1 < OW) { y[o + OW + 1] = bottom.y; }
  }
}
