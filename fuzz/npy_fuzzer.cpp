// .npy files (engine/npy.h): the header, the shape and dtype, and the data it promises.
#include "engine/npy.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string& path = nce::fuzz::input_file(data, size, ".npy");
    return nce::fuzz::refuse_or_read([&] { nce::read_npy(path); });
}
