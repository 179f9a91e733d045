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
//   BM = 4 wg_y; wg_x and wg_y each 4, 8 or 16, wg_x * wg_y at least 64); the statements
//   `webgpu/conv_wgrad.py` generates, unrolled (no private array is indexed at run time):
//   {{ setup }} (each A row quad's channel offsets and each B column's x offset and tap
//   reach), {{ declare }} (the load registers), {{ loads }} (a step's loads into them),
//   {{ stores }} (the registers into workgroup memory, a vec4 per quad), {{ products }} (the
//   step's 16 pixels of 4 x 4 products), {{ output }} (the 16 sums stored).
// Each invocation loads LOADS_A / 4 quads of 4 A rows and LOADS_B / 4 quads of 4 B columns:
//   quad q = t / 16 + i * THREADS / 16 holds rows (columns) 4q .. 4q + 3 of the tile.
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
const SA: u32 = BM / 4u + 1u;  // vec4s per pixel of the tiles in workgroup memory (padded)
const SB: u32 = BN / 4u + 1u;
const OUTSIDE: i32 = -1073741824;  // a column past K: its rows never fall inside the image

var<workgroup> as_: array<vec4<f32>, BK * SA>;
var<workgroup> bs: array<vec4<f32>, BK * SB>;

@compute @workgroup_size(THREADS)
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
    let quad = i32(t / BK);
    let plane = oh * ow;
    let hw = h * w;

{{ setup }}

    // this invocation's pixel lane, walked 16 pixels a step
    let start = s * length;
    let end = min(total, start + length);
    var j = start + lane;
    var n = j / plane;
    let pix = j - n * plane;
    var oy = pix / ow;
    var ox = pix - oy * ow;
    let steps = (end - start + i32(BK) - 1) / i32(BK);
{{ declare }}
    var acc0 = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    var acc2 = vec4<f32>(0.0);
    var acc3 = vec4<f32>(0.0);
    let tx = t % WG_X;
    let ty = t / WG_X;
    let a_at = u32(lane) * SA + u32(quad);
    let b_at = u32(lane) * SB + u32(quad);

    for (var step = -1; step < steps; step++) {
        if (step >= 0) {
            workgroupBarrier();
{{ stores }}
            workgroupBarrier();
        }
        if (step + 1 < steps) {  // the next step's loads, in flight during this step's products
            let inside = j < end;
            let dy_at = n * c_out * plane + oy * ow + ox;
            let x_at = n * c_in * hw;
            let iy0 = oy * sh;
            let ix0 = ox * sw;
{{ loads }}
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
{{ products }}
        }
    }

    let base = i32(wid.z) * cog * kdim;
    let r0 = row0 + i32(ty) * 4;
    let c0 = col0 + i32(tx) * 4;
{{ output }}
}
