// gemv.wgsl: batched fp32 products of few rows, C[b] = A[b] @ B[b], without workgroup memory
// or barriers: the software adapter's kernel for a dense layer's batch of one or a few rows
// (webgpu/gemv.py says where it runs).
//
// For every batch index z < p.batch, the M x N product of A (M x K, element (r, k) at
// p.off_a + z * p.stride_a + r * ra + k * ka of `a`) and B (K x N, element (k, c) at
// p.off_b + z * p.stride_b + k * kb + c * cb of `b`) into C (M x N, dense, from z * p.stride_c
// of `c`). Row-major A has (ra, ka) = (p.lda, 1) and transposed A (1, p.lda); likewise B, with
// p.ldb; p.a_t and p.b_t say which (1: stored transposed), so one pipeline serves every layout.
// Each invocation computes 4 consecutive columns of one row, walking K four terms at a time; a
// column past N reads column N - 1 (no branch in the loop) and is not stored.
//
// Bindings (group 0), as the tiled matmul's (matmul_tiled.wgsl), so a fusion epilogue binds
// from 4 on in both:
//   0  a: array<f32>   read        A, all batches
//   1  b: array<f32>   read        B, all batches
//   2  c: array<f32>   read_write  C, all batches
//   3  p: Params       uniform     m, n, k, batch, stride_a, stride_b, stride_c, lda, ldb,
//                                   off_a, off_b, a_t, b_t (u32; matmul_config.params_bytes'
//                                   words, with the layout flags where split K's words are)
// Dispatch: (ceil(N / (4 * {{ threads }})), M, batch) workgroups of {{ threads }} invocations.
//
// Placeholders: {{ threads }} (workgroup size), {{ epilogue }} (module-scope WGSL defining
// `pyrite_out(v: f32, i: i32) -> f32`, the fusion epilogue, i the element's index in c),
// {{ store }} (the stored value of element i: `v` or `pyrite_out(v, i32(i))`).

#include "gemv_io.wgsl"

{{ epilogue }}

@compute @workgroup_size({{ threads }}, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let col = gid.x * 4u;
    if (col >= p.n) {
        return;
    }
    let row = gid.y;
    let z = gid.z;
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
    let last = p.n - 1u;
    let ib = p.off_b + z * p.stride_b;
    let c0 = ib + col * cb;
    let c1 = ib + min(col + 1u, last) * cb;
    let c2 = ib + min(col + 2u, last) * cb;
    let c3 = ib + min(col + 3u, last) * cb;
    var acc = vec4<f32>(0.0);
    var t = 0u;
    loop {
        if (t + 4u > p.k) {
            break;
        }
        let a4 = vec4<f32>(a[ia + t * ka], a[ia + (t + 1u) * ka], a[ia + (t + 2u) * ka],
                           a[ia + (t + 3u) * ka]);
        let o0 = t * kb;
        let o1 = o0 + kb;
        let o2 = o1 + kb;
        let o3 = o2 + kb;
        acc += vec4<f32>(dot(a4, vec4<f32>(b[c0 + o0], b[c0 + o1], b[c0 + o2], b[c0 + o3])),
                         dot(a4, vec4<f32>(b[c1 + o0], b[c1 + o1], b[c1 + o2], b[c1 + o3])),
                         dot(a4, vec4<f32>(b[c2 + o0], b[c2 + o1], b[c2 + o2], b[c2 + o3])),
                         dot(a4, vec4<f32>(b[c3 + o0], b[c3 + o1], b[c3 + o2], b[c3 + o3])));
        t += 4u;
    }
    loop {
        if (t >= p.k) {
            break;
        }
        let o = t * kb;
        acc += a[ia + t * ka] * vec4<f32>(b[c0 + o], b[c1 + o], b[c2 + o], b[c3 + o]);
        t += 1u;
    }
    let out = z * p.stride_c + row * p.n + col;
    for (var e = 0u; e < 4u; e++) {
        if (col + e < p.n) {
            let i = out + e;
            let v = acc[e];
            c[i] = {{ store }};
        }
    }
}
