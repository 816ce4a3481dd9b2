// Python sources (data/python_scanner.h, data/python_functions.h): the scanner and the
// function finder, on any bytes.
#include "data/python_functions.h"
#include "data/python_scanner.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view source = nce::fuzz::input_text(data, size);
    nce::fuzz::refuse_or_read([&] { nce::data::scan_python(source); });
    return nce::fuzz::refuse_or_read([&] { nce::data::find_python_functions(source); });
}
