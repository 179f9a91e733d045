// attention_reads.wgsl: strided reads of q, k and v rows as vec4s, for the attention kernels
// that declare the storage arrays q, k and v (attention_forward.wgsl, attention_backward.wgsl).
// No placeholders.

// Elements 4c .. 4c + 3 of a row at `base` with element stride `step`; 0 past `n`.
fn read_q(base: i32, step: i32, c: u32, n: i32) -> vec4<f32> {
  let d = i32(c) * 4;
  return vec4<f32>(select(0.0, q[base + min(d, n - 1) * step], d < n),
                   select(0.0, q[base + min(d + 1, n - 1) * step], d + 1 < n),
                   select(0.0, q[base + min(d + 2, n - 1) * step], d + 2 < n),
                   select(0.0, q[base + min(d + 3, n - 1) * step], d + 3 < n));
}

fn read_k(base: i32, step: i32, c: u32, n: i32) -> vec4<f32> {
  let d = i32(c) * 4;
  return vec4<f32>(select(0.0, k[base + min(d, n - 1) * step], d < n),
                   select(0.0, k[base + min(d + 1, n - 1) * step], d + 1 < n),
                   select(0.0, k[base + min(d + 2, n - 1) * step], d + 2 < n),
                   select(0.0, k[base + min(d + 3, n - 1) * step], d + 3 < n));
}

fn read_v(base: i32, step: i32, c: u32, n: i32) -> vec4<f32> {
  let d = i32(c) * 4;
  return vec4<f32>(select(0.0, v[base + min(d, n - 1) * step], d < n),
                   select(0.0, v[base + min(d + 1, n - 1) * step], d + 1 < n),
                   select(0.0, v[base + min(d + 2, n - 1) * step], d + 2 < n),
                   select(0.0, v[base + min(d + 3, n - 1) * step], d + 3 < n));
}
