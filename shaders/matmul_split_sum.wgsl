// matmul_split_sum.wgsl: adds the partial products of a split-K matmul (or implicit GEMM).
//
// The tiled matmul with p.splits > 1 writes, for product b < batch and slice s < splits of K,
// the partial M x N product at parts[(b * splits + s) * mn ..]. This kernel writes
// out[out_off + b * mn + i] = pyrite_out(the sum over s of parts[(b * splits + s) * mn + i],
// b * mn + i), for every b and i < mn. Any number of slices: one buffer holds them all.
//
// A workgroup of 256 invocations sums 256 / lanes elements, `lanes` invocations per element
// (lanes a power of two, 1 to 256): lane l adds slices l, l + lanes, l + 2 * lanes, ... in
// that order (neighbouring invocations read neighbouring elements of one slice), then the
// lanes' sums are added pairwise in workgroup memory (lane l + h into lane l for h = lanes/2,
// lanes/4, ..., 1). With lanes = 1 that is the sum in slice order. Many slices over few
// elements (a weight gradient) spread over lanes instead of one invocation reading every
// slice in turn.
//
// Bindings (group 0):
//   0  parts: array<f32>   read        the partial products
//   1  out:   array<f32>   read_write  the sums
//   2  q:     Sum          uniform     total (= batch * mn), mn, splits, out_off, row, lanes
// Placeholders: {{ epilogue }} (module-scope WGSL defining `pyrite_out(v: f32, i: i32) -> f32`:
//   `return v;`, or fusion's epilogue of the product with its bindings from 3 on).
// Dispatch: (row, ceil(total * lanes / (256 * row)), 1) workgroups of 256 threads; workgroup
// w = wid.x + wid.y * row sums elements w * (256 / lanes) ...

struct Sum {
    total: u32,
    mn: u32,
    splits: u32,
    out_off: u32,
    row: u32,
    lanes: u32,
    pad1: u32,
    pad2: u32,
}

{{ epilogue }}
@group(0) @binding(0) var<storage, read> parts: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> q: Sum;

var<workgroup> lane_sums: array<f32, 256>;

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
    let lanes = q.lanes;
    let width = 256u / lanes;  // elements per workgroup
    let lane = t / width;
    let g = (wid.x + wid.y * q.row) * width + t % width;
    var acc = 0.0;
    if (g < q.total) {
        let b = g / q.mn;
        let i = g - b * q.mn;
        var base = (b * q.splits + lane) * q.mn + i;
        let step = lanes * q.mn;
        for (var s = lane; s < q.splits; s += lanes) {
            acc += parts[base];
            base += step;
        }
    }
    if (lanes > 1u) {  // uniform: every invocation takes the same branch
        lane_sums[t] = acc;
        for (var h = lanes / 2u; h > 0u; h /= 2u) {
            workgroupBarrier();
            if (lane < h) {
                lane_sums[t] += lane_sums[t + h * width];
            }
        }
        workgroupBarrier();
        acc = lane_sums[t];
    }
    if (lane == 0u && g < q.total) {
        out[q.out_off + g] = pyrite_out(acc, i32(g));
    }
}
