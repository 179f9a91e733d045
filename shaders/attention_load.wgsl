// attention_load.wgsl: element i of q, k, v or the output gradient, for the attention kernels
// that stage rows of any of them through one function (attention_reads.wgsl's row kernels,
// attention_tiles.wgsl's register-blocked ones). The including kernel declares q, k and v and
// `fn read_g(i: i32) -> f32` (the output gradient's element i; 0 in the forwards, which have
// none).
// No placeholders.

// Element i of q, k, v or dout (`which` 0..3).
fn load(which: u32, i: i32) -> f32 {
  if (which == 0u) {
    return q[i];
  }
  if (which == 1u) {
    return k[i];
  }
  if (which == 2u) {
    return v[i];
  }
  return read_g(i);
}
