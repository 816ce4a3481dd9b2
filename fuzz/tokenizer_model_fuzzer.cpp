// SentencePiece tokenizer models (data/tokenizer.h): loading one, then encoding a line with it.
#include "data/tokenizer.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string& path = nce::fuzz::input_file(data, size, ".model");
    return nce::fuzz::refuse_or_read([&] {
        nce::data::Tokenizer tokenizer = nce::data::Tokenizer::load(path);
        tokenizer.encode({"a question about the answer, 질문과 답"}, 16);
    });
}
