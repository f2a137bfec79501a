// The CUDA libraries this process loads against the ones Accrue was built with: the CUDA runtime,
// the driver, cuBLAS and cuDNN, each with its version and file. On a machine that brings its own
// (a GPU machine running the bundle of tests/make_gpu_bundle.sh, whose cuDNN may come with PyTorch)
// this says first what was found. Exits 1 when a library cannot stand in for the one built
// against; the driver is judged only where there is a GPU. Needs no device.

#include <accrue/framework/core/device_query.hpp>
#include <cstdio>

int main() {
  using namespace accrue;
  const auto& devices = kernels::cuda_device_count();
  const std::vector<kernels::CudaLibrary> libraries = kernels::cuda_libraries();
  int problems = 0;
  for (const kernels::CudaLibrary& l : libraries) {
    const bool is_driver = l.name.rfind("NVIDIA driver", 0) == 0;
    const char* verdict = l.older_minor                  ? "compatible (an older minor version)"
                          : l.compatible                    ? "compatible"
                          : is_driver && devices.count == 0 ? "not judged: no usable GPU"
                                                            : "NOT COMPATIBLE";
    if (!l.compatible && !(is_driver && devices.count == 0)) ++problems;
    std::printf("%-42s built with %-8s found %-8s %s%s%s\n", l.name.c_str(), l.built_version.c_str(),
                l.found_version.c_str(), verdict, l.path.empty() ? "" : "  ", l.path.c_str());
  }
  std::printf("CUDA devices: %d%s%s\n", devices.count, devices.count == 0 ? " (" : "",
              devices.count == 0 ? (devices.reason + ")").c_str() : "");
  if (libraries.empty()) std::printf("this build of Accrue has no CUDA backend\n");
  if (problems > 0) {
    std::printf("%d librar%s cannot stand in for the one Accrue was built with: point LD_LIBRARY_PATH at a matching "
                "one\n", problems, problems == 1 ? "y" : "ies");
    return 1;
  }
  return 0;
}
