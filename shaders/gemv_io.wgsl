// gemv_io.wgsl: the Params uniform and bindings 0-3 of the barrier-free row kernels, gemv.wgsl
// and matmul_narrow.wgsl (the words of gemv.params_bytes; both bind as the tiled matmul does,
// so a fusion epilogue binds from 4 on). Templates take it with `#include "gemv_io.wgsl"`.
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
    a_t: u32,
    b_t: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

