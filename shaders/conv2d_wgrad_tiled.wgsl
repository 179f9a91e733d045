// conv2d_wgrad_tiled.wgsl: conv2d's weight gradient as a tiled GEMM of its own,
// dW[co, k] = sum over j of dy[n, co, oy, ox] * x[n, ci, oy*sh - pt + ky*dh, ox*sw - pl + kx*dw]
// per group, k = (ci, ky, kx) (K = cg*KH*KW columns), j = (n, oy, ox) the batch's output pixels
// (P = N*OH*OW terms; padding reads zero). Written for the weight gradient's shape: a small
// M x K output (cog x cg*KH*KW) over a long reduction, which the matmul template (conv2d_gemm.wgsl)
// runs with an im2col gather that divides its indices anew at every load.
//
// A workgroup owns a BM x BN tile of one group's dW and one slice of the pixels (slice s of L
// pixels, [s*L, min(P, (s+1)*L))), in steps of BK = 16 pixels. Each invocation loads for one
// pixel lane (its index mod 16) and walks it 16 pixels per step with carries (ox, oy, n), so
// after the start no load divides; the (ci, ky, kx) of its B columns and the channels of its A
// rows are fixed for the whole loop. A step's loads are issued before the previous step's
// products (registers ra, rb), then stored to workgroup memory; each invocation adds a 4 x 4
// block of products per pixel. Summation order: within a slice, pixels in order, each added
// to the invocation's running sum; the slices' partial dW (at s*M*K + row*K + col of group
// g's batch index g*slices + s) are added by matmul_split_sum.wgsl in its documented order.
// With one slice the tile is dW itself.
//
// Bindings: 0 cm: array<i32> = [H, W, OH, OW, KH, KW, sh, sw, pt, pl, dh, dw, C_in, C_out,
//             cg, cog, K (cg*KH*KW), P (N*OH*OW), L (slice length, a multiple of 16),
//             slices], 1 x: array<f32> (N, C_in, H, W) dense, 2 dy: array<f32>
//             (N, C_out, OH, OW) dense, 3 out: array<f32> (groups * slices * cog * K).
// Grid: (ceil(K / BN), ceil(cog / BM), groups * slices).
// Placeholders: {{ wg_x }}, {{ wg_y }}: invocations along K and along M (BN = 4 wg_x,
//   BM = 4 wg_y; wg_x * wg_y a multiple of 16, wg_x and wg_y each 4, 8 or 16).
// Index safety (natively compiled without naga's bounds checks, as conv2d_gemm.wgsl): every
//   storage read is inside an `if` on the pixel's slice and on the row, column, padding and
//   image extent; every store on the row and column; workgroup and private arrays are indexed
//   by invocation ids, loop counters and constants only.

@group(0) @binding(0) var<storage, read> cm: array<i32>;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> dy: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

const WG_X: u32 = {{ wg_x }}u;
const WG_Y: u32 = {{ wg_y }}u;
const THREADS: u32 = WG_X * WG_Y;
const BM: u32 = 4u * WG_Y;
const BN: u32 = 4u * WG_X;
const BK: u32 = 16u;
const STEP_ROWS: u32 = THREADS / BK;  // rows (or columns) between one invocation's loads
const LOADS_A: u32 = BK * BM / THREADS;
const LOADS_B: u32 = BK * BN / THREADS;
const SA: u32 = BM / 4u + 1u;  // vec4s per pixel of the tiles in workgroup memory (padded)
const SB: u32 = BN / 4u + 1u;
const OUTSIDE: i32 = -1073741824;  // a column past K: its rows never fall inside the image

var<workgroup> as_: array<vec4<f32>, BK * SA>;
var<workgroup> bs: array<vec4<f32>, BK * SB>;

@compute @workgroup_size({{ wg_x }} * {{ wg_y }})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let h = cm[0]; let w = cm[1]; let oh = cm[2]; let ow = cm[3];
    let kw = cm[5];
    let taps = cm[4] * kw;
    let sh = cm[6]; let sw = cm[7];
    let c_in = cm[12]; let c_out = cm[13]; let cg = cm[14]; let cog = cm[15];
    let kdim = cm[16]; let total = cm[17]; let length = cm[18]; let slices = u32(cm[19]);
    let g = i32(wid.z / slices);
    let s = i32(wid.z % slices);
    let row0 = i32(wid.y * BM);
    let col0 = i32(wid.x * BN);
    let lane = i32(t % BK);
    let first = i32(t / BK);
    let plane = oh * ow;

    // A rows (dy channels) and B columns (x channel offset, tap rows and columns), fixed
    var a_off: array<i32, LOADS_A>;
    var a_ok: array<bool, LOADS_A>;
    for (var e = 0u; e < LOADS_A; e++) {
        let row = row0 + first + i32(e * STEP_ROWS);
        a_ok[e] = row < cog;
        a_off[e] = (g * cog + row) * plane;
    }
    var b_off: array<i32, LOADS_B>;
    var b_dy: array<i32, LOADS_B>;
    var b_dx: array<i32, LOADS_B>;
    for (var e = 0u; e < LOADS_B; e++) {
        let col = col0 + first + i32(e * STEP_ROWS);
        let ci = col / taps;
        let tap = col - ci * taps;
        let ky = tap / kw;
        let kx = tap - ky * kw;
        b_off[e] = (g * cg + ci) * h * w;
        b_dy[e] = ky * cm[10] - cm[8];
        b_dx[e] = kx * cm[11] - cm[9];
        if (col >= kdim) {
            b_dy[e] = OUTSIDE;
        }
    }

    // this invocation's pixel lane, walked 16 pixels a step
    let start = s * length;
    let end = min(total, start + length);
    var j = start + lane;
    var n = j / plane;
    let pix = j - n * plane;
    var oy = pix / ow;
    var ox = pix - oy * ow;
    var ra: array<f32, LOADS_A>;
    var rb: array<f32, LOADS_B>;
    let steps = (end - start + i32(BK) - 1) / i32(BK);

    var acc: array<vec4<f32>, 4>;
    for (var i = 0; i < 4; i++) {
        acc[i] = vec4<f32>(0.0);
    }
    let tx = t % WG_X;
    let ty = t / WG_X;

    for (var step = -1; step < steps; step++) {
        if (step >= 0) {
            workgroupBarrier();
            for (var e = 0u; e < LOADS_A; e++) {
                let r = u32(first) + e * STEP_ROWS;
                as_[u32(lane) * SA + r / 4u][r % 4u] = ra[e];
            }
            for (var e = 0u; e < LOADS_B; e++) {
                let c = u32(first) + e * STEP_ROWS;
                bs[u32(lane) * SB + c / 4u][c % 4u] = rb[e];
            }
            workgroupBarrier();
        }
        if (step + 1 < steps) {  // the next step's loads, in flight during this step's products
            let inside = j < end;
            let dy_at = n * c_out * plane + oy * ow + ox;
            let x_at = n * c_in * h * w;
            let iy0 = oy * sh;
            let ix0 = ox * sw;
            for (var e = 0u; e < LOADS_A; e++) {
                var v = 0.0;
                if (inside && a_ok[e]) {
                    v = dy[dy_at + a_off[e]];
                }
                ra[e] = v;
            }
            for (var e = 0u; e < LOADS_B; e++) {
                let iy = iy0 + b_dy[e];
                let ix = ix0 + b_dx[e];
                var v = 0.0;
                if (inside && iy >= 0 && iy < h && ix >= 0 && ix < w) {
                    v = x[x_at + b_off[e] + iy * w + ix];
                }
                rb[e] = v;
            }
            j += i32(BK);
            ox += i32(BK);
            while (ox >= ow) {
                ox -= ow;
                oy += 1;
                if (oy == oh) {
                    oy = 0;
                    n += 1;
                }
            }
        }
        if (step >= 0) {
            for (var kk = 0u; kk < BK; kk++) {
                let av = as_[kk * SA + ty];
                let bv = bs[kk * SB + tx];
                acc[0] += av.x * bv;
                acc[1] += av.y * bv;
                acc[2] += av.z * bv;
                acc[3] += av.w * bv;
            }
        }
    }

    let base = i32(wid.z) * cog * kdim;
    for (var i = 0; i < 4; i++) {
        let row = row0 + i32(ty) * 4 + i;
        if (row < cog) {
            for (var c = 0; c < 4; c++) {
                let col = col0 + i32(tx) * 4 + c;
                if (col < kdim) {
                    out[base + row * kdim + col] = acc[i][c];
                }
            }
        }
    }
}
