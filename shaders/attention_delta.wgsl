// attention_delta.wgsl: the row statistics the attention backward kernels read: for each query
// row (lse, sum over d of dout * out), the second being sum_j p_ij dp_ij, the term the softmax's
// derivative subtracts. One invocation a row.
// Bindings: 0 info: array<i32> (attention_common.wgsl's words; the output gradient's view at
//   G_VIEW), 1 out: the forward's output, dense (batch, heads, seq_q, d_v), 2 dout: its gradient
//   (strided), 3 lse: the forward's (batch, heads, seq_q), 4 stats: array<vec2<f32>> of as many.
// Placeholders: {{ enable }} (the header), {{ workgroup }}.
{{ enable }}
#include "index.wgsl"
@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read> out: array<f32>;
@group(0) @binding(2) var<storage, read> dout: array<f32>;
@group(0) @binding(3) var<storage, read> lse: array<f32>;
@group(0) @binding(4) var<storage, read_write> stats: array<vec2<f32>>;

#include "attention_common.wgsl"

@compute @workgroup_size({{ workgroup }})
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = pyrite_flat(gid, nwg, {{ workgroup }}u);
  let seq_q = info[2];
  if (i >= info[0] * info[1] * seq_q) { return; }
  let dv = info[5];
  let bh = i / seq_q;
  let g_at = view_base(G_VIEW, bh / info[1], bh % info[1], i % seq_q);
  let step = info[G_VIEW + 4];
  var d = 0.0;
  for (var c = 0; c < dv; c++) {
    d = fma(out[i * dv + c], dout[g_at + c * step], d);
  }
  stats[i] = vec2<f32>(lse[i], d);
}
