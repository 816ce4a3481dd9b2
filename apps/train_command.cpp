// nce train --train FILE [--validation FILE] [--corpus FILE] [--format F] [--output DIR] [flags]
// nce train pretrain|eval|index|search ...   as every retrieval app's (retrieval/run/retrieval_app.h);
//                                            eval and index read the files the run was trained with
//
// A text encoder trained on the user's own pairs (retrieval/pairs/pairs_app.h), with everything
// the apps' runs have: the SentencePiece tokenizer trained on the file, corpus pretraining,
// --init, every training loss that fits the file's columns (retrieval/pairs/loss_fit.h) with
// --loss-parameter, early stopping, the JSON-lines log and curves, the table beside BM25 with
// 95% intervals, results.json. Every RunConfig flag applies; --vocab-size, unless given,
// is sized to the training file (suggested_vocab_size below).
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <set>
#include <sstream>
#include <string_view>

#include "apps/commands.h"
#include "apps/retrieval_subcommands.h"
#include "retrieval/pairs/pairs_app.h"
#include "data/pairs_reader.h"
#include "engine/error.h"

namespace nce::apps {
namespace {

// A vocabulary the training file can fill: 4·sqrt(the words of its distinct texts, what the
// tokenizer learns from), so that each piece is seen often enough to learn (Heaps' law:
// distinct words grow about as the square root of the text), at least its distinct
// characters and 64 pieces more (every character needs a piece), within 128..8000.
int64_t suggested_vocab_size(const data::PairsFile& file) {
    double words = 0;
    std::set<std::string> characters;  // each as its UTF-8 bytes
    std::set<std::string_view> seen;
    auto add = [&](const std::string& text) {
        if (!seen.insert(text).second) return;
        std::istringstream stream(text);
        for (std::string word; stream >> word;) words += 1;
        for (size_t start = 0; start < text.size();) {
            size_t end = start + 1;
            while (end < text.size() && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) ++end;
            characters.insert(text.substr(start, end - start));
            start = end;
        }
    };
    for (const data::PairsRow& row : file.rows) {
        add(row.anchor);
        add(row.positive);
        for (const std::string& negative : row.negatives) add(negative);
    }
    auto wanted = std::max(static_cast<int64_t>(4 * std::sqrt(words)), static_cast<int64_t>(characters.size()) + 64);
    return std::clamp<int64_t>(wanted, 128, 8000);
}

// --train, --validation, --corpus and --format on `command`, moved into config.data and
// config.app when given; a run that trains sizes its vocabulary to --train unless chosen.
retrieval::RetrievalApp::OwnOptions add_pairs_options(CLI::App& command) {
    command.get_option("--data")->group("");  // --train names the data here
    command.get_option("--vocab-size")->default_str("sized to --train");
    struct Files {
        std::string train, validation, corpus, format;
        bool identifier_words = false;
    };
    auto files = std::make_shared<Files>();
    command.add_option("--train", files->train, "pairs to train on: JSON lines, CSV or TSV with columns anchor, "
                                                "positive [, negative | negative_1..K] [, score] [, query_id]");
    command.add_option("--validation", files->validation, "pairs to measure on, in the same form (default: a part "
                                                          "of --train)");
    command.add_option("--corpus", files->corpus, "more passages to search when measuring: one text per line, or "
                                                  "a text column");
    command.add_option("--format", files->format, "jsonl, csv or tsv, when a file's extension does not say")
        ->check(CLI::IsMember({"jsonl", "csv", "tsv"}));
    command.add_flag("--identifier-words", files->identifier_words,
                     "the tokenizer reads names and words apart from case and punctuation (getLineNumber(x), "
                     "line_number -> get line number ( x ), line _ number), as nce code does; its tokenizer.model "
                     "keeps the choice");
    return [files](retrieval::RunConfig& config, const retrieval::RunConfigOptions& options, bool trains) {
        if (!files->train.empty()) config.data = files->train;
        if (!files->validation.empty()) config.app["validation"] = files->validation;
        if (!files->corpus.empty()) config.app["corpus"] = files->corpus;
        if (!files->format.empty()) config.app["format"] = files->format;
        if (files->identifier_words) config.app["identifier_words"] = true;
        NCE_CHECK(!config.data.empty(), "nce train: give the training pairs with --train FILE (JSON lines, CSV or TSV "
                  "with columns anchor, positive, ...)");
        if (trains && !options.chosen("vocab_size")) {
            std::string format = config.app.value("format", "");
            data::PairsFile file = data::read_pairs_file(config.data, data::pairs_format(config.data, format),
                                                         data::Leniency::Lenient);
            config.vocab_size = suggested_vocab_size(file);
        }
    };
}

}  // namespace

void add_train_command(CLI::App& app, int& exit_code) {
    static const retrieval::RetrievalApp pairs = [] {
        retrieval::RetrievalApp app = pairs::pairs_app();
        app.add_own_options = add_pairs_options;
        return app;
    }();
    add_retrieval_subcommands(app, pairs, exit_code);
}

}  // namespace nce::apps
