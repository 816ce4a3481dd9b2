// Corpus pretraining by imitating BM25 (see pretraining.h).
#include "retrieval/train/pretraining.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <numeric>

#include "retrieval/index/passage_index.h"
#include "retrieval/embedding/run_device.h"
#include "retrieval/model/text_model.h"
#include "engine/error.h"
#include "losses/losses.h"
#include "nn/checkpoint_activations.h"
#include "nn/memory_estimate.h"
#include "nn/optimizer.h"
#include "nn/trainer.h"

namespace nce::retrieval {
namespace {

constexpr double kTeacherTemperature = 0.1;  // on scores divided by the top one (see pretraining.h)
constexpr double kStudentTemperature = 0.05;
constexpr int64_t kSanitySample = 200;       // pseudo-queries for the top-1 figures
constexpr int64_t kSanityWindows = 2000;     // ... ranked among at most this many windows

// The words of a text: runs of bytes between ASCII white space.
std::vector<std::string> words_of(const std::string& text) {
    std::vector<std::string> words;
    size_t start = std::string::npos;
    for (size_t i = 0; i <= text.size(); ++i) {
        bool space = i == text.size() || text[i] == ' ' || text[i] == '\n' || text[i] == '\t' || text[i] == '\r';
        if (!space && start == std::string::npos) start = i;
        if (space && start != std::string::npos) {
            words.push_back(text.substr(start, i - start));
            start = std::string::npos;
        }
    }
    return words;
}

// [first, last) word ranges of the sentences: a sentence ends after a word ending in . ? !
// and at a line break.
std::vector<std::pair<size_t, size_t>> sentences_of(const std::string& text, const std::vector<std::string>& words) {
    std::vector<std::pair<size_t, size_t>> sentences;
    // Line breaks: the word index each line starts at.
    std::vector<size_t> line_starts;
    size_t word = 0;
    bool in_word = false;
    for (char c : text) {
        bool space = c == ' ' || c == '\n' || c == '\t' || c == '\r';
        if (!space && !in_word) in_word = true;
        if (space && in_word) in_word = false, ++word;
        if (c == '\n') line_starts.push_back(word);  // the next word starts a line
    }
    size_t first = 0;
    for (size_t w = 0; w < words.size(); ++w) {
        char last = words[w].back();
        bool line_ends = std::find(line_starts.begin(), line_starts.end(), w + 1) != line_starts.end();
        if (last == '.' || last == '?' || last == '!' || line_ends || w + 1 == words.size()) {
            sentences.emplace_back(first, w + 1);
            first = w + 1;
        }
    }
    return sentences;
}

// 0 .. count-1 in a seeded random order (Fisher-Yates).
std::vector<int64_t> shuffled_indices(size_t count, Generator& generator) {
    std::vector<int64_t> order(count);
    std::iota(order.begin(), order.end(), 0);
    for (size_t i = count; i > 1; --i)
        std::swap(order[i - 1], order[static_cast<size_t>(generator.next_index(static_cast<int64_t>(i)))]);
    return order;
}

}  // namespace

std::string draw_pseudo_query(const std::string& window_text, Generator& generator) {
    std::vector<std::string> words = words_of(window_text);
    if (words.empty()) return "";
    std::vector<std::pair<size_t, size_t>> sentences = sentences_of(window_text, words), long_enough;
    for (const auto& sentence : sentences)
        if (sentence.second - sentence.first >= 3) long_enough.push_back(sentence);
    const std::vector<std::pair<size_t, size_t>>& pool = long_enough.empty() ? sentences : long_enough;
    auto [first, last] = pool[static_cast<size_t>(generator.next_index(static_cast<int64_t>(pool.size())))];
    size_t available = last - first;
    size_t length = std::min(available, static_cast<size_t>(4 + generator.next_index(9)));  // 4..12 words
    size_t start = first + static_cast<size_t>(generator.next_index(static_cast<int64_t>(available - length + 1)));
    std::vector<std::string> kept, span(words.begin() + static_cast<std::ptrdiff_t>(start),
                                        words.begin() + static_cast<std::ptrdiff_t>(start + length));
    for (const std::string& word : span)
        if (generator.next_uniform() >= 0.2) kept.push_back(word);
    if (kept.size() < std::min<size_t>(3, span.size())) kept.assign(span.begin(), span.begin() + std::min<size_t>(3, span.size()));
    return fmt::format("{}", fmt::join(kept, " "));
}

int64_t pretraining_steps(const RunConfig& config, int64_t windows, int64_t most_steps) {
    if (config.pretrain_steps >= 0) return config.pretrain_steps;
    int64_t one_pass = (windows + config.pretrain_batch_size - 1) / config.pretrain_batch_size;
    return std::min(std::clamp<int64_t>(kPretrainingPasses * one_pass, 50, kMostPretrainingSteps), most_steps);
}

PretrainingReport pretrain_text_encoder(nn::EmbeddingModel& model, const data::Tokenizer& tokenizer,
                                        const std::vector<data::Passage>& passages, eval::LexicalTokens teacher_tokens,
                                        int64_t overlap, const RunConfig& config, const std::string& log_path,
                                        int64_t most_steps, const std::string& progress_phase,
                                        double following_steps) {
    auto start_time = std::chrono::steady_clock::now();
    nn::set_checkpoint_activations(model, config.checkpoint_activations);
    PretrainingReport report;
    report.passages = static_cast<int64_t>(passages.size());
    // Pseudo-queries are queries and the windows passages: the model reads them with its
    // prompts (BM25, the teacher, reads them without). A window leaves room for the prompt.
    const std::string& query_prompt = model.config().query_prompt;
    const std::string& passage_prompt = model.config().passage_prompt;
    std::vector<std::string> windows;
    for (PassageChunk& chunk : chunk_passages(
             passages, tokenizer, passage_window(tokenizer, passage_prompt, config.max_passage_length, overlap), overlap))
        windows.push_back(std::move(chunk.text));
    report.windows = static_cast<int64_t>(windows.size());
    const int64_t candidates = config.pretrain_candidates, rows = config.pretrain_batch_size;
    NCE_CHECK(report.windows > candidates,
              "pretraining: the corpus gives {} windows of text, too few to rank {} candidates per pseudo-query; use "
              "more data, a smaller --pretrain-candidates, or --no-pretrain", report.windows, candidates);
    report.steps = pretraining_steps(config, report.windows, most_steps);
    if (report.steps == 0) return report;
    if (config.device == Device::CPU)  // a step scores each pseudo-query's candidate windows
        nn::check_training_memory(model.config(),
                                  {.query_rows = rows, .query_tokens = config.max_query_length,
                                   .passage_rows = rows * candidates, .passage_tokens = config.max_passage_length,
                                   .checkpoint_activations = config.checkpoint_activations},
                                  "lower --pretrain-batch-size or --pretrain-candidates, or add --checkpoint-activations");

    // Every step's pseudo-queries up front (windows without replacement, reshuffled each
    // pass), so BM25 builds its index once and ranks them all in one call.
    Generator drawing(config.seed * 7919 + 17);
    std::vector<int64_t> order(windows.size());
    std::vector<int64_t> sources;
    std::vector<std::string> queries;
    size_t position = order.size();
    int64_t attempts = 0;
    while (static_cast<int64_t>(queries.size()) < report.steps * rows) {
        if (position == order.size()) {
            order = shuffled_indices(windows.size(), drawing);
            position = 0;
        }
        int64_t source = order[position++];
        std::string query = draw_pseudo_query(windows[static_cast<size_t>(source)], drawing);
        NCE_CHECK(++attempts < 100 * report.steps * rows + 1000,
                  "pretraining: the corpus's windows give no pseudo-query (no words); use --no-pretrain");
        if (query.empty() || tokenizer.encode_ids(query).empty()) continue;
        queries.push_back(std::move(query));
        sources.push_back(source);
    }
    eval::Bm25Parameters bm25{config.bm25_k1, config.bm25_b};
    eval::RankedLists teacher = eval::bm25_rankings(queries, windows, teacher_tokens, bm25, candidates);

    nn::AdamWOptions adam;
    adam.learning_rate = config.learning_rate;
    adam.weight_decay = config.weight_decay;
    nn::AdamW optimizer(model.parameters(), adam);
    nn::TrainerOptions options;
    options.epochs = 1;
    options.steps_per_epoch = report.steps;
    options.max_steps = report.steps;
    options.seed = config.seed + 1;
    nn::LearningRateSchedule schedule;
    schedule.kind = nn::ScheduleKind::Cosine;
    schedule.base_learning_rate = config.learning_rate;
    schedule.warmup_steps = report.steps / 10;
    schedule.total_steps = report.steps;
    options.schedule = schedule;
    options.max_grad_norm = config.max_grad_norm;
    options.metrics_log_path = log_path;
    options.progress_phase = progress_phase;
    options.following_steps = following_steps;
    nn::Trainer trainer(model, optimizer, options);

    auto loss_of = [&](const nn::StepPosition& step, Generator& generator) {
        size_t first = static_cast<size_t>(step.batch_index * rows);
        std::vector<std::string> batch_queries, batch_candidates;
        std::vector<double> scores;  // [rows, K]: BM25 over the top score
        for (size_t r = first; r < first + static_cast<size_t>(rows); ++r) {
            batch_queries.push_back(queries[r]);
            const std::vector<int64_t>& top = teacher.passages[r];
            const std::vector<double>& top_scores = teacher.scores[r];
            double best = top_scores.empty() || top_scores[0] <= 0 ? 1.0 : top_scores[0];
            for (int64_t k = 0; k < candidates; ++k) {
                batch_candidates.push_back(windows[static_cast<size_t>(top[static_cast<size_t>(k)])]);
                scores.push_back(top_scores[static_cast<size_t>(k)] / best);
            }
        }
        data::EncodedBatch encoded_queries =
            tokenizer.encode(with_prompt(query_prompt, std::move(batch_queries)), config.max_query_length);
        data::EncodedBatch encoded_candidates =
            tokenizer.encode(with_prompt(passage_prompt, std::move(batch_candidates)), config.max_passage_length);
        Var q = encode_on_model_device(model, encoded_queries, &generator);                         // [N, d]
        Var c = encode_on_model_device(model, encoded_candidates, &generator);                      // [N*K, d]
        int64_t d = q.value().size(1);
        Tensor teacher_scores = beside(q, Tensor::from_vector(scores, {rows, candidates}, q.value().dtype()));  // [N, K]
        std::vector<int64_t> top_rows;  // row r's top candidate is row r * K of c
        for (int64_t r = 0; r < rows; ++r) top_rows.push_back(r * candidates);
        Var c_top = index_select(c, beside(c, Tensor::from_indices(top_rows, {rows})));           // [N, d]
        Var loss = losses::distill_kl(q, reshape(c, {rows, candidates, d}), teacher_scores, kStudentTemperature,
                                      kTeacherTemperature) +
                   losses::infonce(q, c_top, Var(), Var(), kStudentTemperature);
        return nn::BatchLoss::with_graph(loss, rows);
    };
    nn::TrainingResult result = trainer.fit(loss_of);
    report.last_loss = result.last_loss;
    model.train(false);

    // Sanity figures on a fresh sample: the teacher's and the model's top-1 agreement with the source.
    Generator sampling(config.seed * 7919 + 29);
    std::vector<int64_t> sample_windows = shuffled_indices(windows.size(), sampling);
    sample_windows.resize(std::min<size_t>(sample_windows.size(), kSanityWindows));
    std::vector<std::string> sample_texts, sample_queries;
    std::vector<int64_t> sample_sources;
    for (int64_t w : sample_windows) sample_texts.push_back(windows[static_cast<size_t>(w)]);
    for (size_t i = 0; i < sample_texts.size() && static_cast<int64_t>(sample_queries.size()) < kSanitySample; ++i) {
        std::string query = draw_pseudo_query(sample_texts[i], sampling);
        if (query.empty() || tokenizer.encode_ids(query).empty()) continue;
        sample_queries.push_back(std::move(query));
        sample_sources.push_back(static_cast<int64_t>(i));
    }
    if (!sample_queries.empty()) {
        eval::RankedLists lexical = eval::bm25_rankings(sample_queries, sample_texts, teacher_tokens, bm25, 1);
        Tensor q = encode_texts(model, tokenizer, with_prompt(query_prompt, sample_queries), config.max_query_length,
                                config.encode_batch_size);
        Tensor p = encode_texts(model, tokenizer, with_prompt(passage_prompt, sample_texts), config.max_passage_length,
                                config.encode_batch_size);
        eval::RankedLists dense = eval::dense_rankings(q, p, 1);
        int64_t teacher_hits = 0, model_hits = 0;
        for (size_t i = 0; i < sample_queries.size(); ++i) {
            teacher_hits += lexical.passages[i][0] == sample_sources[i];
            model_hits += dense.passages[i][0] == sample_sources[i];
        }
        report.teacher_top1 = static_cast<double>(teacher_hits) / static_cast<double>(sample_queries.size());
        report.model_top1 = static_cast<double>(model_hits) / static_cast<double>(sample_queries.size());
    }
    report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_time).count();
    return report;
}

}  // namespace nce::retrieval
