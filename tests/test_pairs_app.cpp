// nce train's own parts (retrieval/pairs/): which losses fit a pairs file's columns, the files as
// one data set and its split (validation file measured, corpus searched, negatives never
// relevant), and infonce taking the data's negatives as extra candidates.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "retrieval/pairs/loss_fit.h"
#include "retrieval/pairs/pairs_app.h"
#include "eval/rankings.h"
#include "retrieval/model/text_model.h"
#include "retrieval/train/training.h"
#include "tests/test_helpers.h"

namespace fs = std::filesystem;
using namespace nce;

namespace {

// A folder of its own for one test case, removed at the end.
struct ScratchFolder {
    fs::path path;
    explicit ScratchFolder(const std::string& name)
        : path(fs::temp_directory_path() / fmt::format("nce_test_pairs_{}_{}", name, getpid())) {
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~ScratchFolder() { fs::remove_all(path); }
    std::string write(const std::string& name, const std::string& text) const {
        std::ofstream(path / name, std::ios::binary) << text;
        return (path / name).string();
    }
};

data::PairsFile file_with(int64_t negative_columns, bool score) {
    data::PairsFile file;
    file.path = "pairs.csv";
    file.columns = {"anchor", "positive"};
    for (int64_t k = 1; k <= negative_columns; ++k) file.columns.push_back(fmt::format("negative_{}", k));
    if (score) file.columns.push_back("score");
    file.negative_columns = negative_columns;
    file.has_score = score;
    return file;
}

using Names = std::vector<std::string>;

}  // namespace

TEST_CASE("loss fit: the columns decide which losses can train") {
    CHECK(pairs::losses_that_fit(file_with(0, false), data::TripletNegatives::Mixed) ==
          Names{"infonce", "infonce_symmetric", "multi_positive", "rank_infonce", "hard_negative_infonce", "triplet",
                "matryoshka"});
    CHECK(pairs::losses_that_fit(file_with(0, false), data::TripletNegatives::HardNegative) ==
          Names{"infonce", "infonce_symmetric", "multi_positive", "rank_infonce", "hard_negative_infonce",
                "matryoshka"});
    CHECK(pairs::losses_that_fit(file_with(2, false), data::TripletNegatives::HardNegative) ==
          Names{"infonce", "infonce_symmetric", "triplet", "listwise", "cosent", "contrastive"});
    CHECK(pairs::losses_that_fit(file_with(0, true), data::TripletNegatives::Mixed) == Names{"rank_infonce", "listwise", "cosent", "contrastive"});
    CHECK_ERROR_MENTIONS(pairs::check_loss_fits(file_with(0, true), "infonce", data::TripletNegatives::Mixed),
                         "--loss infonce does not fit pairs.csv (columns: anchor, positive, score): it treats every "
                         "pair as a positive and would ignore the score column; losses that fit these columns: "
                         "rank_infonce, listwise, cosent, contrastive");
    CHECK_ERROR_MENTIONS(pairs::check_loss_fits(file_with(0, false), "cosent", data::TripletNegatives::Mixed),
                         "needs a score column or negative columns");
    CHECK_ERROR_MENTIONS(pairs::check_loss_fits(file_with(1, false), "hard_negative_infonce", data::TripletNegatives::Mixed),
                         "pull the negatives towards the anchor");
    CHECK_ERROR_MENTIONS(pairs::check_loss_fits(file_with(0, false), "ntxent", data::TripletNegatives::Mixed),
                         "--loss ntxent: not a loss nce train can train with");
    CHECK_NOTHROW(pairs::check_loss_fits(file_with(3, false), "triplet", data::TripletNegatives::HardNegative));
}

namespace {

const char* kTrainPairs =
    R"({"anchor": "red apple", "positive": "apples are red", "negative": "apples are blue"})" "\n"
    R"({"anchor": "yellow banana", "positive": "bananas are yellow", "negative": "bananas are red"})" "\n"
    R"({"anchor": "purple grape", "positive": "grapes are purple", "negative": "grapes are green"})" "\n"
    R"({"anchor": "green lime", "positive": "limes are green", "negative": "limes are blue"})" "\n"
    R"({"anchor": "yellow lemon", "positive": "lemons are yellow", "negative": "lemons are red"})" "\n"
    R"({"anchor": "orange orange", "positive": "oranges are orange", "negative": "oranges are blue"})" "\n";

const char* kValidationPairs =
    R"({"anchor": "red cherry", "positive": "cherries are red", "negative": "plums are purple"})" "\n"
    R"({"anchor": "purple plum", "positive": "plums are purple", "negative": "cherries are red"})" "\n";

// A tiny run over kTrainPairs (written into `folder`): one layer of width 16, no dropout, the
// six rows in one batch, `steps` steps, no evaluation.
retrieval::RunConfig tiny_run(const ScratchFolder& folder, int64_t steps) {
    retrieval::RunConfig config = pairs::pairs_app().defaults;
    config.data = folder.write("train.jsonl", kTrainPairs);
    config.d_model = 16;
    config.nhead = 2;
    config.dim_feedforward = 32;
    config.num_layers = 1;
    config.dropout = 0;
    config.max_query_length = config.max_passage_length = 12;
    config.batch_size = 6;
    config.max_steps = steps;
    config.warmup_steps = 0;
    config.evaluate_every = 0;
    return config;
}

// A small tokenizer over every text of `dataset`, saved in `folder`.
data::Tokenizer small_tokenizer(const data::RetrievalDataset& dataset, const ScratchFolder& folder) {
    std::vector<std::string> texts;
    for (const data::Query& query : dataset.queries) texts.push_back(query.text);
    for (const data::Passage& passage : dataset.passages) texts.push_back(passage.text);
    data::TokenizerOptions options;
    options.vocab_size = 30;
    options.character_coverage = 1.0;
    return data::Tokenizer::train(texts, options, (folder.path / "tokenizer").string());
}

// The loss of the last step of training a fresh model of `config` on `train`; the run's
// files go to folder/name.
double last_training_loss(const retrieval::RunConfig& config, const data::Tokenizer& tokenizer,
                          const data::RetrievalDataset& train, const ScratchFolder& folder, const std::string& name) {
    std::unique_ptr<nn::EmbeddingModel> model = retrieval::make_text_encoder(config, tokenizer.vocab_size());
    retrieval::RunFiles files((folder.path / name).string());
    retrieval::create_output_folder(files.output);
    return retrieval::train_text_encoder(*model, tokenizer, train, data::RetrievalDataset{}, config, files)
        .result.last_loss;
}

}  // namespace

TEST_CASE("pairs data set: the validation file is measured, the corpus searched, negatives never relevant") {
    ScratchFolder folder("split");
    retrieval::RunConfig config = pairs::pairs_app().defaults;
    config.data = folder.write("train.jsonl", kTrainPairs);
    config.app["validation"] = folder.write("validation.jsonl", kValidationPairs);
    config.app["corpus"] = folder.write("corpus.txt", "pears are green\n\nkiwis are brown\n");
    config.validation_fraction = 0.34;  // 2 of the 6 training queries

    data::RetrievalDataset dataset = pairs::load_pairs_dataset(config);
    CHECK(dataset.queries.size() == 8);
    data::DatasetSplits splits = pairs::split_pairs_dataset(dataset, config);
    CHECK(splits.train.queries.size() == 4);
    CHECK(splits.validation.queries.size() == 2);
    REQUIRE(splits.test.queries.size() == 2);
    CHECK(splits.test.queries[0].text == "red cherry");
    CHECK(splits.test.queries[1].text == "purple plum");
    std::vector<std::string> searched;
    for (const data::Passage& passage : splits.test.passages) searched.push_back(passage.text);
    CHECK(searched == Names{"cherries are red", "plums are purple", "pears are green", "kiwis are brown"});
    eval::RelevantSets relevant = eval::relevant_sets(splits.test);
    CHECK(relevant == eval::RelevantSets{{0}, {1}});  // each query's negative is the other's positive, not relevant
    int64_t marked = 0;
    for (const data::Relevance& entry : splits.train.relevance) marked += entry.hard_negative ? 1 : 0;
    CHECK(marked == 4);  // the training side keeps its negatives for the losses

    // Without --validation: three ways by query, the corpus on the test side.
    config.app.erase("validation");
    config.validation_fraction = 0.2;
    config.test_fraction = 0.34;
    splits = pairs::split_pairs_dataset(pairs::load_pairs_dataset(config), config);
    CHECK(splits.train.queries.size() + splits.validation.queries.size() + splits.test.queries.size() == 6);
    CHECK(splits.test.queries.size() == 2);
    CHECK(splits.test.passages.back().text == "kiwis are brown");

    // A loss that does not fit the training file's columns stops the load.
    config.loss = "multi_positive";
    CHECK_ERROR_MENTIONS(pairs::load_pairs_dataset(config), "--loss multi_positive does not fit " + config.data);
}

TEST_CASE("training: --mini-batch-size (GradCache) follows the plain run step for step") {
    // Without dropout, GradCache computes the same loss and gradient as the whole batch at
    // once (nn/grad_cache.h); after three AdamW steps the losses agree to rounding.
    ScratchFolder folder("grad_cache");
    retrieval::RunConfig config = tiny_run(folder, 3);
    data::RetrievalDataset train = pairs::load_pairs_dataset(config);
    std::erase_if(train.relevance, [](const data::Relevance& entry) { return entry.hard_negative; });
    data::Tokenizer tokenizer = small_tokenizer(train, folder);
    auto last_loss = [&](int64_t mini_batch_size, const std::string& name) {
        retrieval::RunConfig run = config;
        run.mini_batch_size = mini_batch_size;
        return last_training_loss(run, tokenizer, train, folder, name);
    };
    double plain = last_loss(0, "plain");
    double cached = last_loss(2, "cached");
    CHECK(cached == doctest::Approx(plain).epsilon(1e-4));
    CHECK(last_loss(4, "cached_uneven") == doctest::Approx(plain).epsilon(1e-4));  // 6 rows: 4 + 2

    // matryoshka through GradCache: the nested prefixes' gradient equals the uncached one.
    config.loss = "matryoshka";
    double nested = last_loss(0, "matryoshka_plain");
    CHECK(last_loss(2, "matryoshka_cached") == doctest::Approx(nested).epsilon(1e-4));
    CHECK(nested != doctest::Approx(plain).epsilon(1e-3));  // a different loss, not infonce again

    config.loss = "triplet";
    config.mini_batch_size = 2;
    CHECK_ERROR_MENTIONS(retrieval::validate_run_config(config),
                         "mini_batch_size (GradCache) works with infonce, infonce_symmetric and matryoshka, not triplet");
}

TEST_CASE("training: infonce takes the data's negatives as extra candidates") {
    // One step from the same model on the same batch, with and without the negatives (texts
    // that are no row's positive): every extra candidate adds a positive term under the
    // log-sum-exp, so the loss must grow.
    ScratchFolder folder("negatives");
    retrieval::RunConfig config = tiny_run(folder, 1);
    data::RetrievalDataset with_negatives = pairs::load_pairs_dataset(config);
    data::RetrievalDataset without_negatives = with_negatives;
    std::erase_if(without_negatives.relevance, [](const data::Relevance& entry) { return entry.hard_negative; });
    REQUIRE(without_negatives.relevance.size() == 6);
    data::Tokenizer tokenizer = small_tokenizer(with_negatives, folder);
    auto first_step_loss = [&](const data::RetrievalDataset& train, const std::string& name) {
        return last_training_loss(config, tokenizer, train, folder, name);
    };
    double with = first_step_loss(with_negatives, "with");
    double without = first_step_loss(without_negatives, "without");
    CHECK(std::isfinite(without));
    CHECK(with > without + 0.05);
}

TEST_CASE("training: the prompts are text written before every query and passage the model reads") {
    // Training with --query-prompt and --passage-prompt equals training without them on data
    // whose texts already begin with the prompts, step for step: the plain path (with the
    // data's negatives as extra candidates) and GradCache alike; and it differs from the bare data.
    ScratchFolder folder("prompts");
    retrieval::RunConfig config = tiny_run(folder, 2);
    data::RetrievalDataset bare = pairs::load_pairs_dataset(config);
    data::RetrievalDataset written = bare;
    for (data::Query& query : written.queries) query.text = "red " + query.text;
    for (data::Passage& passage : written.passages) passage.text = "are " + passage.text;
    data::Tokenizer tokenizer = small_tokenizer(bare, folder);
    retrieval::RunConfig prompted = config;
    prompted.query_prompt = "red ";
    prompted.passage_prompt = "are ";
    for (int64_t mini_batch_size : {0, 2}) {
        CAPTURE(mini_batch_size);
        data::RetrievalDataset bare_rows = bare, written_rows = written;
        if (mini_batch_size > 0)  // GradCache caches queries and positives only
            for (data::RetrievalDataset* rows : {&bare_rows, &written_rows})
                std::erase_if(rows->relevance, [](const data::Relevance& entry) { return entry.hard_negative; });
        retrieval::RunConfig with_prompts = prompted, without = config;
        with_prompts.mini_batch_size = without.mini_batch_size = mini_batch_size;
        std::string name = std::to_string(mini_batch_size);
        double by_prompt = last_training_loss(with_prompts, tokenizer, bare_rows, folder, "prompted" + name);
        double by_text = last_training_loss(without, tokenizer, written_rows, folder, "written" + name);
        double unprompted = last_training_loss(without, tokenizer, bare_rows, folder, "bare" + name);
        CHECK(by_prompt == by_text);
        CHECK(by_prompt != unprompted);
    }
}

TEST_CASE("training table: each row computes the loss it is named after, in every form it offers") {
    // Four queries with three scored answers each and one marked negative: data every loss can
    // draw its batches from (groups, ranks, scores in [0, 1] that differ, negatives).
    data::RetrievalDataset train;
    train.name = "fruits";
    const Names fruits{"apple", "banana", "grape", "lime"};
    for (size_t q = 0; q < fruits.size(); ++q) {
        train.queries.push_back({fruits[q], "which " + fruits[q] + " tastes best?", fruits[q]});
        for (int64_t k = 0; k < 4; ++k) {
            data::Relevance entry;
            entry.query = static_cast<int64_t>(q);
            entry.passage = static_cast<int64_t>(train.passages.size());
            entry.rank = k;
            entry.score = k < 3 ? 0.9 - 0.4 * static_cast<double>(k) : 0.0;
            entry.hard_negative = k == 3;
            train.relevance.push_back(entry);
            train.passages.push_back({fmt::format("{}-{}", fruits[q], k), fmt::format("answer {} on the {}: sweet, juicy, ripe or sour", k, fruits[q]),
                                     fruits[q]});
        }
    }
    ScratchFolder folder("table");
    retrieval::RunConfig config = tiny_run(folder, 1);
    data::Tokenizer tokenizer = small_tokenizer(train, folder);
    std::unique_ptr<nn::EmbeddingModel> model = retrieval::make_text_encoder(config, tokenizer.vocab_size());
    Generator generator(3);
    std::vector<std::vector<int64_t>> hard_negatives(train.queries.size());
    for (const data::Relevance& entry : train.relevance)
        if (entry.hard_negative) hard_negatives[static_cast<size_t>(entry.query)].push_back(entry.passage);

    for (const retrieval::TrainingLoss& loss : retrieval::training_losses()) {
        const std::string name = loss.name;
        CAPTURE(name);
        config.loss = name;
        const losses::LossArguments parameters = losses::make_parameters(losses::find_loss(name), {});
        data::BatchOptions options;
        options.strategy = loss.strategy;
        options.batch_size = 16;
        data::BatchPlan plan = data::make_batches(train, options);
        REQUIRE(!plan.batches.empty());
        REQUIRE(plan.batches.front().rows.size() >= loss.minimum_rows);
        const retrieval::BatchContext context{loss,       *model, tokenizer,  plan.batches.front(), train, hard_negatives,
                                              config.max_query_length, config.max_passage_length, parameters,
                                              generator};
        if (loss.check_data) CHECK_NOTHROW(loss.check_data(train));
        Var value = loss.batch_loss(context);
        REQUIRE(value.requires_grad());
        CHECK(value.node()->op == name);
        CHECK(std::isfinite(value.value().item()));
        Var q = Var::parameter(generator.normal({4, config.d_model}, Dtype::Float32));
        Var p = Var::parameter(generator.normal({4, config.d_model}, Dtype::Float32));
        if (loss.grad_cache_loss) CHECK(loss.grad_cache_loss(q, p, Var(), parameters).node()->op == name);
        if (loss.distributed_loss) CHECK(std::isfinite(loss.distributed_loss(q, p, Var(), parameters).value().item()));
    }
}
