// Model checkpoints (nn/checkpoint.h): a safetensors file whose metadata holds nce_config;
// the config is checked and the model built before its parameters are read.
#include "fuzz/fuzz_input.h"
#include "nn/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string& path = nce::fuzz::input_file(data, size, ".safetensors");
    return nce::fuzz::refuse_or_read([&] { nce::nn::load_model(path); });
}
