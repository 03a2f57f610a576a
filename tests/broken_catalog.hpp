// The catalog of broken kernels (plugins/broken, plugins/README.md) as the tests take it: each
// defect is written once there, as a C kernel library on the sound base, and the gate tests, the
// per-op teeth and the property teeth load the built library by its name.
#pragma once
#include <string>

namespace akv::test {

/// The path of the catalog's library `name`: a defect as plugins/broken/CMakeLists.txt lists it
/// in AKV_BROKEN ("split_k_by_m" is libakv_broken_split_k_by_m.so), or "sound_base", the control.
/// The test binary's CMake target depends on akv_broken_catalog, so every one is built.
inline std::string broken_kernels(const std::string& name) {
  return std::string(AKV_BROKEN_DIR) + (name == "sound_base" ? "/libakv_sound_base.so" : "/libakv_broken_" + name + ".so");
}

/// The catalog's control, the sound base every defect is one edit of.
inline std::string sound_kernels() { return broken_kernels("sound_base"); }

}  // namespace akv::test
