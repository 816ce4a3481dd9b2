#include "retrieval/stackexchange/posts_dataset.h"

#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "retrieval/embedding/training_losses.h"
#include "data/stackexchange_reader.h"
#include "engine/error.h"

namespace nce::stackexchange {
namespace {

namespace fs = std::filesystem;

// The value of `key` in the "app" object, checked against the type `field` holds.
template <typename T>
void read_field(const nlohmann::json& app, const char* key, T& field) {
    if (!app.contains(key)) return;
    const nlohmann::json& value = app.at(key);
    bool fits = false;
    if constexpr (std::is_same_v<T, bool>) fits = value.is_boolean();
    else if constexpr (std::is_integral_v<T>) fits = value.is_number_integer();
    else if constexpr (std::is_floating_point_v<T>) fits = value.is_number();
    NCE_CHECK(fits, "stackexchange: config \"app\".\"{}\" has the wrong type ({}); see nce stackexchange --help", key,
              value.dump());
    field = value.get<T>();
}

}  // namespace

StackExchangeSettings read_settings(const retrieval::RunConfig& config) {
    StackExchangeSettings settings;
    const nlohmann::json& app = config.app;
    NCE_CHECK(app.is_object(), "stackexchange: config \"app\" must be an object, got {}", app.dump());
    static const std::set<std::string> known = {"questions", "max_answers",    "paraphrase_probability",
                                                "accepted_probability", "lenient", "losses",
                                                "in_batch_questions", "hard_negatives"};
    for (const auto& [key, value] : app.items())
        NCE_CHECK(known.count(key), "stackexchange: unknown config key \"app\".\"{}\" (known: {})", key,
                  fmt::join(known, ", "));
    read_field(app, "questions", settings.site.questions);
    read_field(app, "max_answers", settings.site.max_answers);
    read_field(app, "paraphrase_probability", settings.site.paraphrase_probability);
    read_field(app, "accepted_probability", settings.site.accepted_probability);
    read_field(app, "lenient", settings.lenient);
    read_field(app, "in_batch_questions", settings.views.batch_questions);
    read_field(app, "hard_negatives", settings.views.hard_negatives);
    if (app.contains("losses")) {
        const nlohmann::json& losses = app.at("losses");
        NCE_CHECK(losses.is_array() && !losses.empty(),
                  "stackexchange: config \"app\".\"losses\" must be a non-empty list of loss names, got {}",
                  losses.dump());
        settings.losses.clear();
        for (const nlohmann::json& name : losses) {
            NCE_CHECK(name.is_string(), "stackexchange: config \"app\".\"losses\" holds {}, not a loss name", name.dump());
            settings.losses.push_back(name.get<std::string>());
        }
    }
    const std::vector<std::string>& trainable = retrieval::training_loss_names();
    for (const std::string& loss : settings.losses)
        NCE_CHECK(std::find(trainable.begin(), trainable.end(), loss) != trainable.end(),
                  "stackexchange: unknown loss '{}' in the comparison (known: {})", loss, fmt::join(trainable, ", "));
    settings.site.seed = config.seed;
    NCE_CHECK(settings.site.questions >= 1 && settings.site.questions <= 1000000,
              "stackexchange: config \"app\".\"questions\" must be in 1..1000000, got {}", settings.site.questions);
    NCE_CHECK(settings.views.batch_questions >= 1,
              "stackexchange: config \"app\".\"in_batch_questions\" must be at least 1, got {}",
              settings.views.batch_questions);
    NCE_CHECK(settings.views.hard_negatives >= 1,
              "stackexchange: config \"app\".\"hard_negatives\" must be at least 1, got {}",
              settings.views.hard_negatives);
    return settings;
}

data::RetrievalDataset keep_answered_questions(const data::RetrievalDataset& dataset, const std::string& source,
                                               PostsFilterReport* report) {
    PostsFilterReport counts;
    std::vector<int64_t> new_passage(dataset.passages.size(), -1);
    std::vector<int64_t> answers_of_query(dataset.queries.size(), 0);
    data::RetrievalDataset kept;
    kept.name = dataset.name;
    kept.report = dataset.report;
    for (size_t p = 0; p < dataset.passages.size(); ++p) {
        if (dataset.passages[p].text.find_first_not_of(" \t\r\n") == std::string::npos) {
            ++counts.empty_answers;
            continue;
        }
        new_passage[p] = static_cast<int64_t>(kept.passages.size());
        kept.passages.push_back(dataset.passages[p]);
    }
    for (const data::Relevance& relevance : dataset.relevance)
        if (new_passage[static_cast<size_t>(relevance.passage)] >= 0) ++answers_of_query[static_cast<size_t>(relevance.query)];
    std::vector<int64_t> new_query(dataset.queries.size(), -1);
    for (size_t q = 0; q < dataset.queries.size(); ++q) {
        if (answers_of_query[q] == 0) {
            ++counts.questions_without_answer;
            continue;
        }
        new_query[q] = static_cast<int64_t>(kept.queries.size());
        kept.queries.push_back(dataset.queries[q]);
    }
    // Ranks are renumbered within each question so that they stay 0, 1, ... without gaps.
    std::vector<int64_t> next_rank(kept.queries.size(), 0);
    std::vector<data::Relevance> relevance = dataset.relevance;
    std::stable_sort(relevance.begin(), relevance.end(), [](const data::Relevance& a, const data::Relevance& b) {
        return a.query != b.query ? a.query < b.query : a.rank < b.rank;
    });
    for (const data::Relevance& entry : relevance) {
        int64_t query = new_query[static_cast<size_t>(entry.query)];
        int64_t passage = new_passage[static_cast<size_t>(entry.passage)];
        if (query < 0 || passage < 0) continue;
        data::Relevance moved = entry;
        moved.query = query;
        moved.passage = passage;
        moved.rank = next_rank[static_cast<size_t>(query)]++;
        kept.relevance.push_back(moved);
    }
    NCE_CHECK(!kept.queries.empty(),
              "{}: no question with an answer ({} questions, {} answers read): nothing to train or evaluate on; "
              "give a dump with answered questions",
              source, dataset.queries.size(), dataset.passages.size());
    if (report) *report = counts;
    return kept;
}

std::string posts_path_for_run(const retrieval::RunConfig& config, const StackExchangeSettings& settings) {
    if (!config.data.empty()) {
        std::error_code error;
        if (fs::is_directory(config.data, error)) {
            std::string inside = (fs::path(config.data) / "Posts.xml").string();
            NCE_CHECK(fs::exists(inside, error), "{}: the folder holds no Posts.xml; give a dump's Posts.xml with --data",
                      config.data);
            return inside;
        }
        return config.data;  // the reader names it when it is missing or malformed
    }
    // The generated site, remembered with the settings that made it: regenerated only when
    // they change, so train, eval, index and compare of one output folder read the same file.
    fs::path folder = fs::path(config.output) / "data";
    std::string path = (folder / "Posts.xml").string();
    std::string stamp_path = (folder / "generated.json").string();
    nlohmann::json stamp = {{"questions", settings.site.questions},
                            {"max_answers", settings.site.max_answers},
                            {"paraphrase_probability", settings.site.paraphrase_probability},
                            {"accepted_probability", settings.site.accepted_probability},
                            {"seed", settings.site.seed}};
    std::error_code error;
    if (fs::exists(path, error) && fs::exists(stamp_path, error)) {
        std::ifstream in(stamp_path);
        std::stringstream text;
        text << in.rdbuf();
        if (nlohmann::json::parse(text.str(), nullptr, false) == stamp) return path;
    }
    write_generated_site(folder.string(), settings.site);
    retrieval::write_text_file_atomically(stamp_path, stamp.dump(2) + "\n");
    fmt::print("generated a StackExchange site: {} questions -> {}\n", settings.site.questions, path);
    return path;
}

data::RetrievalDataset load_posts_dataset(const retrieval::RunConfig& config) {
    StackExchangeSettings settings = read_settings(config);
    std::string path = posts_path_for_run(config, settings);
    data::RetrievalDataset read =
        data::read_stackexchange_posts(path, settings.lenient ? data::Leniency::Lenient : data::Leniency::Strict);
    PostsFilterReport filtered;
    data::RetrievalDataset dataset = keep_answered_questions(read, path, &filtered);
    int64_t skipped = 0;
    for (const auto& [reason, count] : read.report.skipped) skipped += count;
    fmt::print("read {}: {} questions with {} answers ({} questions without an answer, {} empty answers and {} other "
               "rows left out)\n",
               path, dataset.queries.size(), dataset.passages.size(), filtered.questions_without_answer,
               filtered.empty_answers, skipped);
    return dataset;
}

}  // namespace nce::stackexchange
