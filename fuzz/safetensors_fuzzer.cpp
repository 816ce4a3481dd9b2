// safetensors files (nn/safetensors.h): the header length, the JSON header, each tensor's
// dtype, shape and byte range.
#include "fuzz/fuzz_input.h"
#include "nn/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string& path = nce::fuzz::input_file(data, size, ".safetensors");
    return nce::fuzz::refuse_or_read([&] { nce::nn::read_safetensors(path); });
}
