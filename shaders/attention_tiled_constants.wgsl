// attention_tiled_constants.wgsl: the parameters of the register-blocked attention kernels
// (attention_tiled_forward.wgsl, attention_tiled_query.wgsl, attention_tiled_key.wgsl), rendered
// by `flash_tiles.launch` and pasted into each as its {{ constants }}.
// Placeholders: {{ qm }} (a thread's rows, in fours), {{ gx }} (column groups), {{ bk }}
//   (head-dim chunk), {{ rv }} (vec4 columns of an output row a thread owns), {{ dk4 }},
//   {{ dv4 }} (head dims in vec4s, rounded up), {{ has_mask }} (true or false).
const GX: u32 = {{ gx }}u;
const QM: u32 = {{ qm }}u;
const BK: u32 = {{ bk }}u;
const RV: u32 = {{ rv }}u;
const DK4: u32 = {{ dk4 }}u;
const DV4: u32 = {{ dv4 }}u;
const HAS_MASK: bool = {{ has_mask }};
