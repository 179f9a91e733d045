// attention_stage.wgsl: what the row kernels (attention_forward.wgsl, attention_backward.wgsl)
// do the same way with a d_k-wide and a d_v-wide row, rendered once for each
// (`flash_attention.staging`) and pasted after attention_reads.wgsl (whose row layout,
// constants and `read4` it uses): staging a tile of rows into the workgroup's tile and a
// thread's share of one row into registers. (The kernels' inner loops, dot products with a
// staged row and adding a weighted staged row, stay written out in each kernel: as functions
// over a pointer to the thread's rows the key gradients took 6% longer on the H100 than in
// session 5's run, where the unchanged register-blocked kernels agreed within 1%, and a
// forward + backward step 1.5-2% longer in the same run: benchmarks/results/
// attention_kernels_h100_s6.json against attention_h100_s5_lead.json,
// attention_steps_h100_s6_final*.json against attention_steps_before_dedupe_h100_s6.json.)
// Placeholders: {{ tile }} (dk or dv: the workgroup array {{ tile }}_tile), {{ regs }} (KL or
//   VL: vec4s of a row a thread holds), {{ width }} (DKP or DVP: vec4s of a staged row),
//   {{ count }} (NK or NV: vec4s of a tile a thread stages).

// Rows t .. t + COLS - 1 (clamped to `seq`) of `which` (its view block at info[view]), `n`
// wide, into {{ tile }}_tile: the thread's share, vec4s lid + THREADS u.
// Every load is issued before the first store.
fn stage_{{ tile }}(which: u32, view: i32, b: i32, h: i32, t: i32, seq: i32, n: i32, lid: u32) {
  var x: array<vec4<f32>, {{ count }}>;
  let at = view_base(view, b, h, 0);
  for (var u = 0u; u < {{ count }}; u++) {
    let e = lid + THREADS * u;
    let r = min(t + i32(e / {{ width }}), seq - 1);
    x[u] = read4(which, at + r * info[view + 3], info[view + 4], e % {{ width }}, n);
  }
  for (var u = 0u; u < {{ count }}; u++) {
    let e = lid + THREADS * u;
    if (e < COLS * {{ width }}) {
      {{ tile }}_tile[e] = x[u];
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
