// nce mine --pairs FILE [--format jsonl|csv|tsv] [--corpus FILE] --output FILE.csv
//          [--by bm25|model|both] [--bm25-tokens whitespace|whitespace+bigrams]
//          [--checkpoint MODEL.safetensors [--tokenizer T] [--max-length N] [--batch-size N]]
//          [--range FIRST:LAST] [--negatives K] [--absolute-margin M] [--relative-margin R]
//          [--pick top|random] [--seed S] [--threads N] [--lenient]
//
// Hard negatives for a pairs file, written as a pairs file `nce train` reads: columns
// [query_id,] anchor, positive, negative_1 .. negative_K, one row per positive of each query
// (rows sharing a query_id, or else an anchor, are one query). The file's negatives and score
// are not copied: its negatives become candidates like every other text.
//
//   candidates  every distinct positive and negative text of --pairs, and the --corpus texts
//               (read as nce train --corpus reads them)
//   --by        bm25 (default; whitespace words as nce train's BM25 row, or --bm25-tokens
//               whitespace+bigrams for languages without spaces between words or with
//               particles glued to them, such as Korean), model (cosine of a trained
//               text_encoder, --checkpoint, tokenizer.model beside it, its prompts in front,
//               a long candidate scoring as its best window as in nce train's evaluation), or
//               both (reciprocal rank fusion; a candidate must pass the margin of each)
//   --range     ranks FIRST..LAST (1-based, the query's own positives left out) to take from
//   margins     NV-Retriever's false-negative filter against the query's positive's score
//               (its lowest, with several): --absolute-margin M keeps score < positive - M,
//               --relative-margin R keeps score < positive · (1 - R) (95% of the positive: R = 0.05)
//   --pick      top (default): the K best-ranked that pass; random: K of them drawn with --seed
//
// retrieval/pairs/hard_negative_miner.h says it all exactly. A query with fewer than K negatives
// writes no row and is counted. The same inputs give the same file. Everything is checked
// and mined before the output is written, through a temporary file and a rename; a bad input
// is one error line naming the flag or file, and no file.
#include <fmt/core.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "apps/commands.h"
#include "retrieval/pairs/candidate_scorers.h"
#include "retrieval/pairs/hard_negative_miner.h"
#include "retrieval/pairs/pairs_app.h"
#include "retrieval/model/tokenizer_fingerprint.h"
#include "retrieval/settings/run_config.h"
#include "retrieval/model/text_model.h"
#include "data/pairs_reader.h"
#include "data/tokenizer.h"
#include "engine/error.h"
#include "engine/threads.h"

namespace nce::apps {
namespace {

namespace fs = std::filesystem;

struct MineOptionsCli {
    std::string pairs_path;
    std::string format;
    std::string corpus_path;
    std::string output_path;
    std::string by = "bm25";
    std::string bm25_tokens = "whitespace";
    std::string checkpoint_path;
    std::string tokenizer_path;  // default: tokenizer.model beside the checkpoint
    int64_t max_length = 0;      // 0: the model's max_len
    int64_t batch_size = 256;
    std::string range = "1:100";
    int64_t negatives = 5;
    std::optional<double> absolute_margin;
    std::optional<double> relative_margin;
    std::string pick = "top";
    uint64_t seed = 13;
    int threads = 0;
    bool lenient = false;
};

pairs::MiningSettings mining_settings(const MineOptionsCli& options) {
    pairs::MiningSettings settings;
    settings.range = pairs::parse_rank_range(options.range);
    settings.negatives_per_query = options.negatives;
    settings.absolute_margin = options.absolute_margin;
    settings.relative_margin = options.relative_margin;
    settings.pick = options.pick == "random" ? pairs::NegativePick::Random : pairs::NegativePick::Top;
    settings.seed = options.seed;
    pairs::check_mining_settings(settings);
    return settings;
}

// Every flag and file checked before anything is read or computed.
void check_options(const MineOptionsCli& options) {
    NCE_CHECK(!options.pairs_path.empty(), "mine: give the pairs to mine for with --pairs FILE (JSON lines, CSV or TSV "
              "with columns anchor, positive, ...)");
    NCE_CHECK(fs::is_regular_file(options.pairs_path), "mine: --pairs {}: no such file (give a JSON lines, CSV or TSV "
              "file of pairs)", options.pairs_path);
    NCE_CHECK(options.corpus_path.empty() || fs::is_regular_file(options.corpus_path), "mine: --corpus {}: no such "
              "file (give a .txt file of one text per line, or a JSON lines, CSV or TSV file with a text column)",
              options.corpus_path);
    NCE_CHECK(!options.output_path.empty(), "mine: give the file to write with --output FILE.csv");
    NCE_CHECK(fs::path(options.output_path).extension() == ".csv", "mine: --output {}: the mined pairs are CSV; name "
              "the file .csv", options.output_path);
    std::error_code error;
    NCE_CHECK(!fs::equivalent(options.output_path, options.pairs_path, error), "mine: --output {} is the --pairs file; "
              "write the mined pairs to another file", options.output_path);
    fs::path folder = fs::path(options.output_path).parent_path();
    NCE_CHECK(folder.empty() || fs::is_directory(folder), "mine: --output {}: the folder {} does not exist; create it "
              "first", options.output_path, folder.string());
    bool uses_model = options.by != "bm25";
    NCE_CHECK(!uses_model || !options.checkpoint_path.empty(), "mine: --by {} ranks with a model: give --checkpoint "
              "MODEL.safetensors (a text_encoder that nce train wrote), or use --by bm25", options.by);
    NCE_CHECK(uses_model || options.checkpoint_path.empty(), "mine: --checkpoint is read only with --by model or --by "
              "both; add one of them, or drop --checkpoint");
    NCE_CHECK(uses_model || options.tokenizer_path.empty(), "mine: --tokenizer goes with --by model or --by both");
    NCE_CHECK(options.max_length >= 0, "mine: --max-length must be 1 or more (0: the model's max_len), got {}",
              options.max_length);
    NCE_CHECK(options.batch_size >= 1, "mine: --batch-size must be at least 1, got {}", options.batch_size);
    NCE_CHECK(options.threads >= 0, "mine: --threads must be 1 or more (0: NCE_NUM_THREADS), got {}", options.threads);
}

// The model and its tokenizer, checked against each other.
struct LoadedModel {
    std::unique_ptr<nn::EmbeddingModel> model;
    std::unique_ptr<data::Tokenizer> tokenizer;
    int64_t max_length = 0;
};

LoadedModel load_model_and_tokenizer(const MineOptionsCli& options) {
    LoadedModel loaded;
    loaded.model = retrieval::load_text_encoder(options.checkpoint_path);
    std::string tokenizer_path = options.tokenizer_path;
    if (tokenizer_path.empty())
        tokenizer_path = (fs::path(options.checkpoint_path).parent_path() / "tokenizer.model").string();
    NCE_CHECK(fs::is_regular_file(tokenizer_path), "mine: tokenizer {}: no such file; the model reads the pieces of "
              "the tokenizer it was trained with (pass --tokenizer, or keep tokenizer.model beside --checkpoint)",
              tokenizer_path);
    loaded.tokenizer = std::make_unique<data::Tokenizer>(data::Tokenizer::load(tokenizer_path));
    retrieval::check_tokenizer_matches(*loaded.tokenizer, *loaded.model, options.checkpoint_path);
    const nn::ModelConfig& config = loaded.model->config();
    loaded.max_length = options.max_length == 0 ? config.max_len : options.max_length;
    NCE_CHECK(loaded.max_length <= config.max_len, "mine: --max-length must be in 1..{} (the model's max_len), got {}",
              config.max_len, loaded.max_length);
    return loaded;
}

eval::LexicalTokens bm25_tokens(const std::string& name) {
    return name == "whitespace+bigrams" ? eval::LexicalTokens::WhitespaceAndBigrams
                                        : eval::LexicalTokens::Whitespace;
}

std::string margins_text(const pairs::MiningSettings& settings) {
    std::string text;
    if (settings.absolute_margin) text += fmt::format("absolute margin {}", *settings.absolute_margin);
    if (settings.relative_margin)
        text += fmt::format("{}relative margin {}", text.empty() ? "" : " and ", *settings.relative_margin);
    return text.empty() ? "no margin" : text;
}

int run(const MineOptionsCli& options) {
    auto start = std::chrono::steady_clock::now();
    check_options(options);
    pairs::MiningSettings settings = mining_settings(options);
    if (options.threads > 0) set_num_threads(options.threads);

    // 1. The pairs, the corpus, the candidates and queries.
    data::PairsFile file = data::read_pairs_file(options.pairs_path, data::pairs_format(options.pairs_path, options.format),
                                                 options.lenient ? data::Leniency::Lenient : data::Leniency::Strict);
    for (const auto& [reason, count] : file.report.skipped)
        fmt::print("--lenient: skipped {} row(s) of {}: {}\n", count, options.pairs_path, reason);
    std::vector<std::string> corpus;
    if (!options.corpus_path.empty()) corpus = data::read_corpus_texts(options.corpus_path, "");
    pairs::MiningInput input = pairs::mining_input(file, corpus);

    // 2. The scorers.
    std::vector<std::unique_ptr<pairs::CandidateScorer>> scorers;
    LoadedModel loaded;
    if (options.by != "model") {
        retrieval::RunConfig defaults;  // nce train's BM25 parameters
        scorers.push_back(std::make_unique<pairs::Bm25CandidateScorer>(
            input.candidates, bm25_tokens(options.bm25_tokens), eval::Bm25Parameters{defaults.bm25_k1, defaults.bm25_b}));
    }
    if (options.by != "bm25") {
        loaded = load_model_and_tokenizer(options);
        // Windows as nce train's evaluation cuts them: its neighbouring windows' overlap.
        const int64_t overlap = pairs::pairs_app().chunk_overlap;
        auto model_scorer = std::make_unique<pairs::ModelCandidateScorer>(
            *loaded.model, *loaded.tokenizer, input.candidates, loaded.max_length, overlap, options.batch_size);
        if (model_scorer->windowed_candidates() > 0)
            fmt::print("model: {} of {} candidates are longer than {} tokens and are read in windows sharing {} tokens, "
                       "each scoring as its best window\n", model_scorer->windowed_candidates(),
                       input.candidates.size(), model_scorer->window_tokens(), overlap);
        scorers.push_back(std::move(model_scorer));
    }
    std::vector<const pairs::CandidateScorer*> used;
    std::string scorer_names;
    for (const auto& scorer : scorers) {
        used.push_back(scorer.get());
        scorer_names += (scorer_names.empty() ? "" : " + ") + scorer->name();
    }

    // 3. Mining, then one atomic write.
    pairs::MiningResult result = pairs::mine_pairs(input, used, settings);
    const pairs::MiningSummary& summary = result.summary;
    NCE_CHECK(summary.rows_written > 0, "mine: no query of {} has {} negatives that pass at ranks {}:{} with {} ({} "
              "candidates); nothing was written: widen --range, ask for fewer --negatives, loosen the margin or add a "
              "--corpus", options.pairs_path, settings.negatives_per_query, settings.range.first, settings.range.last,
              margins_text(settings), summary.candidates);
    retrieval::write_text_file_atomically(options.output_path,
                                          pairs::mined_pairs_csv(input, result, settings.negatives_per_query));

    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    fmt::print("mine: {}: {} queries, {} rows; {} candidates ({} from the pairs file, {} more from the corpus)\n",
               options.pairs_path, summary.queries, file.rows.size(), summary.candidates, input.file_candidates,
               summary.candidates - input.file_candidates);
    fmt::print("mine: by {}, ranks {}..{}, {} negatives per query ({}), {}\n", scorer_names, settings.range.first,
               settings.range.last, settings.negatives_per_query, options.pick, margins_text(settings));
    fmt::print("mine: {} candidates in range removed by the margin as likely false negatives\n",
               summary.removed_by_margin);
    fmt::print("mine: wrote {} rows ({} queries) to {}; dropped {} queries ({} rows) with fewer than {} negatives; "
               "{:.2f} s\n", summary.rows_written, summary.queries_kept, options.output_path, summary.queries_dropped,
               summary.rows_dropped, settings.negatives_per_query, seconds);
    if (summary.queries_dropped > 0)
        fmt::print("mine: of the dropped, {} lost candidates to the margin and {} had too few ranked candidates{}; a "
                   "wider --range{} keeps more\n", summary.dropped_after_margin,
                   summary.queries_dropped - summary.dropped_after_margin,
                   options.by == "model" ? "" : " (BM25 ranks only texts sharing a word with the query)",
                   options.by != "model" && options.bm25_tokens == "whitespace"
                       ? ", a --corpus or --bm25-tokens whitespace+bigrams" : " or a --corpus");
    return 0;
}

}  // namespace

void add_mine_command(CLI::App& app, int& exit_code) {
    auto options = std::make_shared<MineOptionsCli>();
    CLI::App* command = app.add_subcommand(
        "mine", "Mine hard negatives for a pairs file by BM25, a model or both, with NV-Retriever's margins against "
                "the positive's score; writes anchor, positive, negative_1..K as CSV for nce train");
    command->add_option("--pairs", options->pairs_path, "the pairs to mine for: JSON lines, CSV or TSV with columns "
                        "anchor, positive [, negatives] [, score] [, query_id]")->required();
    command->add_option("--format", options->format, "jsonl, csv or tsv, when the extension of --pairs does not say")
        ->check(CLI::IsMember({"jsonl", "csv", "tsv"}));
    command->add_option("--corpus", options->corpus_path, "more candidate texts: one per line (.txt), or a text column "
                        "(.jsonl, .csv, .tsv)");
    command->add_option("--output", options->output_path, "the mined pairs to write (.csv): [query_id,] anchor, "
                        "positive, negative_1..K")->required();
    command->add_option("--by", options->by, "rank candidates by bm25 (default), model (--checkpoint's cosine) or both "
                        "(reciprocal rank fusion; a candidate must pass each one's margin)")
        ->check(CLI::IsMember({"bm25", "model", "both"}));
    command->add_option("--bm25-tokens", options->bm25_tokens, "BM25's words: whitespace (default, as nce train's BM25 "
                        "row) or whitespace+bigrams (adds each word's character pairs; for Korean and the like)")
        ->check(CLI::IsMember({"whitespace", "whitespace+bigrams"}));
    command->add_option("--checkpoint", options->checkpoint_path, "with --by model or both: a text_encoder "
                        "(model.safetensors of nce train)");
    command->add_option("--tokenizer", options->tokenizer_path, "its tokenizer.model (default: the one beside "
                        "--checkpoint)");
    command->add_option("--max-length", options->max_length, "the model's tokens per text (default: its max_len)");
    command->add_option("--batch-size", options->batch_size, "texts per forward pass of the model (default 256)");
    command->add_option("--range", options->range, "ranks FIRST:LAST (1-based, the query's positives left out) that "
                        "negatives are taken from (default 1:100)");
    command->add_option("--negatives", options->negatives, "K, negatives per query; a query with fewer is dropped and "
                        "counted (default 5)");
    command->add_option("--absolute-margin", options->absolute_margin, "keep a candidate only if its score < the "
                        "positive's - M, in each scorer's units (cosine: 0.05; default: no margin)");
    command->add_option("--relative-margin", options->relative_margin, "keep a candidate only if its score < the "
                        "positive's x (1 - R); NV-Retriever's 95% is R = 0.05 (default: no margin)");
    command->add_option("--pick", options->pick, "top (default): the K best-ranked that pass; random: K of them drawn "
                        "with --seed, written in rank order")
        ->check(CLI::IsMember({"top", "random"}));
    CLI::Option* seed = command->add_option("--seed", options->seed, "with --pick random: the draw's seed (default 13)");
    command->add_option("--threads", options->threads, "the engine's threads (default NCE_NUM_THREADS); the file does "
                        "not depend on them");
    command->add_flag("--lenient", options->lenient, "skip bad rows of --pairs and count them, instead of stopping at "
                      "the first");
    command->footer(
        "Candidates: every distinct positive and negative text of --pairs, then the --corpus texts. A query (rows "
        "sharing query_id, else anchor) never gets its own positives, its anchor, or a text equal to one of them once "
        "white space is collapsed. With several positives the margin is taken against the lowest-scoring one. "
        "Example: nce mine --pairs train.csv --output mined.csv --range 3:50 --negatives 4 --relative-margin 0.05");
    command->callback([options, seed, &exit_code] {
        NCE_CHECK(seed->count() == 0 || options->pick == "random", "mine: --seed is used only with --pick random (top "
                  "picks are the same for every seed); add --pick random or drop --seed");
        exit_code = run(*options);
    });
}

}  // namespace nce::apps
