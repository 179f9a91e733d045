// matmul_tiled.wgsl: batched fp32 matrix product C[b] = A[b] @ B[b], row-major.
//
// Computes, for every batch index z < p.batch, the M x N product of A (M x K, starting at element
// p.off_a + z * p.stride_a of `a`) and B (K x N, starting at p.off_b + z * p.stride_b of `b`) into
// C (M x N, dense, starting at z * p.stride_c of `c`). Batch dims are flattened by the caller; a
// batch stride of 0 broadcasts that operand. A and B are each stored row-major or transposed
// (the layout IO_FNS and the PREFETCH blocks are rendered for), storage rows p.lda / p.ldb
// elements apart, so transposed and sliced views are read in place. M, N and K are arbitrary:
// loads outside the matrices read zeros and stores outside C are skipped, so ragged edges and K
// not a multiple of BK are handled (the `_in` and `_cl` forms of IO_FNS, for shapes that are
// multiples of the tile or of BK only, compare less: webgpu/matmul_options.py). Split K: with p.splits > 1, batch index z covers product
// z / p.splits and the p.k_split-long slice z % p.splits of K (a multiple of BK), writing its
// partial sum to C at z * p.stride_c; the caller adds the partials.
//
// Each workgroup computes one BM x BN tile of C. The K dimension is walked in steps of BK: the
// A tile (stored transposed, k-major, so a thread reads 4 rows with one vec4 load) and the B tile
// are staged in workgroup memory, double-buffered, with the next step's global loads held in
// registers while the current step is multiplied (one barrier per step). Each thread owns a
// TM x TN block of C held in TM * TN / 4 vec4 registers (named variables, not an array: arrays
// of accumulators get spilled). A thread's rows are 4-row groups strided by WG_Y * 4 and its
// columns 4-column groups strided by WG_X * 4, so its workgroup-memory reads are vec4 loads that
// neighbouring threads share without bank conflicts.
//
// Bindings (group 0):
//   0  a: array<ELEM>        read        A, all batches
//   1  b: array<ELEM>        read        B, all batches
//   2  c: array<ELEM>        read_write  C, all batches (batch stride p.stride_c)
//   3  p: Params             uniform     m, n, k, batch, stride_a, stride_b, stride_c, lda, ldb,
//                                         off_a, off_b (elements), splits, k_split
// Dispatch: (ceil(N / BN), ceil(M / BM), batch * splits) workgroups of WG_X * WG_Y threads, one
// dimension (naga allows subgroup builtins only there), thread t at row t / WG_X, column t % WG_X
// of the WG_Y x WG_X grid of threads (THREAD_MAP may place them otherwise).
//
// Placeholders (filled by pyrite.webgpu.matmul_config.render):
//   {{ BM }}, {{ BN }}, {{ BK }}      tile of C per workgroup, K step (u32 literals)
//   {{ TM }}, {{ TN }}                block of C per thread (multiples of 4)
//   {{ WG_X }}, {{ WG_Y }}            grid of threads, BN / TN and BM / TM
//   {{ THREADS }}                     workgroup size, WG_X * WG_Y
//   {{ LOADS_A }}, {{ LOADS_B }}      vec4 loads per thread per K step for the A and B tiles
//   {{ ELEM }}                        storage element: vec4<f32> when K, N and all offsets are
//                                     multiples of 4 (aligned variant), else f32
//   {{ IO_FNS }}                      load_a4 / load_b4 / store_c4 for that element type
//   {{ PREFETCH_DECL }}, {{ PREFETCH_LOAD }}, {{ PREFETCH_STORE }}
//                                     register staging of the next K step's tiles
//   {{ ACC_DECL }}, {{ ACC_STORE }}    the TM x TN accumulator registers: declare, write back to C
//   {{ K_LOOP }}                      the walk over K steps (below), each multiplying the staged
//                                     tiles in an inner loop over k that writes out `unroll` k's
//                                     of outer-product update per iteration (1: leave unrolling
//                                     to the driver; BK: fully unrolled)
//
// The K loop: at each step, the next step's tiles are loaded into registers (PREFETCH_LOAD),
// the current ones in workgroup buffer `buf` are multiplied, the registers are stored into
// the other buffer (PREFETCH_STORE), then one barrier. The ping-pong form
// (TileConfig.pingpong) writes two steps out per iteration, reading buffer 0 then 1, so every
// workgroup-memory index is the thread's row or column plus a constant (no buffer variable).
// The constant-row form (TileConfig.const_rows, with ping-pong) declares the tiles as nested
// arrays (TILES) so that those constants are array indices: naga's Vulkan backend clamps every
// run-time index into workgroup memory, and a flat index `row + constant` costs an add and a
// clamp per read, where `[k][i][ty]` costs one clamp of ty for the whole loop.
//   {{ TILES }}                       the workgroup tiles As and Bs, 2 * AS_BUF and 2 * BS_BUF
//                                     vec4s: flat arrays, or (TileConfig.const_rows) nested
//                                     [buffer][k-row][vec4 group][thread row/column] arrays in
//                                     the same memory order, whose inner loop, written out for
//                                     the whole K step, indexes by constants except ty / tx
//                                     (naga's Vulkan output clamps each run-time index)
//   {{ SG_BUILTIN }}                  the subgroup variant's extra entry-point argument (the
//                                     lane's subgroup_invocation_id `sid`), else empty
//   {{ THREAD_MAP }}                  sets the thread's grid column `tx` and row `ty` from t
//                                     (webgpu/matmul_options.py)
//   {{ SG_SETUP }}                    the subgroup variant's per-thread offsets into the A tile
//                                     (computed once), else empty
//
// Subgroup variant (matmul_config.TileConfig.subgroup; needs the adapter's `subgroups`
// feature): the 4 lanes of a quad (4 consecutive subgroup lanes, 4 consecutive threads of one
// row of the workgroup, so the same TM rows of C) need the same A values at every k. Instead of
// each reading all of them from workgroup memory, each lane reads a quarter (unroll * TM / 16
// vec4s per inner-loop iteration) and the quad exchanges them with subgroupShuffle. (No
// `enable subgroups;`: naga, which compiles this natively, allows the builtins once the device
// has the feature and rejects the directive; the page does not request the feature.)

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

@group(0) @binding(0) var<storage, read> a: array<{{ ELEM }}>;
@group(0) @binding(1) var<storage, read> b: array<{{ ELEM }}>;
@group(0) @binding(2) var<storage, read_write> c: array<{{ ELEM }}>;
@group(0) @binding(3) var<uniform> p: Params;

const BM: u32 = {{ BM }}u;
const BN: u32 = {{ BN }}u;
const BK: u32 = {{ BK }}u;
const TM: u32 = {{ TM }}u;
const TN: u32 = {{ TN }}u;
const WG_X: u32 = {{ WG_X }}u;
const WG_Y: u32 = {{ WG_Y }}u;
const NT: u32 = WG_X * WG_Y;
const LOADS_A: u32 = {{ LOADS_A }}u;
const LOADS_B: u32 = {{ LOADS_B }}u;

// Transposed A tile: k-major rows of BM floats (no padding, so 128x128x8 fits WebGPU's default
// 16 KiB; the transposing stores have a 2-way bank conflict, once per K step).
// B tile: k-major rows of BN floats. Two buffers each.
const AS_ROW: u32 = BM / 4u;
const BS_ROW: u32 = BN / 4u;
const AS_BUF: u32 = BK * AS_ROW;
const BS_BUF: u32 = BK * BS_ROW;
{{ TILES }}

{{ IO_FNS }}

@compute @workgroup_size({{ THREADS }}, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(local_invocation_index) t: u32{{ SG_BUILTIN }}) {
    {{ THREAD_MAP }}
    let m0 = wid.y * BM;
    let n0 = wid.x * BN;
    let zb = wid.z / p.splits;
    let k_begin = (wid.z % p.splits) * p.k_split;
    let base_a = p.off_a + zb * p.stride_a;
    let base_b = p.off_b + zb * p.stride_b;
    let base_c = wid.z * p.stride_c;
    let k_end = max(k_begin, min(p.k, k_begin + p.k_split));
    let steps = (k_end - k_begin + BK - 1u) / BK;

    {{ ACC_DECL }}
    {{ PREFETCH_DECL }}
    {{ SG_SETUP }}

    // Stage K step 0 into buffer 0.
    var k0 = k_begin;
    {{ PREFETCH_LOAD }}
    var buf = 0u;
    {{ PREFETCH_STORE }}
    workgroupBarrier();

    {{ K_LOOP }}

    {{ ACC_STORE }}
}
