// pack_int.wgsl: packs rows of small signed integers (i32 storage) into u32 words, 32 / BITS
// values a word along the row, lowest bits first; the last word of a row is padded with 0.
// The source is a strided 2-D view, so a (k, n) weight packs along k by passing its transpose.
// Bindings: 0 info: array<i32> = [rows, cols, words_per_row, offset, row_stride, col_stride],
//           1 src: array<i32>, 2 dst: array<u32> (rows * words_per_row).
// Placeholders: {{ bits }} (4 or 8).
@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read> src: array<i32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;

const BITS: u32 = {{ bits }}u;
const PER_WORD: i32 = 32 / {{ bits }};

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>) {
  let index = i32(gid.x + gid.y * groups.x * 64u);
  let rows = info[0];
  let cols = info[1];
  let words = info[2];
  if (index >= rows * words) {
    return;
  }
  let row = index / words;
  let first = (index % words) * PER_WORD;
  let mask = (1u << BITS) - 1u;
  var word = 0u;
  for (var j = 0; j < PER_WORD; j++) {
    let col = first + j;
    if (col < cols) {
      let v = src[info[3] + row * info[4] + col * info[5]];
      word = word | ((bitcast<u32>(v) & mask) << (u32(j) * BITS));
    }
  }
  dst[index] = word;
}
