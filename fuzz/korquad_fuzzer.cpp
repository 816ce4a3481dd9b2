// data/korquad_reader.h: read_korquad, strict and lenient (a lenient read skips bad records, counting them).
#include "data/korquad_reader.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string& path = nce::fuzz::input_file(data, size, ".json");
    nce::fuzz::refuse_or_read([&] { nce::data::read_korquad(path, nce::data::Leniency::Strict); });
    return nce::fuzz::refuse_or_read([&] { nce::data::read_korquad(path, nce::data::Leniency::Lenient); });
}
