// window.wgsl: the geometry of a 2-D window over (H, W) planes, which every conv and pool kernel
// keeps at the start of its metadata (`codegen.window_words` writes it):
//   info[1..12] = H, W, OH, OW, KH, KW, sh, sw (stride), pt, pl (padding before), dh, dw
//   (dilation);
// info[0] is the kernel's invocation (or workgroup) count and its own words start at info[13].
// `window()` reads them; `window_output` and `window_input` place an element of the (planes,
// OH, OW) output or the (planes, H, W) input that the pool kernels run over.
// Included with `#include "window.wgsl"`; it includes index.wgsl, and reads the same `info`
// binding. No placeholders.
#include "index.wgsl"

struct Window {
  h: i32, w: i32,
  oh: i32, ow: i32,
  kh: i32, kw: i32,
  sh: i32, sw: i32,
  pt: i32, pl: i32,
  dh: i32, dw: i32,
}

fn window() -> Window {
  return Window(info[1], info[2], info[3], info[4], info[5], info[6], info[7], info[8], info[9],
                info[10], info[11], info[12]);
}

// Output element i of (planes, OH, OW), ox fastest: (ox, oy, where its plane starts in the
// (planes, H, W) input).
fn window_output(win: Window, i: i32) -> vec3<i32> {
  let o = pyrite_unravel(i, vec3<i32>(win.ow, win.oh, 1));
  return vec3<i32>(o.x, o.y, o.w * win.h * win.w);
}

// Input element i of (planes, H, W), ix fastest: (ix, iy, where its plane starts in the
// (planes, OH, OW) output).
fn window_input(win: Window, i: i32) -> vec3<i32> {
  let p = pyrite_unravel(i, vec3<i32>(win.w, win.h, 1));
  return vec3<i32>(p.x, p.y, p.w * win.oh * win.ow);
}
