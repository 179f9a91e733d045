// max_pool2d.wgsl: max pooling over (N*C) planes, NCHW, f32, with stride, padding and dilation,
// and where each max was: out[p, oy, ox] = the max over taps (i, j) of x[p, iy, ix] with
// iy = oy*sh - pt + i*dh, ix = ox*sw - pl + j*dw (taps in the padding read -inf), and
// index[p, oy, ox] = iy * W + ix of the first tap holding it (PyTorch's flat layout). Ties and
// NaN follow argmax: the first max wins, and a NaN is the max once seen.
// One invocation per output element, ox fastest.
// Bindings: 0 info: array<i32> = [total, H, W, OH, OW, KH, KW, sh, sw, pt, pl, dh, dw],
//           1 x: array<f32> (planes, H, W) dense, 2 out: array<f32> (planes, OH, OW),
//           3 index: array<i32> (planes, OH, OW).
// Placeholders: {{ workgroup }} (invocations per workgroup).
@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<storage, read_write> index: array<i32>;

// -inf from its bits at run time (Tint rejects an inf constant expression)
fn pyrite_bits(b: u32) -> f32 { return bitcast<f32>(b); }

fn is_nan(v: f32) -> bool {
  return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
}

@compute @workgroup_size({{ workgroup }})
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let idx = i32(gid.x + gid.y * nwg.x * {{ workgroup }}u);
  if (idx >= info[0]) { return; }
  let h = info[1]; let wd = info[2]; let oh = info[3]; let ow = info[4];
  let kh = info[5]; let kw = info[6]; let sh = info[7]; let sw = info[8];
  let pt = info[9]; let pl = info[10]; let dh = info[11]; let dw = info[12];
  let ox = idx % ow;
  let oy = (idx / ow) % oh;
  let base = (idx / (ow * oh)) * h * wd;
  var best = pyrite_bits(0xff800000u);
  var at = (oy * sh - pt) * wd + ox * sw - pl;
  for (var i = 0; i < kh; i++) {
    let iy = oy * sh - pt + i * dh;
    for (var j = 0; j < kw; j++) {
      let ix = ox * sw - pl + j * dw;
      var v = pyrite_bits(0xff800000u);
      if (iy >= 0 && iy < h && ix >= 0 && ix < wd) {
        v = x[base + iy * wd + ix];
      }
      if (!is_nan(best) && (v > best || is_nan(v))) {
        best = v;
        at = iy * wd + ix;
      }
    }
  }
  out[idx] = best;
  index[idx] = at;
}
