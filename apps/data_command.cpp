// nce data stats  --format korquad|posts|ranked-json|python|csn --data PATH [--lenient]
// nce data sample --format korquad|posts|ranked-json|python|csn --data PATH [--count 3] [--lenient]
// nce data pairs  --format korquad|posts|ranked-json|python|csn --data PATH --output DIR
//                 [--test-fraction 0.2] [--seed 13] [--lenient]
//
// Reads a data set with the reader for its format and shows what came out: `stats` prints one
// JSON object (records of each kind, skipped records with reasons and examples, seconds
// taken); `sample` prints the first few queries with their relevant passages, truncated;
// `pairs` writes the data set as the pairs files `nce train` reads (data/pairs_reader.h):
// DIR/train.csv and DIR/validation.csv, split by group (article, thread, file) as the apps
// split it, columns query_id, anchor, positive, one row per relevant passage.
// Reading is strict unless --lenient: the first bad record stops it with one line naming the
// file and record.
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "apps/commands.h"
#include "retrieval/settings/run_config.h"
#include "data/codesearchnet_reader.h"
#include "data/csv_field.h"
#include "data/dataset.h"
#include "data/korquad_reader.h"
#include "data/python_miner.h"
#include "data/ranked_qa_reader.h"
#include "data/split.h"
#include "data/stackexchange_reader.h"
#include "data/text_cleaning.h"
#include "engine/error.h"

namespace nce::apps {
namespace {

using data::Leniency;
using data::RetrievalDataset;

struct DataOptionsCli {
    std::string format;
    std::string path;
    bool lenient = false;
    int count = 3;
    std::string output;          // pairs: the folder to write
    double test_fraction = 0.2;  // pairs: the queries (by group) that go to validation.csv
    uint64_t seed = 13;          // pairs: the split's seed
};

// Each format and the reader that reads it.
const std::map<std::string, RetrievalDataset (*)(const std::string&, Leniency)>& readers() {
    static const std::map<std::string, RetrievalDataset (*)(const std::string&, Leniency)> by_format{
        {"korquad", data::read_korquad},             // KorQuAD / SQuAD v1 JSON file
        {"posts", data::read_stackexchange_posts},   // StackExchange dump's Posts.xml
        {"ranked-json", data::read_ranked_qa_json},  // ranked question-answer JSON
        {"python", data::mine_python_tree},          // a folder of Python sources
        {"csn", data::read_codesearchnet_jsonl},     // CodeSearchNet .jsonl
    };
    return by_format;
}

struct TimedRead {
    RetrievalDataset dataset;
    double seconds = 0;
};

TimedRead read_dataset(const DataOptionsCli& options) {
    auto reader = readers().find(options.format);
    NCE_CHECK(reader != readers().end(), "data: unknown --format '{}'; use korquad, posts, ranked-json, python or csn",
              options.format);
    auto start = std::chrono::steady_clock::now();
    RetrievalDataset dataset = reader->second(options.path, options.lenient ? Leniency::Lenient : Leniency::Strict);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return {std::move(dataset), seconds};
}

// Paths and record excerpts may hold bytes that are not UTF-8; they print as U+FFFD.
std::string to_text(const nlohmann::ordered_json& value, int indent) {
    return value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

int run_stats(const DataOptionsCli& options) {
    TimedRead read = read_dataset(options);
    const RetrievalDataset& dataset = read.dataset;
    nlohmann::ordered_json stats = {
        {"format", options.format},
        {"data", options.path},
        {"leniency", options.lenient ? "lenient" : "strict"},
        {"records", dataset.report.records},
        {"skipped", dataset.report.skipped},
        {"skipped_examples", dataset.report.skipped_examples},
        {"queries", dataset.queries.size()},
        {"passages", dataset.passages.size()},
        {"relevance", dataset.relevance.size()},
        {"seconds", read.seconds},
    };
    fmt::print("{}\n", to_text(stats, 2));
    return 0;
}

// One line of at most `max_code_points`, for showing a record's text.
std::string excerpt(const std::string& text, size_t max_code_points) {
    return data::truncate_utf8(data::collapse_whitespace(text), max_code_points);
}

int run_sample(const DataOptionsCli& options) {
    NCE_CHECK(options.count >= 0, "data sample: --count must be 0 or more, got {}", options.count);
    TimedRead read = read_dataset(options);
    const RetrievalDataset& dataset = read.dataset;
    fmt::print("{}: {} queries, {} passages, {} relevance pairs, read in {:.3f} s\n", options.path,
               dataset.queries.size(), dataset.passages.size(), dataset.relevance.size(), read.seconds);

    std::vector<std::vector<const data::Relevance*>> relevant(dataset.queries.size());
    for (const data::Relevance& relevance : dataset.relevance)
        if (relevance.query >= 0 && relevance.query < static_cast<int64_t>(relevant.size()))
            relevant[static_cast<size_t>(relevance.query)].push_back(&relevance);

    constexpr size_t kPassagesShown = 3;
    size_t shown = std::min(dataset.queries.size(), static_cast<size_t>(options.count));
    for (size_t query = 0; query < shown; ++query) {
        const data::Query& record = dataset.queries[query];
        fmt::print("\nquery {}  (group {})\n  {}\n", record.id, record.group, excerpt(record.text, 200));
        const auto& passages = relevant[query];
        for (size_t k = 0; k < passages.size() && k < kPassagesShown; ++k) {
            const data::Relevance& relevance = *passages[k];
            const data::Passage& passage = dataset.passages[static_cast<size_t>(relevance.passage)];
            fmt::print("  relevant passage {}  rank {}  score {}{}\n    {}\n", passage.id, relevance.rank,
                       relevance.score, relevance.accepted ? "  accepted" : "", excerpt(passage.text, 160));
        }
        if (passages.size() > kPassagesShown) fmt::print("  ... and {} more\n", passages.size() - kPassagesShown);
        if (passages.empty()) fmt::print("  (no relevant passage)\n");
    }
    return 0;
}

// query_id, anchor, positive: one row per relevant passage of each query.
std::string pairs_csv(const RetrievalDataset& dataset) {
    std::string text = "query_id,anchor,positive\n";
    for (const data::Relevance& relevance : dataset.relevance) {
        const data::Query& query = dataset.queries[static_cast<size_t>(relevance.query)];
        const data::Passage& passage = dataset.passages[static_cast<size_t>(relevance.passage)];
        text += data::csv_field(query.id) + "," + data::csv_field(query.text) + "," + data::csv_field(passage.text) + "\n";
    }
    return text;
}

int run_pairs(const DataOptionsCli& options) {
    NCE_CHECK(options.test_fraction > 0 && options.test_fraction < 1,
              "data pairs: --test-fraction must be between 0 and 1, got {}", options.test_fraction);
    TimedRead read = read_dataset(options);
    data::DatasetSplits splits = data::split_by_group(read.dataset, 0.0, options.test_fraction, options.seed);
    NCE_CHECK(!splits.train.queries.empty() && !splits.test.queries.empty(),
              "data pairs: {} has too few groups to split ({} queries); use more data or another --test-fraction",
              options.path, read.dataset.queries.size());
    std::string train = pairs_csv(splits.train), validation = pairs_csv(splits.test);
    // Queries with at least one relevant passage: a query without one writes no row.
    auto answered = [](const RetrievalDataset& side) {
        std::set<int64_t> queries;
        for (const data::Relevance& relevance : side.relevance) queries.insert(relevance.query);
        return queries.size();
    };
    retrieval::create_output_folder(options.output);
    retrieval::write_text_file_atomically(options.output + "/train.csv", train);
    retrieval::write_text_file_atomically(options.output + "/validation.csv", validation);
    fmt::print("{}: {} queries -> {}/train.csv ({} queries, {} rows) and {}/validation.csv ({} queries, {} rows), "
               "split by group with seed {}; queries without a relevant passage write no row\n",
               options.path, read.dataset.queries.size(), options.output, answered(splits.train),
               splits.train.relevance.size(), options.output, answered(splits.test), splits.test.relevance.size(),
               options.seed);
    return 0;
}

void add_reading_options(CLI::App& command, DataOptionsCli& options) {
    command.add_option("--format", options.format, "korquad | posts | ranked-json | python | csn")
        ->required()
        ->check(CLI::IsMember({"korquad", "posts", "ranked-json", "python", "csn"}));
    command.add_option("--data", options.path, "The file to read (a folder for --format python)")->required();
    command.add_flag("--lenient", options.lenient, "Skip bad records and count them, instead of stopping at the first");
}

}  // namespace

void add_data_command(CLI::App& app, int& exit_code) {
    auto options = std::make_shared<DataOptionsCli>();
    CLI::App* command = app.add_subcommand("data", "Read a data set with its reader and show what came out");
    command->require_subcommand(1);

    CLI::App* stats = command->add_subcommand(
        "stats", "Print one JSON object: records of each kind, skipped records with reasons, seconds taken");
    add_reading_options(*stats, *options);
    stats->callback([options, &exit_code] { exit_code = run_stats(*options); });

    CLI::App* sample = command->add_subcommand("sample", "Print the first few queries with their relevant passages");
    add_reading_options(*sample, *options);
    sample->add_option("--count", options->count, "How many queries to print (default 3)");
    sample->callback([options, &exit_code] { exit_code = run_sample(*options); });

    CLI::App* pairs = command->add_subcommand(
        "pairs", "Write the data set as train.csv and validation.csv (query_id, anchor, positive) for nce train");
    add_reading_options(*pairs, *options);
    pairs->add_option("--output", options->output, "The folder to write train.csv and validation.csv into")->required();
    pairs->add_option("--test-fraction", options->test_fraction, "The queries (by group) for validation.csv (default 0.2)");
    pairs->add_option("--seed", options->seed, "The split's seed (default 13)");
    pairs->callback([options, &exit_code] { exit_code = run_pairs(*options); });
}

}  // namespace nce::apps
