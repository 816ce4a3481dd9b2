// Texts given to a tokenizer (data/tokenizer.h): any bytes as a query or a passage, encoded as
// the apps encode them (cut to 512 tokens), and cut into windows of a passage as the apps'
// index cuts them (retrieval/index/passage_index.h). The model is the seed corpus's tokenizer
// model, fixed; only the text is fuzzed. Long texts of pieces the model does not know were
// quadratic inside SentencePiece: scripts/fuzz.sh gives this target inputs up to 4 MB.
#include "data/tokenizer.h"
#include "fuzz/fuzz_input.h"
#include "retrieval/index/passage_index.h"

#ifndef NCE_FUZZ_TOKENIZER_MODEL
#error "NCE_FUZZ_TOKENIZER_MODEL: the path of the tokenizer model the texts are encoded with (fuzz/meson.build)"
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const nce::data::Tokenizer tokenizer = nce::data::Tokenizer::load(NCE_FUZZ_TOKENIZER_MODEL);
    const std::string text(nce::fuzz::input_text(data, size));
    return nce::fuzz::refuse_or_read([&] {
        tokenizer.encode({text}, 512);
        nce::retrieval::chunk_passages({{"fuzzed", text, "fuzzed"}}, tokenizer, 128, 32);
    });
}
