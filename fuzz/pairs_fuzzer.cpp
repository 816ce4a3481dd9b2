// data/pairs_reader.h: read_pairs_file as JSON lines, CSV and TSV, strict and lenient, each
// successful read turned into its data set by pairs_dataset; and read_corpus_texts in the four
// corpus formats.
#include "data/pairs_reader.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace nce::data;
    const std::string& path = nce::fuzz::input_file(data, size, ".pairs");
    for (PairsFormat format : {PairsFormat::JsonLines, PairsFormat::Csv, PairsFormat::Tsv}) {
        nce::fuzz::refuse_or_read([&] { pairs_dataset(read_pairs_file(path, format, Leniency::Strict)); });
        nce::fuzz::refuse_or_read([&] { pairs_dataset(read_pairs_file(path, format, Leniency::Lenient)); });
    }
    for (const char* format : {"txt", "jsonl", "tsv"}) nce::fuzz::refuse_or_read([&] { read_corpus_texts(path, format); });
    // The last outcome is what the replay prints: a lenient read in the format the bytes look
    // like (JSON lines when they start with '{', TSV when the first line has a tab, else CSV).
    std::string_view text = nce::fuzz::input_text(data, size);
    size_t first = text.find_first_not_of(" \t\r\n\xEF\xBB\xBF");
    PairsFormat guessed = first != std::string_view::npos && text[first] == '{' ? PairsFormat::JsonLines
                          : text.substr(0, text.find('\n')).find('\t') != std::string_view::npos ? PairsFormat::Tsv
                                                                                                 : PairsFormat::Csv;
    return nce::fuzz::refuse_or_read([&] { pairs_dataset(read_pairs_file(path, guessed, Leniency::Lenient)); });
}
