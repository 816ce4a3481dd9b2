#include "nn/grad_cache.h"

#include <algorithm>
#include <vector>

namespace nce::nn {

namespace {

// One mini-batch: rows [begin, end) of the query side or the passage side, and where the
// dropout generator stood before and after step (a) embedded it.
struct MiniBatch {
    bool is_query;
    int64_t begin;
    int64_t end;
    uint64_t offset_before = 0;
    uint64_t offset_after = 0;
};

void check_side(const Tensor& input, const Tensor& mask, const char* side) {
    NCE_CHECK(input.defined() && mask.defined(), "grad_cache: the {} input or mask is missing", side);
    NCE_CHECK(input.rank() >= 1 && input.size(0) >= 1, "grad_cache: the {} input has shape {}; it needs rows [B, ...]",
              side, shape_string(input.shape()));
    NCE_CHECK(mask.rank() == 2 && mask.size(0) == input.size(0),
              "grad_cache: the {} mask has shape {} but the {} input has shape {}; the mask must be [B, T]", side,
              shape_string(mask.shape()), side, shape_string(input.shape()));
}

}  // namespace

double grad_cache_step(EmbeddingModel& query_model, EmbeddingModel& passage_model, const PairBatch& batch,
                       const EmbeddingLoss& loss, int64_t mini_batch_size, Generator& generator) {
    check_side(batch.query_input, batch.query_mask, "query");
    check_side(batch.passage_input, batch.passage_mask, "passage");
    NCE_CHECK(mini_batch_size >= 1, "grad_cache: mini-batch size must be at least 1, got {}", mini_batch_size);
    NCE_CHECK(loss != nullptr, "grad_cache: no loss function given");

    // The mini-batches, in the order both passes embed them: the queries', then the passages'.
    std::vector<MiniBatch> mini_batches;
    for (bool is_query : {true, false}) {
        int64_t rows = (is_query ? batch.query_input : batch.passage_input).size(0);
        for (int64_t begin = 0; begin < rows; begin += mini_batch_size)
            mini_batches.push_back({is_query, begin, std::min(begin + mini_batch_size, rows)});
    }
    auto embed = [&](const MiniBatch& mini_batch) {
        EmbeddingModel& model = mini_batch.is_query ? query_model : passage_model;
        const Tensor& input = mini_batch.is_query ? batch.query_input : batch.passage_input;
        const Tensor& mask = mini_batch.is_query ? batch.query_mask : batch.passage_mask;
        return model.encode(slice(input, 0, mini_batch.begin, mini_batch.end),
                            slice(mask, 0, mini_batch.begin, mini_batch.end), &generator);
    };

    // (a) Embed every mini-batch with no graph: only the embeddings E_k [m, d] are kept, the
    //     activations are freed as soon as each forward ends. Record the generator's offset
    //     around each mini-batch so step (c) can draw the same dropout masks again.
    std::vector<Tensor> query_parts, passage_parts;
    {
        NoGradGuard no_graph;
        for (MiniBatch& mini_batch : mini_batches) {
            mini_batch.offset_before = generator.offset();
            Tensor embeddings = embed(mini_batch).value();
            mini_batch.offset_after = generator.offset();
            (mini_batch.is_query ? query_parts : passage_parts).push_back(embeddings);
        }
    }
    uint64_t offset_after_step = generator.offset();

    // (b) The loss on all B embeddings. q_embeddings and p_embeddings are leaves, so the
    //     backward stops at them and leaves dL/dE in their grad(); the log-temperature is the
    //     model's own parameter, so its gradient goes straight into it.
    Var q_embeddings = Var::parameter(concat(query_parts, 0));    // [B, d]
    Var p_embeddings = Var::parameter(concat(passage_parts, 0));  // [B, d]
    query_parts.clear();
    passage_parts.clear();
    Var* log_tau = query_model.log_tau() != nullptr ? query_model.log_tau() : passage_model.log_tau();
    Var loss_value = loss(q_embeddings, p_embeddings, log_tau != nullptr ? *log_tau : Var());
    NCE_CHECK(loss_value.defined() && loss_value.value().numel() == 1,
              "grad_cache: the loss must return one value, got shape {}; reduce it (e.g. mean) to a scalar",
              shape_string(loss_value.shape()));
    NCE_CHECK(loss_value.requires_grad(),
              "grad_cache: the loss does not depend on the embeddings; it has no gradient to carry back");
    loss_value.backward();
    Tensor dloss_dq = q_embeddings.grad();  // [B, d]; undefined if the loss ignores the queries
    Tensor dloss_dp = p_embeddings.grad();  // [B, d]

    // (c) Re-embed each mini-batch, this time with a graph, from the same generator offset,
    //     so the forward is the very function of step (a). Back-propagating its slice of
    //     dL/dE through that graph adds (dL/dE_k) · (dE_k/dθ) to each parameter's grad();
    //     the graph is freed before the next mini-batch is built.
    for (const MiniBatch& mini_batch : mini_batches) {
        const Tensor& dloss_dembeddings = mini_batch.is_query ? dloss_dq : dloss_dp;
        if (!dloss_dembeddings.defined()) continue;
        generator.set_offset(mini_batch.offset_before);
        Var embeddings = embed(mini_batch);  // E_k [m, d], with a graph
        NCE_CHECK(generator.offset() == mini_batch.offset_after,
                  "grad_cache: re-embedding {} rows [{}, {}) drew {} random numbers, the first pass {}; the model "
                  "must draw the same dropout masks from the same generator offset",
                  mini_batch.is_query ? "query" : "passage", mini_batch.begin, mini_batch.end,
                  generator.offset() - mini_batch.offset_before, mini_batch.offset_after - mini_batch.offset_before);
        embeddings.backward(slice(dloss_dembeddings, 0, mini_batch.begin, mini_batch.end));  // dL/dE_k [m, d]
    }

    // Leave the generator where step (a) left it: past every mask this step drew once.
    generator.set_offset(offset_after_step);
    return loss_value.value().item();
}

}  // namespace nce::nn
