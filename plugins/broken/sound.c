/* akv_sound_base: the catalog's control. Every op from the sound base (sound_base.h), which
 * the gate must pass (exit 0); each broken kernel beside it differs in one op. */
#include "sound_base.h"

const akv_kernels* akv_get_kernels(void) {
  static const akv_kernels table = SB_TABLE("sound-base");
  return &table;
}
