// conv2d_winograd_input.wgsl: the input transform of the Winograd F(2x2, 3x3) convolution
// (webgpu/conv_winograd.py): V = B^T d B for each 4x4 patch d of the input (the patch of the
// 2x2 output tile (ty, tx): rows 2 ty - PT .. 2 ty - PT + 3, zero outside the image), with
// B^T = [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]].
//
// Bindings: 0 x: array<f32> (N, C, IH, IW) dense, 1 v: array<f32> (16, C, P), P = N * TH * TW
//           tiles: v[(e * C + c) * P + (n * TH + ty) * TW + tx] is entry e = 4 * row + column.
// Dispatch: (ceil(TH * TW / WORKGROUP), N * C, 1).
// Placeholders: {{ workgroup }}, {{ geometry }} (the constants N, C, IH, IW, TH, TW, PT, PL as
//   `const X: i32 = ...;`).
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> v: array<f32>;

{{ geometry }}
const WG: i32 = {{ workgroup }};
const P: i32 = N * TH * TW;

fn columns(r: vec4<f32>) -> vec4<f32> {  // a row of B^T d times B
  return vec4<f32>(r.x - r.z, r.y + r.z, r.z - r.y, r.y - r.w);
}

@compute @workgroup_size({{ workgroup }})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
  let idx = i32(wid.x) * WG + i32(t);
  if (idx >= TH * TW) { return; }
  let nc = i32(wid.y);
  let n = nc / C;
  let c = nc - n * C;
  let ty = idx / TW;
  let tx = idx - ty * TW;
  let y0 = 2 * ty - PT;
  let x0 = 2 * tx - PL;
  let base = nc * IH * IW;
  var d: array<vec4<f32>, 4>;
  for (var r = 0; r < 4; r++) {
    let iy = y0 + r;
    var row = vec4<f32>(0.0);
    if (iy >= 0 && iy < IH) {
      let at = base + iy * IW;
      for (var s = 0; s < 4; s++) {
        let ix = x0 + s;
        if (ix >= 0 && ix < IW) { row[s] = x[at + ix]; }
      }
    }
    d[r] = row;
  }
  var rows = array<vec4<f32>, 4>(columns(d[0] - d[2]), columns(d[1] + d[2]),
                                 columns(d[2] - d[1]), columns(d[1] - d[3]));
  let p = (n * TH + ty) * TW + tx;
  for (var r = 0; r < 4; r++) {
    let row = rows[r];
    for (var s = 0; s < 4; s++) { v[((4 * r + s) * C + c) * P + p] = row[s]; }
  }
}
