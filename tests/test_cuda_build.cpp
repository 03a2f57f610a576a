// The CUDA backend's build contract, checked on the sources (spec/kernels-cuda.md G1, G7):
// the nvcc flags that make A1 hold on the device, and no construct in the kernels that could
// make bits depend on scheduling (atomics, warp-vote reductions) or relax IEEE (fast
// intrinsics, TF32). nvcc itself compiles the kernels in CI when it is present.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "text_file.hpp"
#include <string>

#include "support.hpp"

namespace fs = std::filesystem;

namespace {

using akv::test::read_text;

fs::path cuda_dir() { return fs::path(akv::test::source_dir()) / "optimized" / "cuda"; }

// Every source of the CUDA backend except the benchmark (which calls cuBLAS on purpose).
std::vector<fs::path> kernel_sources() {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(cuda_dir())) {
    const auto ext = e.path().extension();
    if (e.path().string().find("/bench/") != std::string::npos) continue;
    if (ext == ".cu" || ext == ".cuh" || ext == ".hpp" || ext == ".cpp") out.push_back(e.path());
  }
  return out;
}

}  // namespace

TEST(G1_Build, NvccFlagsKeepIeeeArithmetic) {
  // The CMake code without its comments (which may name the flags they forbid).
  std::string cm;
  std::stringstream lines(read_text(cuda_dir() / "CMakeLists.txt"));
  for (std::string line; std::getline(lines, line);)
    if (line.find_first_not_of(" \t") == std::string::npos || line[line.find_first_not_of(" \t")] != '#') cm += line + "\n";
  ASSERT_NE(cm.find("akv_cuda"), std::string::npos);
  for (const char* need : {"-fmad=false", "-ftz=false", "-prec-div=true", "-prec-sqrt=true", "-ffp-contract=off"})
    EXPECT_NE(cm.find(need), std::string::npos) << "optimized/cuda/CMakeLists.txt lacks " << need;
  for (const char* bad : {"use_fast_math", "-fmad=true", "-ftz=true", "-prec-div=false", "-prec-sqrt=false"})
    EXPECT_EQ(cm.find(bad), std::string::npos) << "optimized/cuda/CMakeLists.txt has " << bad;
}

TEST(G1_Build, KernelSourcesUseNoFastOrReducedPrecisionPath) {
  const auto srcs = kernel_sources();
  ASSERT_GE(srcs.size(), 8u);
  for (const auto& p : srcs) {
    const std::string t = read_text(p);
    for (const char* bad : {"__expf", "__fdividef", "__fmul_", "__fadd_", "__frcp", "rsqrtf", "__saturatef",
                            "TF32", "tf32", "cublas", "wmma", "mma.sync", "__half"})
      EXPECT_EQ(t.find(bad), std::string::npos) << p << " uses " << bad;
  }
}

TEST(G7_NoAtomics, NoKernelReductionDependsOnScheduling) {
  for (const auto& p : kernel_sources()) {
    const std::string t = read_text(p);
    // atomicAdd(...), std::atomic, cuda::atomic_ref, warp shuffles and reductions: all absent.
    EXPECT_FALSE(std::regex_search(t, std::regex(R"((atomic[A-Z]\w*\s*\(|std::atomic|cuda::atomic|__shfl|__reduce_|cooperative_groups))")))
        << p << " uses an atomic or a warp/grid-level reduction primitive";
  }
}
