// matmul_narrow.wgsl: fp32 products with few output columns and a long K, C[b] = A[b] @ B[b],
// one workgroup per output row: a classifier's last layer (MNIST's 256 x 512 @ 512 x 10) in
// one dispatch, where the tiled kernel gets a handful of tiles and splits K into a second
// (webgpu/matmul_narrow.py says where it runs).
//
// Operands and layouts as gemv.wgsl's (the same 16-word uniform): for every batch index z,
// A (M x K) at p.off_a + z * p.stride_a + r * ra + k * ka of `a`, B (K x N) at
// p.off_b + z * p.stride_b + k * kb + c * cb of `b`, C dense from z * p.stride_c of `c`;
// p.a_t and p.b_t say which operand is stored transposed.
//
// Workgroup (row, z): {{ lanes }} invocations walk K with a stride of {{ lanes }}, each keeping
// {{ cols }} sums (N = {{ cols }}, fixed per pipeline), then halve the sums in workgroup memory
// ({{ lanes }} x {{ cols }} floats) until lane j < N holds column j's, which it stores.
//
// Bindings (group 0), as gemv.wgsl's, so a fusion epilogue binds from 4 on:
//   0  a: array<f32>   read        A, all batches
//   1  b: array<f32>   read        B, all batches
//   2  c: array<f32>   read_write  C, all batches
//   3  p: Params       uniform     gemv.params_bytes' words
// Dispatch: (M, batch, 1) workgroups of {{ lanes }} invocations.
//
// Placeholders: {{ lanes }}, {{ cols }}, {{ epilogue }} (module-scope WGSL defining
// `pyrite_out(v: f32, i: i32) -> f32`, i the element's index in c), {{ store }} (the stored
// value of element i: `v` or `pyrite_out(v, i32(i))`).

#include "gemv_io.wgsl"

{{ epilogue }}

const LANES: u32 = {{ lanes }}u;
const COLS: u32 = {{ cols }}u;

var<workgroup> sums: array<f32, {{ lanes }} * {{ cols }}>;

@compute @workgroup_size({{ lanes }}, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
    let row = wid.x;
    let z = wid.y;
    var ra = p.lda;
    var ka = 1u;
    if (p.a_t != 0u) {
        ra = 1u;
        ka = p.lda;
    }
    var kb = p.ldb;
    var cb = 1u;
    if (p.b_t != 0u) {
        kb = 1u;
        cb = p.ldb;
    }
    let ia = p.off_a + z * p.stride_a + row * ra;
    let ib = p.off_b + z * p.stride_b;
    var acc: array<f32, {{ cols }}>;
    for (var j = 0u; j < COLS; j++) {
        acc[j] = 0.0;
    }
    for (var t = lane; t < p.k; t += LANES) {
        let av = a[ia + t * ka];
        let bt = ib + t * kb;
        for (var j = 0u; j < COLS; j++) {
            acc[j] += av * b[bt + j * cb];
        }
    }
    for (var j = 0u; j < COLS; j++) {
        sums[j * LANES + lane] = acc[j];
    }
    workgroupBarrier();
    for (var half = LANES / 2u; half > 0u; half /= 2u) {
        if (lane < half) {
            for (var j = 0u; j < COLS; j++) {
                sums[j * LANES + lane] += sums[j * LANES + lane + half];
            }
        }
        workgroupBarrier();
    }
    if (lane < COLS) {
        let i = z * p.stride_c + row * p.n + lane;
        let v = sums[lane * LANES];
        c[i] = {{ store }};
    }
}
