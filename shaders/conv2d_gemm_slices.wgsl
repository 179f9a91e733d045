// conv2d_gemm_slices.wgsl: the implicit-GEMM convolution of conv2d_gemm.wgsl (forward, gathered
// input gradient, flipped stride-1 input gradient) with K split *inside* the workgroup.
//
// Each workgroup computes one BM x BN tile of C with SLICES slices of THREADS_PER_SLICE threads
// (a (BM / 4) x (BN / 4) grid, each thread a 4 x 4 block of C in four vec4 registers). Slice s
// walks K steps s, s + SLICES, s + 2 * SLICES, ... of BK terms, each on its own double-buffered
// A and B tiles in workgroup memory (one barrier per step for the whole workgroup). At the end
// every slice writes its accumulators into the (then idle) tile memory, and after one barrier
// the slices share the stores: slice s adds up the SLICES partial rows r = s, s + SLICES, ... of
// each thread's block and stores them through conv2d_gemm.wgsl's store_c4 (bias, epilogue). No
// second dispatch and no partial output in global memory: the K split only multiplies the
// threads working on a tile, for GEMMs of few tiles (SqueezeNet's 14x14 3x3 layers: 147-196
// tiles of 64x64 on a 132-multiprocessor GPU).
//
// Sizes: M, N, K as conv2d_gemm.wgsl's modes 0, 1 and 3 give them; one group per workgroup z
// (batch strides p.stride_a / p.stride_b / p.stride_c step from group to group). p.splits must
// be 1 (the slices are inside the workgroup).
// Bindings: 0 a, 1 b (read), 2 c (read_write), 3 p: Params (matmul_tiled.wgsl's uniform), then
// conv2d_gemm.wgsl's 4 (geometry), 5 (bias) and the epilogue's from 6.
// Dispatch: (ceil(N / BN), ceil(M / BM), groups) workgroups of SLICES * THREADS_PER_SLICE.
// Placeholders (webgpu/conv_slices.py): {{ BM }}, {{ BN }}, {{ BK }} (the tile and K step),
// {{ SLICES }} (2 or 4), {{ THREADS }} (SLICES * BM * BN / 16), {{ LOADS_A }}, {{ LOADS_B }}
// (vec4 loads per thread per K step), {{ product }} (the BK k's of one step written out:
// a vec4 of A rows and of B columns from workgroup memory, 4 multiply-adds), {{ io }}
// (conv2d_gemm.wgsl rendered: load_a4, load_b4, store_c4 and their bindings).

struct Params {
    m: u32,
    n: u32,
    k: u32,
    batch: u32,
    stride_a: u32,
    stride_b: u32,
    stride_c: u32,
    lda: u32,
    ldb: u32,
    off_a: u32,
    off_b: u32,
    splits: u32,
    k_split: u32,
    pad0: u32,
    pad1: u32,
}

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

const BM: u32 = {{ BM }}u;
const BN: u32 = {{ BN }}u;
const BK: u32 = {{ BK }}u;
const SLICES: u32 = {{ SLICES }}u;
const WG_X: u32 = BN / 4u;
const NT: u32 = (BM / 4u) * WG_X;  // threads per slice
const LOADS_A: u32 = {{ LOADS_A }}u;
const LOADS_B: u32 = {{ LOADS_B }}u;
const AQ: u32 = BM / 4u;  // vec4s per k-row of the transposed A tile
const BQ: u32 = BN / 4u;  // vec4s per k-row of the B tile
const A_LEN: u32 = SLICES * 2u * BK * AQ;
const B_LEN: u32 = SLICES * 2u * BK * BQ;

// Tile (slice s, buffer f) of A: k-rows (s * 2 + f) * BK + k of AQ vec4s (4 rows of A each);
// of B: the same k-rows of BQ vec4s (4 columns each).
var<workgroup> As: array<vec4<f32>, A_LEN>;
var<workgroup> Bs: array<vec4<f32>, B_LEN>;

{{ io }}

// The slices' partial sums share the tile memory once the K loop is done: vec4 q of slice s's
// accumulators (thread u's row r at q = (s * NT + u) * 4 + r) in As, then on in Bs.
fn partial_put(q: u32, v: vec4<f32>) {
    if (q < A_LEN) {
        As[q] = v;
    } else {
        Bs[q - A_LEN] = v;
    }
}

fn partial_get(q: u32) -> vec4<f32> {
    if (q < A_LEN) {
        return As[q];
    }
    return Bs[q - A_LEN];
}

// Thread u's loads of the step at k0 into registers: its LOADS_A vec4s of the A tile and
// LOADS_B of the B tile (staged by store_tiles).
fn load_step(base_a: u32, base_b: u32, m0: u32, n0: u32, k0: u32, u: u32,
             ra: ptr<function, array<vec4<f32>, LOADS_A>>,
             rb: ptr<function, array<vec4<f32>, LOADS_B>>) {
    for (var i = 0u; i < LOADS_A; i++) {
        let j = u + i * NT;
        (*ra)[i] = load_a4(base_a, m0 + j / (BK / 4u), k0 + (j % (BK / 4u)) * 4u);
    }
    for (var i = 0u; i < LOADS_B; i++) {
        let j = u + i * NT;
        (*rb)[i] = load_b4(base_b, k0 + j / BQ, n0 + (j % BQ) * 4u);
    }
}

@compute @workgroup_size({{ THREADS }}, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
    let s = t / NT;  // this thread's K slice
    let u = t % NT;  // and its place in the slice's grid
    let tx = u % WG_X;
    let ty = u / WG_X;
    let m0 = wid.y * BM;
    let n0 = wid.x * BN;
    let base_a = p.off_a + wid.z * p.stride_a;
    let base_b = p.off_b + wid.z * p.stride_b;
    let base_c = wid.z * p.stride_c;
    let steps = (p.k + BK - 1u) / BK;
    let rounds = (steps + SLICES - 1u) / SLICES;

    var acc0 = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    var acc2 = vec4<f32>(0.0);
    var acc3 = vec4<f32>(0.0);
    var ra: array<vec4<f32>, LOADS_A>;
    var rb: array<vec4<f32>, LOADS_B>;

    // Stage this slice's first step (step s) into its buffer 0.
    if (s < steps) {
        load_step(base_a, base_b, m0, n0, s * BK, u, &ra, &rb);
        store_tiles(s * 2u, &ra, &rb, u);
    }
    workgroupBarrier();

    var f = 0u;
    for (var rd = 0u; rd < rounds; rd++) {
        let st = s + rd * SLICES;
        let next = st + SLICES;
        if (next < steps) {  // the next step's loads, in flight during this step's products
            load_step(base_a, base_b, m0, n0, next * BK, u, &ra, &rb);
        }
        if (st < steps) {
            let ka = (s * 2u + f) * BK * AQ + ty;
            let kb = (s * 2u + f) * BK * BQ + tx;
            {{ product }}
        }
        if (next < steps) {
            store_tiles(s * 2u + 1u - f, &ra, &rb, u);
        }
        workgroupBarrier();
        f = 1u - f;
    }

    let q = (s * NT + u) * 4u;
    partial_put(q, acc0);
    partial_put(q + 1u, acc1);
    partial_put(q + 2u, acc2);
    partial_put(q + 3u, acc3);
    workgroupBarrier();
    for (var r = s; r < 4u; r += SLICES) {
        var v = vec4<f32>(0.0);
        for (var o = 0u; o < SLICES; o++) {
            v += partial_get((o * NT + u) * 4u + r);
        }
        store_c4(base_c, m0 + ty * 4u + r, n0 + tx * 4u, v);
    }
}

// The staged registers of one step into tile `sf` (slice * 2 + buffer): A transposed (4 k's of
// one row of A into lane row % 4 of 4 k-rows), B as loaded (4 columns of one k-row).
fn store_tiles(sf: u32, ra: ptr<function, array<vec4<f32>, LOADS_A>>,
               rb: ptr<function, array<vec4<f32>, LOADS_B>>, u: u32) {
    for (var i = 0u; i < LOADS_A; i++) {
        let j = u + i * NT;
        let row = j / (BK / 4u);
        let kk = (j % (BK / 4u)) * 4u;
        let v = (*ra)[i];
        let at = (sf * BK + kk) * AQ + row / 4u;
        As[at][row % 4u] = v.x;
        As[at + AQ][row % 4u] = v.y;
        As[at + 2u * AQ][row % 4u] = v.z;
        As[at + 3u * AQ][row % 4u] = v.w;
    }
    for (var i = 0u; i < LOADS_B; i++) {
        let j = u + i * NT;
        Bs[(sf * BK + j / BQ) * BQ + j % BQ] = (*rb)[i];
    }
}
