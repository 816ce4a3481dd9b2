// data/stackexchange_reader.h: read_stackexchange_posts, strict and lenient (a lenient read skips bad records, counting them).
#include "data/stackexchange_reader.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string& path = nce::fuzz::input_file(data, size, ".xml");
    nce::fuzz::refuse_or_read([&] { nce::data::read_stackexchange_posts(path, nce::data::Leniency::Strict); });
    return nce::fuzz::refuse_or_read([&] { nce::data::read_stackexchange_posts(path, nce::data::Leniency::Lenient); });
}
