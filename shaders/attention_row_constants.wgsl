// attention_row_constants.wgsl: the parameters of the row kernels (attention_forward.wgsl,
// attention_backward.wgsl), rendered by `flash_attention._launch` and pasted into each as its
// {{ constants }}.
// Placeholders: {{ rows }} (rows a workgroup), {{ cols }} (rows a staged tile), {{ dk4 }},
//   {{ dv4 }} (head dims in vec4s, rounded up), {{ has_mask }} (true or false), {{ rpt }} (rows
//   a thread), {{ lanes }} (threads a row).
const ROWS: u32 = {{ rows }}u;
const COLS: u32 = {{ cols }}u;
const DK4: u32 = {{ dk4 }}u;
const DV4: u32 = {{ dv4 }}u;
const HAS_MASK: bool = {{ has_mask }};
const RPT: u32 = {{ rpt }}u;
const LANES: u32 = {{ lanes }}u;
