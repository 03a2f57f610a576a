#include "optimized/composed/plugin.hpp"

#include <dlfcn.h>

#include <filesystem>

#include "reference/error.hpp"

namespace akv {

std::shared_ptr<const OpSet> load_kernels(const std::string& path, uint32_t select) {
  auto bad = [&](const std::string& what) { throw Error(ErrorCode::kBadKernels, path + ": " + what); };
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    bad(std::filesystem::exists(path, ec) ? "not a regular file (a directory?)" : "no such file");
  // A bare name would make dlopen search the library path: always name the file itself.
  const std::string file = path.find('/') == std::string::npos ? "./" + path : path;
  void* h = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* e = dlerror();
    bad(std::string("cannot load as a shared library: ") + (e ? e : "unknown dlopen error"));
  }
  dlerror();
  void* sym = dlsym(h, AKV_KERNELS_SYMBOL);
  if (sym == nullptr) bad("no symbol " AKV_KERNELS_SYMBOL " (not an akv kernel library; see include/akv/kernels.h)");
  const auto get = reinterpret_cast<akv_get_kernels_fn>(sym);
  return std::make_shared<const OpSet>(get(), nullptr, path, select);
}

}  // namespace akv
