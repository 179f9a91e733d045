// attention_stage.wgsl: what the row kernels (attention_forward.wgsl, attention_backward.wgsl)
// do the same way with a d_k-wide and a d_v-wide row, rendered once for each
// (`flash_attention.staging`) and pasted after attention_reads.wgsl (whose row layout,
// constants and `read4` it uses): staging a tile of rows into the workgroup's tile, a thread's
// share of one row into registers, the dot products of a thread's rows with a staged row, and
// adding a staged row, weighted, to each of a thread's rows.
// Placeholders: {{ tile }} (dk or dv: the workgroup array {{ tile }}_tile), {{ regs }} (KL or
//   VL: vec4s of a row a thread holds), {{ width }} (DKP or DVP: vec4s of a staged row),
//   {{ count }} (NK or NV: vec4s of a tile a thread stages).

// Rows t .. t + COLS - 1 (clamped to `seq`) of `which` (its view block at info[view]), `n`
// wide, into {{ tile }}_tile: the thread's share, vec4s lid + THREADS u.
fn stage_{{ tile }}(which: u32, view: i32, b: i32, h: i32, t: i32, seq: i32, n: i32, lid: u32) {
  let at = view_base(view, b, h, 0);
  for (var u = 0u; u < {{ count }}; u++) {
    let e = lid + THREADS * u;
    let r = min(t + i32(e / {{ width }}), seq - 1);
    let x = read4(which, at + r * info[view + 3], info[view + 4], e % {{ width }}, n);
    if (e < COLS * {{ width }}) {
      {{ tile }}_tile[e] = x;
    }
  }
}

// The thread's share of row `r` of `which` (its view block at info[view]) in (b, h), `n` wide:
// vec4s lane, lane + LANES, .. (zeros past n).
fn row_{{ tile }}(which: u32, view: i32, b: i32, h: i32, r: i32, n: i32, lane: u32)
    -> array<vec4<f32>, {{ regs }}> {
  var x: array<vec4<f32>, {{ regs }}>;
  let at = view_base(view, b, h, r);
  for (var c = 0u; c < {{ regs }}; c++) {
    x[c] = read4(which, at, info[view + 4], c * LANES + lane, n);
  }
  return x;
}

// The dot product of each of the thread's RPT rows `x` (row i at x[i * {{ regs }}]) with row j
// of {{ tile }}_tile, summed over the LANES threads sharing the row.
fn dots_{{ tile }}(x: ptr<function, array<vec4<f32>, RPT * {{ regs }}>>, j: u32, lane: u32)
    -> array<f32, RPT> {
  var acc: array<vec4<f32>, RPT>;  // zeroed by hand: naga zeroes a var once
  for (var i = 0u; i < RPT; i++) {
    acc[i] = vec4<f32>(0.0);
  }
  for (var c = 0u; c < {{ regs }}; c++) {
    let y = {{ tile }}_tile[j * {{ width }} + c * LANES + lane];
    for (var i = 0u; i < RPT; i++) {
      acc[i] = fma((*x)[i * {{ regs }} + c], y, acc[i]);
    }
  }
  var s: array<f32, RPT>;
  for (var i = 0u; i < RPT; i++) {
    s[i] = lane_sum(acc[i].x + acc[i].y + acc[i].z + acc[i].w);
  }
  return s;
}

// Row i of `x` (at x[i * {{ regs }}]) += w[i] * row j of {{ tile }}_tile, for the thread's RPT rows.
fn add_{{ tile }}(x: ptr<function, array<vec4<f32>, RPT * {{ regs }}>>, w: array<f32, RPT>, j: u32,
           lane: u32) {
  for (var c = 0u; c < {{ regs }}; c++) {
    let y = {{ tile }}_tile[j * {{ width }} + c * LANES + lane];
    for (var i = 0u; i < RPT; i++) {
      (*x)[i * {{ regs }} + c] = fma(vec4<f32>(w[i]), y, (*x)[i * {{ regs }} + c]);
    }
  }
}
