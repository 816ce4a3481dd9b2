// What an op or a training step asks of the GPU, counted in the host-run build of the CUDA
// backend (engine/cuda/profile.h counts the same way on a GPU), and held to limits: the
// InfoNCE family reads nothing back and uploads nothing, a training step waits on the GPU
// a bounded number of times. A count that grows past its limit fails here, in CI, long
// before anyone measures the GPU.
#include <doctest/doctest.h>

#include <cstdio>
#include <memory>

#include "engine/cuda/profile.h"
#include "losses/infonce.h"
#include "losses/infonce_symmetric.h"
#include "nn/model.h"
#include "nn/optimizer.h"
#include "tests/cuda_parity_harness.h"
#include "tests/test_helpers.h"

using namespace nce;
using namespace nce::testing;

namespace {

using cuda::profile::Counts;

// The counts of running `work` once (after one run to warm up whatever runs once).
template <typename Work>
Counts counts_of(const Work& work, const char* what) {
    work();
    cuda::profile::reset();
    work();
    const Counts counts = cuda::profile::counts();
    MESSAGE(std::string(what) << ": " << cuda::profile::describe(counts));
    return counts;
}

Var device_rows(int64_t rows, int64_t dim, uint64_t seed) {
    return Var::parameter(parity_values({rows, dim}, seed).to(Dtype::Float32).to(Device::CUDA));
}

}  // namespace

TEST_CASE("cuda counts: InfoNCE forward and backward read nothing back and upload nothing") {
    const Var q = device_rows(96, 16, 1), p = device_rows(96, 16, 2), negatives = device_rows(40, 16, 3);
    const Var log_tau(Tensor::scalar(std::log(0.1), Dtype::Float32).to(Device::CUDA), true);
    struct Case {
        const char* name;
        std::function<Var()> loss;
        int64_t max_launches;
    };
    const std::vector<Case> cases = {
        {"infonce", [&] { return losses::infonce(q, p, Var(), Var(), 0.05); }, 12},
        {"infonce with negatives", [&] { return losses::infonce(q, p, negatives, Var(), 0.05); }, 16},
        {"infonce in blocks of 32 rows",
         [&] { return losses::infonce(q, p, Var(), Var(), 0.05, losses::LogitBlocking{32}); }, 20},
        {"infonce_symmetric", [&] { return losses::infonce_symmetric(q, p, Var(), Var(), 0.05); }, 26},
    };
    for (const Case& c : cases) {
        const Counts counts = counts_of(
            [&] {
                Var loss = c.loss();
                loss.backward();
            },
            c.name);
        INFO(c.name);
        CHECK(counts.readbacks == 0);
        CHECK(counts.uploads == 0);
        CHECK(counts.launches <= c.max_launches);
    }
    // A learnable temperature is read once, as the clamp needs it on the host.
    const Counts learnable = counts_of(
        [&] {
            Var loss = losses::infonce(q, p, Var(), log_tau, 0.05);
            loss.backward();
        },
        "infonce with a learnable tau");
    CHECK(learnable.readbacks == 1);
    CHECK(learnable.uploads == 0);
    // ntxent uploads its 2B target columns and its 2B diagonal columns, never a 2B x 2B
    // one-hot or mask (96 int64s each here, where it sent 2 x 9,216 numbers); the one
    // read-back is its input check (check_matrix's finiteness); loss and dy stay on the device.
    const Counts ntxent = counts_of(
        [&] {
            Var loss = losses::ntxent(q, Var(), 0.1);
            loss.backward();
        },
        "ntxent");
    CHECK(ntxent.readbacks == 1);
    CHECK(ntxent.uploads == 2);
}

TEST_CASE("cuda parity: the device InfoNCE sweep in blocks equals the whole-matrix sweep") {
    for (Dtype dtype : {Dtype::Float64, Dtype::Float32}) {
        const Tensor q = parity_values({50, 8}, 4).to(dtype).to(Device::CUDA);
        const Tensor p = parity_values({50, 8}, 5).to(dtype).to(Device::CUDA);
        const Tensor negatives = parity_values({13, 8}, 6).to(dtype).to(Device::CUDA);
        auto run = [&](int64_t block_rows, bool symmetric) {
            Var vq = Var::parameter(q), vp = Var::parameter(p), vn = Var::parameter(negatives);
            losses::LogitBlocking blocking{block_rows};
            Var loss = symmetric ? losses::infonce_symmetric(vq, vp, vn, Var(), 0.07, blocking)
                                 : losses::infonce(vq, vp, vn, Var(), 0.07, blocking);
            loss.backward();
            return std::vector<Tensor>{loss.value(), vq.grad(), vp.grad(), vn.grad()};
        };
        for (bool symmetric : {false, true}) {
            const std::vector<Tensor> whole = run(0, symmetric);
            for (int64_t block_rows : {1, 7, 32, 50}) {
                INFO(dtype_name(dtype) << (symmetric ? " symmetric" : "") << " block_rows " << block_rows);
                const std::vector<Tensor> blocked = run(block_rows, symmetric);
                for (size_t k = 0; k < whole.size(); ++k) check_close(blocked[k], whole[k].to(Device::CPU), "blocked against whole");
            }
        }
    }
}

namespace {

// One AdamW training step of `config` on the device: two encodes, infonce, backward, step,
// and the loss read back as a trainer logs it.
Counts step_counts(const nn::ModelConfig& config, const Tensor& queries, const Tensor& positives, const Tensor& mask,
                   const char* what) {
    Generator init(31), dropout(32);
    std::unique_ptr<nn::EmbeddingModel> model = nn::make_model(config, init, Dtype::Float32);
    model->to(Device::CUDA);
    nn::AdamW optimizer(model->parameters(), nn::AdamWOptions{});
    return counts_of(
        [&] {
            optimizer.zero_grad();
            Var loss = losses::infonce(model->encode(queries, mask, &dropout), model->encode(positives, mask, &dropout),
                                       Var(), Var(), 0.05);
            loss.backward();
            optimizer.step();
            (void)loss.value().item();
        },
        what);
}

}  // namespace

TEST_CASE("cuda counts: a training step waits on the GPU a bounded number of times") {
    nn::ModelConfig sig_predictor;
    sig_predictor.kind = "sig_predictor";
    sig_predictor.in_dim = 6;
    sig_predictor.out_dim = 4;
    sig_predictor.d_model = 8;
    sig_predictor.nhead = 2;
    sig_predictor.dim_feedforward = 16;
    sig_predictor.num_layers = 2;
    const Tensor mask = Tensor::full({6, 5}, 1.0, Dtype::Float32).to(Device::CUDA);
    const Tensor features = parity_values({6, 5, 6}, 7).to(Dtype::Float32).to(Device::CUDA);
    const Counts sig = step_counts(sig_predictor, features, features * 0.5, mask, "sig_predictor step");

    nn::ModelConfig text_encoder;
    text_encoder.kind = "text_encoder";
    text_encoder.vocab_size = 23;
    text_encoder.max_len = 9;
    text_encoder.d_model = 8;
    text_encoder.nhead = 2;
    text_encoder.dim_feedforward = 12;
    text_encoder.num_layers = 2;
    std::vector<int64_t> ids(6 * 5);
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 7 + 3) % 23);
    const Tensor queries = Tensor::from_indices(ids, {6, 5}).to(Device::CUDA);
    for (int64_t& id : ids) id = (id + 5) % 23;
    const Tensor positives = Tensor::from_indices(ids, {6, 5}).to(Device::CUDA);
    const Counts text = step_counts(text_encoder, queries, positives, mask, "text_encoder step");

    nn::ModelConfig bert = text_encoder;
    bert.kind = "bert";
    bert.activation = "gelu";
    bert.layer_norm_eps = 1e-12;
    bert.max_position_embeddings = 12;
    bert.type_vocab_size = 2;
    const Counts bert_step = step_counts(bert, queries, positives, mask, "bert step");

    // The loss read back and nothing uploaded: every id, index and mask is checked on the
    // device; positions (and bert's token type 0) are rows sliced from their tables where they
    // are; AdamW is one launch per parameter; a leaf's first gradient is kept, not copied; a
    // broadcast's gradient is summed straight into its place.
    // bert has more parameters to step (a norm and biases in each sublayer, the embeddings' norm).
    for (const auto& [counts, most_launches] : {std::pair{sig, 300}, std::pair{text, 300}, std::pair{bert_step, 400}}) {
        CHECK(counts.readbacks <= 1);
        CHECK(counts.uploads == 0);
        CHECK(counts.launches <= most_launches);
        CHECK(counts.device_copies == 0);
    }
}

TEST_CASE("cuda counts: a mask row with no token is reported at the next read-back, with the CPU's message") {
    Tensor mask = Tensor::full({3, 4}, 1.0, Dtype::Float32);
    for (int64_t t = 0; t < 4; ++t) mask.data<float>()[4 + t] = 0;  // row 1 empty
    const Var x(parity_values({3, 4, 2}, 9).to(Dtype::Float32).to(Device::CUDA));
    const std::string expected = "masked_mean_pool: row 1 of mask [3, 4] has no valid token";
    CHECK_ERROR_MENTIONS(masked_mean_pool(Var(x.value().to(Device::CPU)), mask), expected);
    Var pooled = masked_mean_pool(x, mask.to(Device::CUDA));  // no wait on the GPU here
    CHECK_ERROR_MENTIONS(pooled.value().to(Device::CPU), expected);
    CHECK(masked_mean_pool(x, Tensor::full({3, 4}, 1.0, Dtype::Float32).to(Device::CUDA)).value().to(Device::CPU).numel() == 6);
}

TEST_CASE("cuda parity: cross_entropy_rows, the InfoNCE sweep's row step, on both backends and against log_softmax") {
    // Rows 0..4 of a [5, 9] block whose targets start at column 3: the loss of row r is
    // -log_softmax(l_r)[3 + r], and the logits become 0.25 · (softmax - one-hot).
    const Tensor logits = parity_values({5, 9}, 12);
    for (const bool want_gradient : {false, true})
        check_tensor_parity(want_gradient ? "cross_entropy_rows gradient" : "cross_entropy_rows loss",
                            [&](const std::vector<Tensor>& inputs) {
                                Tensor block = inputs[0].clone();
                                Tensor row_loss = cross_entropy_rows_inplace(block, 3, 0.25);
                                return want_gradient ? block : row_loss;
                            },
                            {logits});
    Tensor block = logits.clone();
    const std::vector<double> row_loss = cross_entropy_rows_inplace(block, 3, 0.25).to_vector();
    const Tensor log_p = log_softmax(logits);
    for (int64_t r = 0; r < 5; ++r) {
        CHECK(row_loss[static_cast<size_t>(r)] == doctest::Approx(-log_p.at(r * 9 + 3 + r)).epsilon(1e-12));
        for (int64_t j = 0; j < 9; ++j)
            CHECK(block.at(r * 9 + j) ==
                  doctest::Approx(0.25 * (std::exp(log_p.at(r * 9 + j)) - (j == 3 + r ? 1.0 : 0.0))).epsilon(1e-12));
    }
    CHECK_ERROR_MENTIONS(cross_entropy_rows_inplace(block, 5, 1.0), "target columns [5, 10) are outside the 9 columns");
}
