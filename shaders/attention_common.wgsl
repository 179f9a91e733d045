// attention_common.wgsl: what the attention kernels share (attention_forward.wgsl,
// attention_backward.wgsl, attention_delta.wgsl): the metadata layout, the block a workgroup
// owns and where a row starts in a strided view. Kernels that include it declare `info`
// (binding 0).
// Metadata (i32 words): 0 batch, 1 heads, 2 seq_q, 3 seq_k, 4 d_k, 5 d_v, 6 scale (f32 bits),
// 7 flags (bit 0 quiet softmax, bit 1 causal: query i sees keys j <= i + seq_k - seq_q); then a view block of five words for each of q (8), k (13), v (18), the mask
// (23) and the output gradient (28, backward only): [offset, batch stride, head stride,
// sequence stride, last-dim stride] (the mask's sequence stride is its query stride and its
// last-dim stride its key stride; a broadcast dim has stride 0).
// No placeholders.
const Q_VIEW: i32 = 8;
const K_VIEW: i32 = 13;
const V_VIEW: i32 = 18;
const M_VIEW: i32 = 23;
const G_VIEW: i32 = 28;

// The (batch, head, first position) of workgroup `g` when each (batch, head) is cut into blocks
// of `rows` positions of a sequence of `seq`; batch -1 past the last block.
fn attention_block(g: i32, rows: u32, seq: i32) -> vec3<i32> {
  let blocks = (seq + i32(rows) - 1) / i32(rows);
  if (g >= blocks * info[0] * info[1]) {
    return vec3<i32>(-1, 0, 0);
  }
  let bh = g / blocks;
  return vec3<i32>(bh / info[1], bh % info[1], (g % blocks) * i32(rows));
}

// Whether the causal flag is set (flag bit 1 of word 7).
fn attention_causal() -> bool {
  return (info[7] & 2) != 0;
}

// The causal frontier's offset, seq_k - seq_q: query i sees keys up to i + offset; a huge
// offset (every key) without the causal flag.
fn causal_offset() -> i32 {
  return select(0x3fffffff, info[3] - info[2], attention_causal());
}

// Where row `s` of (batch b, head h) starts in the view whose block is at info[view].
fn view_base(view: i32, b: i32, h: i32, s: i32) -> i32 {
  return info[view] + b * info[view + 1] + h * info[view + 2] + s * info[view + 3];
}
