// conv2d_winograd_weight.wgsl: the weight transform of the Winograd F(2x2, 3x3) convolution
// (webgpu/conv_winograd.py): U = G g G^T for each (output channel k, input channel c) of a 3x3
// kernel g, with G = [[1, 0, 0], [1/2, 1/2, 1/2], [1/2, -1/2, 1/2], [0, 0, 1]].
//
// The conv's kernel is W'[k, c] (K output, C input channels). Without FLIP it is the weight
// as stored, w (K, C, 3, 3); with FLIP (an input gradient: the output gradient convolved with
// the flipped, transposed kernel) W'[k, c, i, j] = w[c, k, 2 - i, 2 - j] of w (C, K, 3, 3).
//
// Bindings: 0 w: array<f32> dense, 1 u: array<f32> (16, K, C): u[(e * K + k) * C + c] is entry
//           e = 4 * row + column of U for (k, c).
// Dispatch: (ceil(K * C / WORKGROUP), 1, 1).
// Placeholders: {{ workgroup }}, {{ geometry }} (`const K: i32`, `const C: i32`,
//   `const FLIP: bool`).
@group(0) @binding(0) var<storage, read> w: array<f32>;
@group(0) @binding(1) var<storage, read_write> u: array<f32>;

{{ geometry }}
const WG: i32 = {{ workgroup }};

fn tap(k: i32, c: i32, i: i32, j: i32) -> f32 {
  if (FLIP) { return w[(c * K + k) * 9 + 8 - (3 * i + j)]; }
  return w[(k * C + c) * 9 + 3 * i + j];
}

fn columns(r: vec3<f32>) -> vec4<f32> {  // a row of G g times G^T
  return vec4<f32>(r.x, 0.5 * (r.x + r.y + r.z), 0.5 * (r.x - r.y + r.z), r.z);
}

@compute @workgroup_size({{ workgroup }})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
  let idx = i32(wid.x) * WG + i32(t);
  if (idx >= K * C) { return; }
  let k = idx / C;
  let c = idx - k * C;
  let g0 = vec3<f32>(tap(k, c, 0, 0), tap(k, c, 0, 1), tap(k, c, 0, 2));
  let g1 = vec3<f32>(tap(k, c, 1, 0), tap(k, c, 1, 1), tap(k, c, 1, 2));
  let g2 = vec3<f32>(tap(k, c, 2, 0), tap(k, c, 2, 1), tap(k, c, 2, 2));
  var rows = array<vec4<f32>, 4>(columns(g0), columns(0.5 * (g0 + g1 + g2)),
                                 columns(0.5 * (g0 - g1 + g2)), columns(g2));
  let plane = K * C;
  for (var r = 0; r < 4; r++) {
    let row = rows[r];
    for (var s = 0; s < 4; s++) { u[(4 * r + s) * plane + idx] = row[s]; }
  }
}
