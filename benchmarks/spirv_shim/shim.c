/* A Vulkan driver (ICD) that forwards everything to lavapipe and writes the SPIR-V of every
 * vkCreateShaderModule into $SPV_DUMP/<n>.spv: what naga made of a WGSL module, for
 * benchmarks/spirv_ops.py. Built there with `cc -shared -fPIC`; selected with VK_DRIVER_FILES.
 * $LVP_LIBRARY names lavapipe's library (default: Debian's path). No Vulkan headers needed:
 * the few types it touches are declared here. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
typedef void (*PFN)(void);
static void *lvp;
static PFN (*r_gipa)(void*, const char*);
static PFN (*r_gpdpa)(void*, const char*);
static int (*r_neg)(uint32_t*);
static PFN (*r_gdpa)(void*, const char*);
static int (*r_csm)(void*, const void*, const void*, void*);
static int n;
struct SMCI { int sType; const void* pNext; unsigned flags; size_t codeSize; const uint32_t* pCode; };
static void init(void) {
  if (lvp) return;
  const char* path = getenv("LVP_LIBRARY");
  lvp = dlopen(path ? path : "/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so", RTLD_NOW);
  if (!lvp) { fprintf(stderr, "spirv shim: %s\n", dlerror()); abort(); }
  r_gipa = dlsym(lvp, "vk_icdGetInstanceProcAddr");
  r_gpdpa = dlsym(lvp, "vk_icdGetPhysicalDeviceProcAddr");
  r_neg = dlsym(lvp, "vk_icdNegotiateLoaderICDInterfaceVersion");
}
static int my_csm(void* dev, const struct SMCI* ci, const void* alloc, void* out) {
  const char* dir = getenv("SPV_DUMP");
  if (dir) { char p[512]; snprintf(p, sizeof p, "%s/%d.spv", dir, n++);
    FILE* f = fopen(p, "wb"); if (f) { fwrite(ci->pCode, 1, ci->codeSize, f); fclose(f);} }
  return r_csm(dev, ci, alloc, out);
}
static PFN my_gdpa(void* dev, const char* name) {
  if (!strcmp(name, "vkCreateShaderModule")) { r_csm = (void*)r_gdpa(dev, name); return (PFN)my_csm; }
  if (!strcmp(name, "vkGetDeviceProcAddr")) return (PFN)my_gdpa;
  return r_gdpa(dev, name);
}
PFN vk_icdGetInstanceProcAddr(void* inst, const char* name) {
  init();
  if (!strcmp(name, "vkGetDeviceProcAddr")) { r_gdpa = (void*)r_gipa(inst, name); return (PFN)my_gdpa; }
  if (!strcmp(name, "vkCreateShaderModule")) { r_gdpa = (void*)r_gipa(inst, "vkGetDeviceProcAddr"); r_csm = (void*)r_gipa(inst, name); return (PFN)my_csm; }
  return r_gipa(inst, name);
}
PFN vk_icdGetPhysicalDeviceProcAddr(void* inst, const char* name) { init(); return r_gpdpa(inst, name); }
int vk_icdNegotiateLoaderICDInterfaceVersion(uint32_t* v) { init(); return r_neg(v); }
