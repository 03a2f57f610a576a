/* akv_sound_base: the catalog's control. Every op from the sound base (sound_base.h), which
 * the gate must pass (exit 0); each broken kernel beside it differs in one op. */
#include "sound_base.h"

const akv_kernels* akv_get_kernels(void) {
  static const akv_kernels table = {
      AKV_KERNELS_ABI_VERSION, "sound-base", SB_PROVIDES, NULL, sb_set_threads, sb_scratch_floats, NULL, NULL,
      sb_matmul, sb_rmsnorm, sb_rope, sb_swiglu, sb_add, sb_attention, sb_evict};
  return &table;
}
