// Where `nce stackexchange` gets its questions and answers, and the app's own settings.
//
// The data of a run is config.data when given (a Posts.xml, or a dump's folder holding one),
// else the generated site (retrieval/stackexchange/generated_site.h) written to
// <output>/data/Posts.xml; either way it is read by data/stackexchange_reader.h. Questions
// without an answer and answers whose body cleans to nothing are left out (and counted): a
// question must have an answer to be scored, an answer must have a token to be embedded.
//
// The app's settings sit under "app" in a run's JSON config (retrieval/settings/run_config.h):
//   {"app": {"questions": 2000, "max_answers": 5, "paraphrase_probability": 0.65,
//            "accepted_probability": 0.6, "lenient": false,
//            "losses": ["infonce", ...], "in_batch_questions": 32, "hard_negatives": 10}}
// The first four shape the generated site, "lenient" skips bad rows of a real dump instead of
// stopping, the last three are `compare`'s. An unknown key or a wrong type is an error.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "retrieval/settings/run_config.h"
#include "retrieval/stackexchange/evaluation_views.h"
#include "retrieval/stackexchange/generated_site.h"
#include "data/dataset.h"

namespace nce::stackexchange {

struct StackExchangeSettings {
    GeneratedSiteOptions site;  // its seed is the run's seed
    bool lenient = false;
    std::vector<std::string> losses = {"infonce",        "infonce_symmetric", "rank_infonce", "hard_negative_infonce",
                                       "multi_positive", "triplet",           "listwise"};
    ViewOptions views;
};

// Reads config.app over the defaults above; throws one line naming the key on an unknown
// key, a wrong type, a value out of range or an unknown loss.
StackExchangeSettings read_settings(const retrieval::RunConfig& config);

// What was left out of the data set read.
struct PostsFilterReport {
    int64_t questions_without_answer = 0;
    int64_t empty_answers = 0;
};

// The questions that have an answer, and those answers with text, re-indexed. Throws naming
// `source` when no question is left (an empty corpus).
data::RetrievalDataset keep_answered_questions(const data::RetrievalDataset& dataset, const std::string& source,
                                               PostsFilterReport* report = nullptr);

// The Posts.xml path of a run: config.data (a folder means its Posts.xml), or the generated
// site, written to <output>/data/Posts.xml when it is not there from the same settings.
std::string posts_path_for_run(const retrieval::RunConfig& config, const StackExchangeSettings& settings);

// posts_path_for_run + the reader + keep_answered_questions; prints one line of what it read.
data::RetrievalDataset load_posts_dataset(const retrieval::RunConfig& config);

}  // namespace nce::stackexchange
