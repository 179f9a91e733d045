// conv2d_gemm.wgsl: the load and store functions that turn `matmul_tiled.wgsl` into an implicit
// GEMM convolution (NCHW, f32, any stride, padding, dilation and groups; no im2col buffer).
// Pasted in place of the plain matmul's IO functions by `webgpu/conv_gemm.py`; one group per
// batch index z of the matmul (its batch strides step from group to group).
//
// forward (MODE 0): C[co, j] = sum over k = (ci, ky, kx) of A[co, k] * B[k, j] where
//   A is the weight (C_out, cg, KH, KW) read densely (row co of the group, K = cg*KH*KW),
//   B[k, j] = x[n, ci, oy*sh - pt + ky*dh, ox*sw - pl + kx*dw] (0 in the padding),
//   j = (n, oy, ox) runs over N*OH*OW; C goes to out[n, co, oy, ox] (+ bias[co]).
// input gradient (MODE 1): C[ci, j] = sum over k = (co, ky, kx) of A[ci, k] * B[k, j] where
//   A[ci, k] = w[co, ci, ky, kx], B[k, j] = dy[n, co, oy, ox] for the output pixel whose tap
//   (ky, kx) reaches input pixel j = (n, iy, ix) (0 where none does: stride, padding),
//   j runs over N*H*W; C goes to dx[n, ci, iy, ix].
// input gradient at stride 1 (MODE 3): the forward (MODE 0) of dy with the flipped, transposed
//   weight, A[ci, k] = w[co, ci, KH-1-ky, KW-1-kx] for k = (co, ky, kx), read from the weight as
//   it is: `cm` describes that forward conv (H, W = dy's OH, OW; OH, OW = dx's H, W; padding
//   reach - padding; C_in = C_out of the layer and so on), so B's loads divide by nothing per
//   element where MODE 1 divides by the stride twice.
// weight gradient (MODE 2): C[co, k] = sum over j = (n, oy, ox) of A[co, j] * B[j, k] where
//   A[co, j] = dy[n, co, oy, ox], B[j, k] = x[n, ci, oy*sh - pt + ky*dh, ox*sw - pl + kx*dw],
//   k = (ci, ky, kx), loaded along j (layout "nt"); C is dense (cog, cg*KH*KW) per group, or a
//   partial sum of it per slice of j when the matmul splits K (the caller adds them up).
// Matmul sizes: forward M = cog, N = N*OH*OW, K = cg*KH*KW; input gradient M = cg, N = N*H*W,
// K = cog*KH*KW; weight gradient M = cog, N = cg*KH*KW, K = N*OH*OW. 4 consecutive pixels of a
// load or store walk (x, y, n) with carries, so a vec4 costs one division chain, not four.
//
// Bindings (after matmul_tiled's 0 a, 1 b, 2 c, 3 p):
//   4 cm: array<i32> = [H, W, OH, OW, KH, KW, sh, sw, pt, pl, dh, dw, C_in, C_out, cg, cog,
//                       bias_end]: the forward adds the bias to the outputs of a batch index
//                       whose C base is below bias_end (0: no bias; a forward with K split
//                       into slices, each slice's output a whole tensor at s * numel, gives
//                       numel: the first slice takes the bias, the sum adds the rest)
//   5 bias: array<f32> (C_out; any buffer when bias_end is 0; unused by the input gradient)
// Placeholders: {{ geometry }} (binding 4 and the `cm` words the functions below read, with
//   `fn bias_end() -> i32` reading word 16 from binding 4: `webgpu/conv_geometry.py` renders
//   either `cm` as binding 4 itself, or natively words 0-15 as a module constant
//   `const cm = array<i32, 16>(...)`, so that every division by a kernel's or a plane's extent
//   is a division by a constant), {{ mode }} (0, 1, 2 or 3, as above), {{ interior }} (true: M, N and K, or each
//   K slice, are whole tiles and K steps, so no load or store compares the matrix's extent;
//   `webgpu/conv_gemm.py` decides it per shape, natively only), {{ epilogue }} (module-scope
//   WGSL defining `pyrite_out(v: f32, i: i32) -> f32`, the value stored at dense output i).
// Index safety (these modules are compiled natively without naga's bounds checks): every
//   storage read and write below is inside an `if` on the matrix's extent (unless INTERIOR,
//   where the extent is whole tiles), and the gathers' padding and stride conditions are
//   branches too, never a `select` of a computed read; `cm` is read at constant indices.

{{ geometry }}
@group(0) @binding(5) var<storage, read> bias: array<f32>;

const MODE: u32 = {{ mode }}u;
const DGRAD: bool = MODE == 1u;
const FLIPPED: bool = MODE == 3u;
const INTERIOR: bool = {{ interior }};

{{ epilogue }}

// The pixel grid j walks: (OH, OW) forward, (H, W) for the input gradient.
fn grid_h() -> i32 { if (DGRAD) { return cm[0]; } return cm[2]; }
fn grid_w() -> i32 { if (DGRAD) { return cm[1]; } return cm[3]; }

// The weight as the forward's A (row co, col k = (ci, ky, kx)) or the input gradient's
// (row ci, col k = (co, ky, kx); the taps flipped in MODE 3, whose cm counts the layer's cg
// as cog).
fn a_at(base: u32, row: u32, col: u32) -> f32 {
    if (!INTERIOR && (row >= p.m || col >= p.k)) {
        return 0.0;
    }
    if (MODE == 0u) {
        return a[base + row * p.k + col];
    }
    let taps = u32(cm[4] * cm[5]);
    let co = col / taps;
    var t = col - co * taps;
    var cg = u32(cm[14]);
    if (FLIPPED) {
        t = taps - 1u - t;
        cg = u32(cm[15]);
    }
    return a[base + (co * cg + row) * taps + t];
}

fn load_a4(base: u32, row: u32, col: u32) -> vec4<f32> {
    if (MODE == 2u) {
        return dy_row4(base, row, col);
    }
    return vec4<f32>(a_at(base, row, col), a_at(base, row, col + 1u), a_at(base, row, col + 2u),
                     a_at(base, row, col + 3u));
}

// Weight gradient's A: dy[n, co, pixel j..j+3] of output channel `row` (base: the group's
// first channel), pixels walking into the next image.
fn dy_row4(base: u32, row: u32, col: u32) -> vec4<f32> {
    var v = vec4<f32>(0.0);
    if (!INTERIOR && row >= p.m) {
        return v;
    }
    let plane = cm[2] * cm[3];
    var n = i32(col) / plane;
    var pix = i32(col) - n * plane;
    for (var e = 0; e < 4; e++) {
        if (INTERIOR || col + u32(e) < p.k) {
            v[e] = a[i32(base) + (n * cm[13] + i32(row)) * plane + pix];
        }
        pix += 1;
        if (pix == plane) {
            pix = 0;
            n += 1;
        }
    }
    return v;
}

// Weight gradient's B, read along K (the matmul renders it in layout "nt": B stored as N rows
// of K): x under tap `row` = (ci, ky, kx) for output pixels col..col+3 of the batch, pixels
// walking into the next row and image, so neighbouring invocations read neighbouring x.
fn x_pixels4(base: u32, row: u32, col: u32) -> vec4<f32> {
    var v = vec4<f32>(0.0);
    if (!INTERIOR && row >= p.n) {
        return v;
    }
    let h = cm[0]; let w = cm[1]; let oh = cm[2]; let ow = cm[3];
    let kh = cm[4]; let kw = cm[5];
    let taps = kh * kw;
    let ci = i32(row) / taps;
    let t = i32(row) - ci * taps;
    let ky = t / kw;
    let kx = t - ky * kw;
    let plane = oh * ow;
    var n = i32(col) / plane;
    let pix = i32(col) - n * plane;
    var oy = pix / ow;
    var ox = pix - oy * ow;
    for (var e = 0; e < 4; e++) {
        if (INTERIOR || col + u32(e) < p.k) {
            let iy = oy * cm[6] - cm[8] + ky * cm[10];
            let ix = ox * cm[7] - cm[9] + kx * cm[11];
            if (iy >= 0 && iy < h && ix >= 0 && ix < w) {
                v[e] = b[i32(base) + ((n * cm[12] + ci) * h + iy) * w + ix];
            }
        }
        ox += 1;
        if (ox == ow) {
            ox = 0;
            oy += 1;
            if (oy == oh) {
                oy = 0;
                n += 1;
            }
        }
    }
    return v;
}

fn load_b4(base: u32, row: u32, col: u32) -> vec4<f32> {
    if (MODE == 2u) {
        return x_pixels4(base, row, col);
    }
    var v = vec4<f32>(0.0);
    if (!INTERIOR && row >= p.k) {
        return v;
    }
    let h = cm[0]; let w = cm[1]; let oh = cm[2]; let ow = cm[3];
    let kh = cm[4]; let kw = cm[5];
    let taps = kh * kw;
    let r = i32(row);
    let ch = r / taps;  // the source channel within the group: ci forward, co backward
    let t = r - ch * taps;
    let ky = t / kw;
    let kx = t - ky * kw;
    let gh = grid_h(); let gw = grid_w();
    let plane = gh * gw;
    var n = i32(col) / plane;
    var pix = i32(col) - n * plane;
    var y = pix / gw;
    var x = pix - y * gw;
    for (var e = 0; e < 4; e++) {
        if (INTERIOR || col + u32(e) < p.n) {
            if (!DGRAD) {
                let iy = y * cm[6] - cm[8] + ky * cm[10];
                let ix = x * cm[7] - cm[9] + kx * cm[11];
                if (iy >= 0 && iy < h && ix >= 0 && ix < w) {
                    v[e] = b[i32(base) + ((n * cm[12] + ch) * h + iy) * w + ix];
                }
            } else {
                let ty = y + cm[8] - ky * cm[10];
                let tx = x + cm[9] - kx * cm[11];
                let oy = ty / cm[6];
                let ox = tx / cm[7];
                if (ty >= 0 && tx >= 0 && oy * cm[6] == ty && ox * cm[7] == tx && oy < oh
                    && ox < ow) {
                    v[e] = b[i32(base) + ((n * cm[13] + ch) * oh + oy) * ow + ox];
                }
            }
        }
        x += 1;
        if (x == gw) {
            x = 0;
            y += 1;
            if (y == gh) {
                y = 0;
                n += 1;
            }
        }
    }
    return v;
}

fn store_c4(base: u32, row: u32, col: u32, v: vec4<f32>) {
    if (!INTERIOR && row >= p.m) {
        return;
    }
    if (MODE == 2u) {  // dense (cog, cg*KH*KW) rows
        for (var e = 0u; e < 4u; e++) {
            if (INTERIOR || col + e < p.n) {
                let i = i32(base + row * p.n + col + e);
                c[i] = pyrite_out(v[e], i);
            }
        }
        return;
    }
    let plane = grid_h() * grid_w();
    var channels = cm[13];
    if (DGRAD) {
        channels = cm[12];
    }
    var b0 = 0.0;
    if (!DGRAD && i32(base) < bias_end()) {
        b0 = bias[i32(base) / plane + i32(row)];
    }
    var n = i32(col) / plane;
    var pix = i32(col) - n * plane;
    for (var e = 0; e < 4; e++) {
        if (INTERIOR || col + u32(e) < p.n) {
            let i = n * channels * plane + i32(base) + i32(row) * plane + pix;
            c[i] = pyrite_out(v[e] + b0, i);
        }
        pix += 1;
        if (pix == plane) {
            pix = 0;
            n += 1;
        }
    }
}
