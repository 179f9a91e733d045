// matmul_split_sum.wgsl: adds the partial products of a split-K matmul (or implicit GEMM).
//
// The tiled matmul with p.splits > 1 writes, for product b < batch and slice s < splits of K,
// the partial M x N product at parts[(b * splits + s) * mn ..]. This kernel writes
// out[out_off + b * mn + i] = pyrite_out(the sum over s of parts[(b * splits + s) * mn + i], in
// slice order, b * mn + i), for every b and i < mn. Any number of slices: one buffer holds them
// all.
//
// Bindings (group 0):
//   0  parts: array<f32>   read        the partial products
//   1  out:   array<f32>   read_write  the sums
//   2  q:     Sum          uniform     total (= batch * mn), mn, splits, out_off, row
// Placeholders: {{ epilogue }} (module-scope WGSL defining `pyrite_out(v: f32, i: i32) -> f32`:
//   `return v;`, or fusion's epilogue of the product with its bindings from 3 on).
// Dispatch: (row, ceil(total / (256 * row)), 1) workgroups of 256 threads; element
// g = gid.x + gid.y * row * 256.

struct Sum {
    total: u32,
    mn: u32,
    splits: u32,
    out_off: u32,
    row: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

{{ epilogue }}
@group(0) @binding(0) var<storage, read> parts: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> q: Sum;

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let g = gid.x + gid.y * q.row * 256u;
    if (g >= q.total) {
        return;
    }
    let b = g / q.mn;
    let i = g - b * q.mn;
    var base = b * q.splits * q.mn + i;
    var acc = 0.0;
    for (var s = 0u; s < q.splits; s++) {
        acc += parts[base];
        base += q.mn;
    }
    out[q.out_off + g] = pyrite_out(acc, i32(g));
}
