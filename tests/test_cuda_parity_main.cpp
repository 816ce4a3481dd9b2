// main() of the CUDA parity suite: installs the CUDA backend (host-run or real, whichever
// this executable links), or skips the whole suite with the reason (exit 77, meson's skip)
// where the real backend finds no GPU.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include "engine/backend.h"
#include "engine/cuda/cuda_backend.h"

int main(int argc, char** argv) {
    if (!nce::cuda::install_backend()) {
        try {
            nce::backend_for(nce::Device::CUDA);
        } catch (const std::exception& error) {
            std::printf("cuda-parity: skipped: %s\n", error.what());
        }
        return 77;
    }
    std::printf("cuda-parity: CPU backend against the %s build of the CUDA backend\n", nce::cuda::backend_build_kind());
    return doctest::Context(argc, argv).run();
}
