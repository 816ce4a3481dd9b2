// Activation checkpointing (engine/activation_checkpoint.h, nn/checkpoint_activations.h):
// training the two models with their encoder layers recomputed in the backward gives the
// same losses, gradients and parameters, bit for bit, as keeping every layer's graph, with
// dropout on, in float32 and float64, over several AdamW steps with gradient accumulation;
// and the checkpointed forward holds fewer bytes until the backward; GradCache agrees as well.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "losses/infonce.h"
#include "losses/infonce_symmetric.h"
#include "nn/checkpoint_activations.h"
#include "nn/grad_cache.h"
#include "nn/model.h"
#include "nn/optimizer.h"
#include "tests/test_helpers.h"

using namespace nce;
using namespace nce::nn;
using nce::testing::kFloatDtypes;

namespace {

ModelConfig text_encoder_config() {
    ModelConfig config;
    config.kind = "text_encoder";
    config.vocab_size = 30;
    config.max_len = 7;
    config.d_model = 8;
    config.nhead = 2;
    config.dim_feedforward = 16;
    config.num_layers = 3;
    config.dropout = 0.2;
    config.activation = "relu";  // relu and its dropout fused in one op
    config.norm_first = true;
    return config;
}

ModelConfig sig_predictor_config() {
    ModelConfig config;
    config.kind = "sig_predictor";
    config.in_dim = 5;
    config.d_model = 8;
    config.nhead = 2;
    config.dim_feedforward = 16;
    config.num_layers = 2;
    config.dropout = 0.2;
    config.activation = "gelu";  // gelu, then a separate dropout op
    config.out_dim = 4;
    config.learnable_temperature = true;
    return config;
}

ModelConfig bert_config() {
    ModelConfig config;
    config.kind = "bert";
    config.vocab_size = 30;
    config.max_len = 7;
    config.max_position_embeddings = 8;
    config.type_vocab_size = 2;
    config.d_model = 8;
    config.nhead = 2;
    config.dim_feedforward = 16;
    config.num_layers = 2;
    config.dropout = 0.2;
    config.activation = "gelu";
    config.layer_norm_eps = 1e-12;
    return config;
}

// [rows, tokens] float 0/1 with padding at the end of some rows (every row keeps a token).
Tensor padded_mask(int64_t rows, int64_t tokens) {
    std::vector<double> mask(static_cast<size_t>(rows * tokens), 0.0);
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t t = 0; t < tokens - r % tokens; ++t) mask[static_cast<size_t>(r * tokens + t)] = 1.0;
    return Tensor::from_vector(mask, {rows, tokens}, Dtype::Float32);
}

// The inputs of one micro-batch: queries and passages (text_encoder: token ids) or
// queries and fixed target embeddings (sig_predictor: features).
struct MicroBatch {
    Tensor queries, query_mask, passages, passage_mask;
    Var targets;  // sig_predictor: [rows, out_dim] unit rows
};

MicroBatch make_micro_batch(const ModelConfig& config, Dtype dtype, int64_t rows, int64_t tokens, Generator& data) {
    MicroBatch batch;
    batch.query_mask = padded_mask(rows, tokens);
    batch.passage_mask = padded_mask(rows, tokens);
    if (config.kind == "text_encoder" || config.kind == "bert") {
        auto ids = [&] {
            std::vector<int64_t> values(static_cast<size_t>(rows * tokens));
            for (int64_t& id : values) id = data.next_index(config.vocab_size);
            return Tensor::from_indices(values, {rows, tokens});
        };
        batch.queries = ids();
        batch.passages = ids();
    } else {
        batch.queries = data.normal({rows, tokens, config.in_dim}, dtype);
        Tensor targets = data.normal({rows, config.out_dim}, dtype);
        batch.targets = Var(div(targets, sqrt(sum(mul(targets, targets), 1, true))));
    }
    return batch;
}

// What a run leaves to compare: every micro-batch's loss, every parameter's gradient before
// each optimizer step, the parameters at the end, and where the dropout stream stands.
struct TrainingTrace {
    std::vector<Tensor> losses;
    std::vector<Tensor> gradients;
    std::vector<Tensor> final_parameters;
    uint64_t dropout_offset = 0;
};

// `steps` AdamW steps from fixed seeds, each accumulating the gradients of two micro-batches
// (so a second backward adds into gradients that already hold a sum; the text encoder is one
// tower for queries and passages, so each backward also sums two uses of every parameter).
TrainingTrace train(const ModelConfig& config, Dtype dtype, bool checkpointing, int steps) {
    Generator init(5), data(23), dropout(17);
    std::unique_ptr<EmbeddingModel> model = make_model(config, init, dtype);
    set_checkpoint_activations(*model, checkpointing);
    REQUIRE(checkpoint_activations(*model) == checkpointing);
    model->train(true);
    AdamW optimizer(model->parameters(), AdamWOptions{.learning_rate = 1e-2});
    std::vector<MicroBatch> micro_batches = {make_micro_batch(config, dtype, 4, 5, data),
                                             make_micro_batch(config, dtype, 3, 5, data)};

    TrainingTrace trace;
    for (int step = 0; step < steps; ++step) {
        optimizer.zero_grad();
        for (const MicroBatch& batch : micro_batches) {
            Var queries = model->encode(batch.queries, batch.query_mask, &dropout);  // [rows, d]
            Var loss = batch.targets.defined()
                           ? losses::infonce(queries, batch.targets, Var(), *model->log_tau())
                           : losses::infonce_symmetric(queries, model->encode(batch.passages, batch.passage_mask, &dropout),
                                                       Var(), Var(), 0.05);
            loss.backward();
            trace.losses.push_back(loss.value());
        }
        for (Var* parameter : model->parameters()) trace.gradients.push_back(parameter->grad());
        optimizer.step();
    }
    for (Var* parameter : model->parameters()) trace.final_parameters.push_back(parameter->value());
    trace.dropout_offset = dropout.offset();
    return trace;
}

// Same dtype, shape and bytes (memcmp: -0 against 0 or two NaNs would differ too).
bool bit_identical(const Tensor& a, const Tensor& b) {
    if (a.defined() != b.defined()) return false;
    if (!a.defined()) return true;
    return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

void check_bit_identical(const std::vector<Tensor>& plain, const std::vector<Tensor>& checkpointed, const char* what) {
    REQUIRE(plain.size() == checkpointed.size());
    int differing = 0;
    for (size_t i = 0; i < plain.size(); ++i) {
        REQUIRE(plain[i].defined());
        if (!bit_identical(plain[i], checkpointed[i])) ++differing;
    }
    CHECK_MESSAGE(differing == 0, differing << " of " << plain.size() << " " << std::string(what) << " differ");
}

}  // namespace

TEST_CASE("checkpoint_activations: losses, gradients and AdamW steps equal the stored-activation ones bit for bit") {
    for (const ModelConfig& config : {text_encoder_config(), sig_predictor_config(), bert_config()}) {
        for (Dtype dtype : kFloatDtypes) {
            CAPTURE(config.kind);
            const std::string dtype_text = dtype_name(dtype);
            CAPTURE(dtype_text);
            const int steps = 3;
            TrainingTrace plain = train(config, dtype, false, steps);
            TrainingTrace checkpointed = train(config, dtype, true, steps);
            CHECK(plain.losses.size() == 2 * steps);
            check_bit_identical(plain.losses, checkpointed.losses, "losses");
            check_bit_identical(plain.gradients, checkpointed.gradients, "parameter gradients");
            check_bit_identical(plain.final_parameters, checkpointed.final_parameters, "final parameters");
            // The recomputation replays the dropout draws and then puts the stream back.
            CHECK(plain.dropout_offset == checkpointed.dropout_offset);
            CHECK(plain.dropout_offset > 0);
        }
    }
}

TEST_CASE("checkpoint_activations: the forward keeps fewer bytes alive until the backward") {
    ModelConfig config = text_encoder_config();
    config.num_layers = 4;
    config.max_len = 32;
    config.d_model = 32;
    config.dim_feedforward = 128;
    // Bytes the allocator has handed out and not had back, from before encode to after the
    // loss (the graph's saved tensors), then the same loss and gradients after the backward.
    auto forward_bytes = [&](bool checkpointing, std::vector<Tensor>& gradients) {
        Generator init(5), data(23), dropout(17);
        std::unique_ptr<EmbeddingModel> model = make_model(config, init, Dtype::Float32);
        set_checkpoint_activations(*model, checkpointing);
        model->train(true);
        MicroBatch batch = make_micro_batch(config, Dtype::Float32, 8, 32, data);
        const std::size_t before = CachingAllocator::host().stats().bytes_in_use;
        Var loss = losses::infonce_symmetric(model->encode(batch.queries, batch.query_mask, &dropout),
                                             model->encode(batch.passages, batch.passage_mask, &dropout), Var(),
                                             Var(), 0.05);
        const std::size_t after = CachingAllocator::host().stats().bytes_in_use;
        loss.backward();
        for (Var* parameter : model->parameters()) gradients.push_back(parameter->grad());
        return after - before;
    };
    std::vector<Tensor> plain_gradients, checkpointed_gradients;
    const std::size_t plain = forward_bytes(false, plain_gradients);
    const std::size_t checkpointed = forward_bytes(true, checkpointed_gradients);
    MESSAGE("bytes alive after the forward: " << plain << " stored, " << checkpointed << " checkpointed");
    // Four layers each keep their q, k, v, attention, feed-forward and norm values without
    // checkpointing, and only their [B, T, D] input with it: at least a factor of 3.
    CHECK(checkpointed * 3 < plain);
    check_bit_identical(plain_gradients, checkpointed_gradients, "parameter gradients");
}

TEST_CASE("checkpoint: with gradients off or in eval mode it is the plain function") {
    Generator init(5), data(23), dropout(17);
    std::unique_ptr<EmbeddingModel> model = make_model(text_encoder_config(), init, Dtype::Float64);
    MicroBatch batch = make_micro_batch(text_encoder_config(), Dtype::Float64, 3, 4, data);
    model->train(false);
    Var plain = model->encode(batch.queries, batch.query_mask, nullptr);
    set_checkpoint_activations(*model, true);
    Var checkpointed = model->encode(batch.queries, batch.query_mask, nullptr);
    CHECK(bit_identical(plain.value(), checkpointed.value()));
    {
        NoGradGuard no_graph;
        model->train(true);
        Var no_graph_output = model->encode(batch.queries, batch.query_mask, &dropout);
        CHECK_FALSE(no_graph_output.requires_grad());
    }
}

TEST_CASE("checkpoint_activations: a GradCache step's gradients are bit-identical too") {
    for (Dtype dtype : kFloatDtypes) {
        auto gradients = [&](bool checkpointing) {
            Generator init(5), data(23), dropout(17);
            std::unique_ptr<EmbeddingModel> model = make_model(text_encoder_config(), init, dtype);
            set_checkpoint_activations(*model, checkpointing);
            model->train(true);
            MicroBatch batch = make_micro_batch(text_encoder_config(), dtype, 6, 5, data);
            PairBatch pairs{batch.queries, batch.query_mask, batch.passages, batch.passage_mask};
            EmbeddingLoss loss = [](const Var& q, const Var& p, const Var&) {
                return losses::infonce_symmetric(q, p, Var(), Var(), 0.05);
            };
            std::vector<Tensor> result{Tensor::scalar(grad_cache_step(*model, *model, pairs, loss, 4, dropout), dtype)};
            for (Var* parameter : model->parameters()) result.push_back(parameter->grad());
            return result;
        };
        check_bit_identical(gradients(false), gradients(true), "GradCache loss and gradients");
    }
}
