#include "retrieval/code/pretrained_teacher.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "retrieval/code/teacher_features.h"
#include "retrieval/settings/run_config.h"
#include "retrieval/model/text_model.h"
#include "data/tokenizer.h"
#include "engine/error.h"
#include "nn/bert_encoder.h"

namespace nce::code {

void write_pretrained_teacher_features(const std::string& folder, const data::RetrievalDataset& corpus,
                                       const PretrainedTeacherOptions& options) {
    check_new_feature_folder(folder);
    NCE_CHECK(options.tokens >= 3 && options.max_body_tokens >= 3 && options.batch_size >= 1,
              "make-features: --tokens must be at least 3 (got {})", options.tokens);
    const int64_t n = static_cast<int64_t>(corpus.queries.size());
    NCE_CHECK(n >= 2, "make-features: {} has {} functions; the features need at least 2", corpus.name, n);
    // Each function's body: the passage its query is answered by (one per function).
    std::vector<std::string> bodies(static_cast<size_t>(n));
    for (const data::Relevance& entry : corpus.relevance)
        bodies[static_cast<size_t>(entry.query)] = corpus.passages[static_cast<size_t>(entry.passage)].text;

    retrieval::RunConfig config;
    config.dropout = 0;
    std::unique_ptr<nn::EmbeddingModel> model =
        retrieval::load_pretrained_folder(options.model_folder, config, /*print_notes=*/false);
    auto* bert = dynamic_cast<nn::BertEncoder*>(model.get());
    NCE_CHECK(bert != nullptr, "make-features --init {}: its model is no bert encoder; token states are read from "
              "bert models (all-MiniLM-L6-v2, BGE, E5)", options.model_folder);
    const data::Tokenizer tokenizer = data::Tokenizer::load(options.model_folder);
    const int64_t tokens = std::min(options.tokens, model->config().max_len);
    const int64_t width = model->config().d_model;

    // The signatures' token states, a batch at a time.   features [N, T, D], mask [N, T]
    Tensor features = Tensor::zeros({n, tokens, width}, Dtype::Float32);
    Tensor mask = Tensor::zeros({n, tokens}, Dtype::Int64);
    {
        NoGradGuard no_grad;
        model->train(false);
        float* f = features.data<float>();
        int64_t* m = mask.data<int64_t>();
        for (int64_t first = 0; first < n; first += options.batch_size) {
            const int64_t last = std::min(n, first + options.batch_size);
            std::vector<std::string> texts;
            for (int64_t i = first; i < last; ++i) texts.push_back(corpus.queries[static_cast<size_t>(i)].text);
            texts = retrieval::with_prompt(model->config().query_prompt, std::move(texts));
            data::EncodedBatch batch = tokenizer.encode(texts, tokens);
            Tensor states = bert->token_states(batch.ids, batch.mask, nullptr).value().to(Dtype::Float32);  // [B, used, D]
            const int64_t used = batch.ids.size(1);  // [B, used, D], used <= tokens
            const float* s = states.data<float>();
            const int64_t* batch_mask = batch.mask.data<int64_t>();
            for (int64_t b = 0; b < last - first; ++b)
                for (int64_t t = 0; t < used; ++t) {
                    m[(first + b) * tokens + t] = batch_mask[b * used + t];
                    std::memcpy(f + ((first + b) * tokens + t) * width, s + (b * used + t) * width,
                                sizeof(float) * static_cast<size_t>(width));
                }
        }
    }
    // The bodies as the model embeds a passage.   [N, D]
    Tensor body_embeddings =
        retrieval::encode_texts(*model, tokenizer, retrieval::with_prompt(model->config().passage_prompt, bodies),
                                options.max_body_tokens, options.batch_size);
    // Groups numbered in order of first appearance.   [N]
    Tensor groups = Tensor::zeros({n}, Dtype::Int64);
    std::map<std::string, int64_t> group_number;
    for (int64_t i = 0; i < n; ++i) {
        auto [at, added] = group_number.emplace(corpus.queries[static_cast<size_t>(i)].group,
                                                static_cast<int64_t>(group_number.size()));
        groups.data<int64_t>()[i] = at->second;
    }
    write_teacher_features(folder, features, mask, body_embeddings, groups);
}

}  // namespace nce::code
