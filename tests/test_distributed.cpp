// Distributed training on MPI, proved against one process. tests/distributed_test.sh runs
// this executable under `mpirun -np 2` and `-np 3` (meson test: the suite 'distributed');
// started alone it runs as a world of one process.
//
// The claim: K processes, each embedding its own slice of the global batch and gathering
// the others' embeddings, compute the same loss and the same gradient of every parameter
// as one process on the concatenated batch, to 1e-10 in float64, and after 5 AdamW steps
// hold the same weights to 1e-9. Every rank also computes the one-process reference itself
// (the models are tiny), so each rank checks its own replica against it.
//
// Dropout is 0 in these models: with dropout the ranks draw their masks for their own
// slices, so they cannot draw the masks the one process draws for the whole batch; the
// equality is a statement about the gradient, which dropout would only blur.
//
// Every check is a CHECK, never a REQUIRE: a rank that left a test case early would skip
// collectives the other ranks wait in.
#define DOCTEST_CONFIG_IMPLEMENT
#include "tests/test_helpers.h"

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>

#include "distributed/anchor_rows_infonce.h"
#include "distributed/collectives.h"
#include "distributed/data_parallel.h"
#include "distributed/distributed_losses.h"
#include "distributed/gather_rows.h"
#include "distributed/rank_output_folder.h"
#include "distributed/sharding.h"
#include "distributed/world.h"
#include "losses/losses.h"
#include "nn/grad_cache.h"
#include "nn/model.h"
#include "nn/optimizer.h"
#include "nn/trainer.h"

using namespace nce;
using namespace nce::testing;
namespace dist = nce::distributed;

namespace {

int rank() { return dist::world().rank(); }
int world_size() { return dist::world().size(); }

// ---- the problem: a tiny text encoder and a global batch every rank builds alike ----

nn::ModelConfig tiny_text_encoder() {
    nn::ModelConfig config;
    config.kind = "text_encoder";
    config.vocab_size = 23;
    config.max_len = 6;
    config.out_dim = 6;
    config.d_model = 8;
    config.nhead = 2;
    config.dim_feedforward = 16;
    config.num_layers = 2;
    config.dropout = 0.0;  // see the file comment
    config.learnable_temperature = true;
    return config;
}

// Token ids [rows, 6] and a mask keeping 1 to 6 tokens of each row.
std::pair<Tensor, Tensor> random_texts(int64_t rows, Generator& generator) {
    const int64_t length = 6;
    std::vector<int64_t> ids(static_cast<size_t>(rows * length)), mask(ids.size(), 0);
    for (int64_t& id : ids) id = generator.next_index(23);
    for (int64_t r = 0; r < rows; ++r) {
        int64_t tokens = 1 + generator.next_index(length);
        for (int64_t t = 0; t < tokens; ++t) mask[static_cast<size_t>(r * length + t)] = 1;
    }
    return {Tensor::from_indices(ids, {rows, length}), Tensor::from_indices(mask, {rows, length})};
}

// One global batch: N queries, their N passages (for ntxent: two views of N items) and M
// hard negatives. Rank r embeds its slice of each (distributed/sharding.h).
struct GlobalBatch {
    Tensor query_ids, query_mask, passage_ids, passage_mask, negative_ids, negative_mask;
};

GlobalBatch random_global_batch(int64_t pairs, int64_t negatives, uint64_t seed) {
    Generator generator(seed);
    GlobalBatch batch;
    std::tie(batch.query_ids, batch.query_mask) = random_texts(pairs, generator);
    std::tie(batch.passage_ids, batch.passage_mask) = random_texts(pairs, generator);
    std::tie(batch.negative_ids, batch.negative_mask) = random_texts(negatives, generator);
    return batch;
}

enum class LossKind { InfoNce, InfoNceSymmetric, NtXent };
const char* loss_name(LossKind kind) {
    return kind == LossKind::InfoNce ? "infonce" : kind == LossKind::InfoNceSymmetric ? "infonce_symmetric" : "ntxent";
}
constexpr double kTau = 0.1;  // unused while the model's log_tau is learnable, but checked

// The one-process loss on the whole global batch. ntxent: z = [first views; second views].
Var single_process_loss(LossKind kind, nn::EmbeddingModel& model, const GlobalBatch& batch) {
    Var q = model.encode(batch.query_ids, batch.query_mask, nullptr);
    Var p = model.encode(batch.passage_ids, batch.passage_mask, nullptr);
    Var log_tau = *model.log_tau();
    if (kind == LossKind::NtXent) return losses::ntxent(concat({q, p}, 0), log_tau, kTau);
    Var negatives = model.encode(batch.negative_ids, batch.negative_mask, nullptr);
    if (kind == LossKind::InfoNce) return losses::infonce(q, p, negatives, log_tau, kTau);
    return losses::infonce_symmetric(q, p, negatives, log_tau, kTau);
}

// This rank's share: it embeds only its slice of each part of the batch.
Var distributed_share(LossKind kind, nn::EmbeddingModel& model, const GlobalBatch& batch) {
    Var q = model.encode(dist::local_slice(batch.query_ids), dist::local_slice(batch.query_mask), nullptr);
    Var p = model.encode(dist::local_slice(batch.passage_ids), dist::local_slice(batch.passage_mask), nullptr);
    Var log_tau = *model.log_tau();
    if (kind == LossKind::NtXent) return dist::ntxent(concat({q, p}, 0), log_tau, kTau);
    Var negatives =
        model.encode(dist::local_slice(batch.negative_ids), dist::local_slice(batch.negative_mask), nullptr);
    if (kind == LossKind::InfoNce) return dist::infonce(q, p, negatives, log_tau, kTau);
    return dist::infonce_symmetric(q, p, negatives, log_tau, kTau);
}

// A float64 model whose weights come from `seed`.
std::unique_ptr<nn::EmbeddingModel> model_from_seed(uint64_t seed) {
    Generator init(seed);
    return nn::make_model(tiny_text_encoder(), init, Dtype::Float64);
}

// The replica every rank trains: made from a different seed on each rank, then given rank
// 0's weights by broadcast_parameters, as a run starts.
std::unique_ptr<nn::EmbeddingModel> replica_of_seed(uint64_t seed) {
    auto replica = model_from_seed(seed + 1000 * static_cast<uint64_t>(rank()));
    dist::broadcast_parameters(*replica);
    return replica;
}

void check_same_gradients(nn::Module& replica, nn::Module& reference, double tolerance) {
    auto got = replica.named_parameters(), expected = reference.named_parameters();
    CHECK(got.size() == expected.size());
    for (size_t k = 0; k < std::min(got.size(), expected.size()); ++k) {
        INFO("rank " << rank() << ", parameter " << got[k].first);
        Tensor mine = got[k].second->grad(), theirs = expected[k].second->grad();
        CHECK(mine.defined());
        CHECK(theirs.defined());
        if (!mine.defined() || !theirs.defined()) continue;
        CHECK(max_abs(theirs) > 0);  // a gradient reached it: the comparison means something
        CHECK(max_abs_difference(mine, theirs) <= tolerance);
    }
}

double max_weight_difference(nn::Module& replica, nn::Module& reference) {
    auto got = replica.named_parameters(), expected = reference.named_parameters();
    double largest = 0;
    for (size_t k = 0; k < got.size(); ++k)
        largest = std::max(largest, max_abs_difference(got[k].second->value(), expected[k].second->value()));
    return largest;
}

// A test case that throws on one rank would leave the others waiting in its collectives:
// this listener ends the whole run at once instead, with the exception's message.
struct AbortRunOnException : doctest::IReporter {
    explicit AbortRunOnException(const doctest::ContextOptions&) {}
    void test_case_exception(const doctest::TestCaseException& exception) override {
        if (world_size() > 1) dist::abort_world(std::string("a test case threw: ") + exception.error_string.c_str());
    }
    void report_query(const doctest::QueryData&) override {}
    void test_run_start() override {}
    void test_run_end(const doctest::TestRunStats&) override {}
    void test_case_start(const doctest::TestCaseData&) override {}
    void test_case_reenter(const doctest::TestCaseData&) override {}
    void test_case_end(const doctest::CurrentTestCaseStats&) override {}
    void subcase_start(const doctest::SubcaseSignature&) override {}
    void subcase_end() override {}
    void log_assert(const doctest::AssertData&) override {}
    void log_message(const doctest::MessageData&) override {}
    void test_case_skipped(const doctest::TestCaseData&) override {}
};
REGISTER_LISTENER("abort_run_on_exception", 1, AbortRunOnException);

}  // namespace

TEST_CASE("world: every rank has its own number, 0 to K-1") {
    const char* launched_size = std::getenv("OMPI_COMM_WORLD_SIZE");
    if (launched_size != nullptr) CHECK(world_size() == std::atoi(launched_size));
    std::vector<int64_t> ranks = dist::all_gather_values(rank());
    CHECK(static_cast<int>(ranks.size()) == world_size());
    for (int r = 0; r < world_size(); ++r) CHECK(ranks[static_cast<size_t>(r)] == r);
    CHECK(dist::is_main_rank() == (rank() == 0));
}

TEST_CASE("sharding: slices are contiguous, as even as possible, and cover the batch") {
    for (int size : {1, 2, 3, 5})
        for (int64_t rows : {0, 1, 7, 12}) {
            int64_t next = 0;
            for (int r = 0; r < size; ++r) {
                dist::RowRange range = dist::shard_rows(rows, r, size);
                CHECK(range.begin == next);
                CHECK(range.size() >= rows / size);
                CHECK(range.size() <= rows / size + 1);
                next = range.end;
            }
            CHECK(next == rows);
        }
    CHECK(dist::shuffled_order(9, 4) == dist::shuffled_order(9, 4));
    CHECK(dist::shuffled_order(9, 4) != dist::shuffled_order(9, 5));
    // Every rank drew the same order: rank 0's, broadcast, is its own.
    std::vector<int64_t> order = dist::shuffled_order(9, 4);
    Tensor mine = Tensor::from_indices(order, {9}), mains = mine.clone();
    dist::broadcast_inplace(mains, 0);
    CHECK(mine.to_indices() == mains.to_indices());
}

TEST_CASE("collectives: uneven all-gather, reduce-scatter, all-reduce and broadcast") {
    const int K = world_size(), r = rank();
    // Rank r holds r + 1 rows [r + 1, 2] of value 100 r + row.
    std::vector<double> values;
    for (int row = 0; row <= r; ++row) values.insert(values.end(), {100.0 * r + row, -(100.0 * r + row)});
    std::vector<int64_t> rows_per_rank;
    Tensor gathered = dist::all_gather_rows(Tensor::from_vector(values, {r + 1, 2}, Dtype::Float64), &rows_per_rank);
    CHECK(gathered.size(0) == K * (K + 1) / 2);
    int64_t at = 0;
    for (int owner = 0; owner < K; ++owner) {
        CHECK(rows_per_rank[static_cast<size_t>(owner)] == owner + 1);
        for (int row = 0; row <= owner; ++row, ++at) CHECK(gathered.at(2 * at) == 100.0 * owner + row);
    }

    // Every rank passes rank+1 times the gathered tensor: block s comes back as
    // (1 + 2 + ... + K) times block s, on rank s only.
    Tensor mine = dist::reduce_scatter_rows(gathered * static_cast<double>(r + 1), rows_per_rank);
    CHECK(mine.size(0) == r + 1);
    for (int row = 0; row <= r; ++row) CHECK(mine.at(2 * row) == (100.0 * r + row) * K * (K + 1) / 2);

    CHECK(dist::all_reduce_sum(static_cast<double>(r)) == K * (K - 1) / 2);
    CHECK(dist::all_reduce_max(static_cast<double>(r)) == K - 1);
    Tensor value = Tensor::full({3}, static_cast<double>(r + 7), Dtype::Float32);
    dist::broadcast_inplace(value, K - 1);
    CHECK(value.to_vector() == std::vector<double>(3, K + 6.0));

    if (K > 1) {
        // Ranks that disagree on the row shape all get the same one-line error: none waits.
        Tensor odd = Tensor::zeros({2, r == 0 ? 3 : 4}, Dtype::Float64);
        CHECK_ERROR_MENTIONS(dist::all_gather_rows(odd), "every rank must gather rows of the same shape and dtype");
        Tensor odd_broadcast = Tensor::zeros({r == 0 ? 3 : 4}, Dtype::Float64);
        CHECK_ERROR_MENTIONS(dist::broadcast_inplace(odd_broadcast), "every rank must pass the same shape");
    }
    std::vector<int64_t> one_count_too_many(static_cast<size_t>(K + 1), 0);
    CHECK_ERROR_MENTIONS(dist::reduce_scatter_rows(Tensor::zeros({1, 2}, Dtype::Float64), one_count_too_many),
                         "give one per rank");
}

TEST_CASE("collectives: bytes are counted per collective, in the ring model") {
    const int K = world_size();
    dist::reset_communication_stats();
    Tensor local = Tensor::zeros({2, 5}, Dtype::Float64);  // 80 bytes on every rank
    Tensor gathered = dist::all_gather_rows(local);
    dist::all_reduce_sum_inplace(local);
    const dist::CommunicationStats& stats = dist::communication_stats();
    if (K == 1) {
        CHECK(stats.total().calls == 0);  // one process sends nothing
    } else {
        CHECK(stats.all_gather.calls == 1);
        CHECK(stats.all_gather.payload_bytes == 80);
        CHECK(stats.all_gather.ring_bytes == 80 * (K - 1));
        CHECK(stats.all_reduce.ring_bytes == 2 * 80 * (K - 1) / K);
    }
}

TEST_CASE("gather_rows: the backward (a reduce-scatter) equals finite differences of the summed loss") {
    // Rank r holds x_r [r + 2, 3]; its loss is L_r = sum(tanh(Y) ⊙ W_r) + sum(Y ⊙ Y ⊙ V_r)
    // over its copy of the gathered Y, with weights of its own; the total is L = sum_r L_r.
    const int K = world_size(), r = rank();
    Generator generator(50 + static_cast<uint64_t>(r));
    Var x = Var::parameter(generator.normal({r + 2, 3}, Dtype::Float64));
    const int64_t N = K * (K + 3) / 2;  // sum_r (r + 2)
    Tensor W = generator.normal({N, 3}, Dtype::Float64), V = generator.normal({N, 3}, Dtype::Float64);
    auto total_loss = [&](const Var& local, bool keep_graph) {
        dist::GatheredRows Y = dist::gather_rows(local);
        Var share = sum(tanh(Y.rows) * Var(W)) + sum(Y.rows * Y.rows * Var(V));
        if (keep_graph) share.backward();
        return dist::all_reduce_sum(share.value().item());
    };
    total_loss(x, true);
    Tensor analytic = x.grad();  // [r + 2, 3], this rank's rows only

    // Central differences: every rank evaluates L for each perturbation of each rank's rows.
    const double h = 1e-6;
    double worst = 0;
    for (int owner = 0; owner < K; ++owner)
        for (int64_t element = 0; element < (owner + 2) * 3; ++element) {
            double sides[2];
            for (int side = 0; side < 2; ++side) {
                Tensor moved = x.value().clone();
                if (owner == r) moved.data<double>()[element] += side == 0 ? h : -h;
                NoGradGuard no_graph;
                sides[side] = total_loss(Var(moved), false);
            }
            if (owner == r) worst = std::max(worst, std::abs((sides[0] - sides[1]) / (2 * h) - analytic.at(element)));
        }
    INFO("rank " << r << ": max |analytic - numeric| = " << worst);
    CHECK(worst < 1e-7);
    CHECK(max_abs(analytic) > 0.1);
}

TEST_CASE("anchor_rows_infonce: hand backward equals finite differences, with excluded columns and learnable tau") {
    // One process, no collective: the node every distributed loss builds on. Anchors [3, 4]
    // against 7 candidates; row i's positive is column 2i+1 and, with exclusions, row i
    // leaves column 2i out (as NT-Xent leaves out the anchor itself).
    for (bool exclude : {false, true}) {
        INFO((exclude ? "with" : "without") << " excluded columns");
        std::vector<int64_t> positive{1, 3, 5}, excluded = exclude ? std::vector<int64_t>{0, 2, 4} : std::vector<int64_t>{};
        auto rows_loss = [&](const std::vector<Var>& inputs) {
            return dist::anchor_rows_infonce(inputs[0], inputs[1], positive, excluded, inputs[2], kTau, 1.0 / 7,
                                             "anchor_rows_infonce");
        };
        Generator generator(31);
        GradcheckResult result = gradcheck(rows_loss, {generator.normal({3, 4}, Dtype::Float64),
                                                       generator.normal({7, 4}, Dtype::Float64),
                                                       Tensor::scalar(std::log(0.3), Dtype::Float64)});
        CHECK(result.max_rel_error < 1e-7);
        CHECK(result.passed);
    }
}

TEST_CASE("distributed losses: loss and every parameter's gradient equal one process on the whole batch to 1e-10") {
    // 7 pairs and 5 hard negatives: uneven slices on 2 ranks (4 + 3, 3 + 2) and 3 (3 + 2 + 2, 2 + 2 + 1).
    const GlobalBatch batch = random_global_batch(7, 5, 11);
    for (LossKind kind : {LossKind::InfoNce, LossKind::InfoNceSymmetric, LossKind::NtXent}) {
        INFO(loss_name(kind) << " on " << world_size() << " processes, rank " << rank());
        auto reference = model_from_seed(3);
        Var reference_loss = single_process_loss(kind, *reference, batch);
        reference_loss.backward();

        auto replica = replica_of_seed(3);
        CHECK(max_weight_difference(*replica, *reference) == 0);  // the broadcast gave everyone rank 0's weights
        Var share = distributed_share(kind, *replica, batch);
        share.backward();
        dist::all_reduce_gradients(*replica);
        double global = dist::global_loss(share);

        CHECK(std::abs(global - reference_loss.value().item()) <= 1e-10);
        check_same_gradients(*replica, *reference, 1e-10);
    }
}

TEST_CASE("distributed losses with GradCache: mini-batched re-forward gives the same gradients") {
    // Each rank runs GradCache on its slice with mini-batches of 2: its embeddings are
    // gathered once inside the loss, the loss's gradient for its rows comes back by the
    // reduce-scatter, and the chunked re-forward carries it to the parameters.
    const GlobalBatch batch = random_global_batch(8, 0, 12);
    for (LossKind kind : {LossKind::InfoNce, LossKind::InfoNceSymmetric}) {
        INFO(loss_name(kind) << " on " << world_size() << " processes, rank " << rank());
        auto reference = model_from_seed(5);
        Var q = reference->encode(batch.query_ids, batch.query_mask, nullptr);
        Var p = reference->encode(batch.passage_ids, batch.passage_mask, nullptr);
        Var log_tau = *reference->log_tau();
        Var reference_loss = kind == LossKind::InfoNce ? losses::infonce(q, p, Var(), log_tau, kTau)
                                                       : losses::infonce_symmetric(q, p, Var(), log_tau, kTau);
        reference_loss.backward();

        auto replica = replica_of_seed(5);
        nn::PairBatch local{dist::local_slice(batch.query_ids), dist::local_slice(batch.query_mask),
                            dist::local_slice(batch.passage_ids), dist::local_slice(batch.passage_mask)};
        nn::EmbeddingLoss share_of_loss = [kind](const Var& q_local, const Var& p_local, const Var& log_tau) {
            return kind == LossKind::InfoNce ? dist::infonce(q_local, p_local, Var(), log_tau, kTau)
                                             : dist::infonce_symmetric(q_local, p_local, Var(), log_tau, kTau);
        };
        Generator unused(0);
        double share = nn::grad_cache_step(*replica, *replica, local, share_of_loss, 2, unused);
        dist::all_reduce_gradients(*replica);

        CHECK(std::abs(dist::all_reduce_sum(share) - reference_loss.value().item()) <= 1e-10);
        check_same_gradients(*replica, *reference, 1e-10);
    }
}

TEST_CASE("data-parallel training: after 5 AdamW steps the weights equal one process's to 1e-9") {
    for (LossKind kind : {LossKind::InfoNce, LossKind::InfoNceSymmetric, LossKind::NtXent}) {
        INFO(loss_name(kind) << " on " << world_size() << " processes, rank " << rank());
        // Step s trains on the global batch of seed 100 + s, as a seeded data order gives.
        auto batch_of = [](const nn::StepPosition& position) { return random_global_batch(7, 3, 100 + position.step); };
        nn::TrainerOptions options;
        options.steps_per_epoch = 5;
        options.show_progress = false;

        auto reference = model_from_seed(9);
        nn::AdamW reference_optimizer(reference->parameters(), nn::AdamWOptions{.learning_rate = 1e-2});
        nn::Trainer reference_trainer(*reference, reference_optimizer, options);
        reference_trainer.fit([&](const nn::StepPosition& position, Generator&) {
            return nn::BatchLoss::with_graph(single_process_loss(kind, *reference, batch_of(position)), 7);
        });

        auto replica = replica_of_seed(9);
        nn::AdamW optimizer(replica->parameters(), nn::AdamWOptions{.learning_rate = 1e-2});
        nn::Trainer trainer(*replica, optimizer, dist::options_for_this_rank(options));
        nn::TrainingResult result = trainer.fit(dist::data_parallel_loss(
            [&](const nn::StepPosition& position, Generator&) {
                return nn::BatchLoss::with_graph(distributed_share(kind, *replica, batch_of(position)), 7);
            },
            *replica));

        CHECK(result.steps == 5);
        double moved = max_weight_difference(*replica, *model_from_seed(9));
        CHECK(moved > 1e-3);  // the weights did move: the comparison means something
        CHECK(max_weight_difference(*replica, *reference) <= 1e-9);
        CHECK(dist::max_parameter_difference_from_main(*replica) == 0);  // the replicas stayed identical
    }
}

TEST_CASE("data-parallel trainer: rank 0 alone evaluates and writes; every rank gets its score") {
    // Each rank names its own files, so the test can see which ranks wrote.
    const uint64_t run_id = dist::broadcast_value(static_cast<uint64_t>(::getpid()));
    const std::filesystem::path directory =
        std::filesystem::temp_directory_path() / ("nce_distributed_test_" + std::to_string(run_id));
    std::filesystem::create_directories(directory);
    const std::string mine = "rank_" + std::to_string(rank());

    nn::TrainerOptions options;
    options.steps_per_epoch = 4;
    options.show_progress = false;
    options.evaluate_every = 2;
    options.patience = 1;
    options.metrics_log_path = (directory / (mine + "_log.jsonl")).string();
    options.last_checkpoint_path = (directory / (mine + "_last.safetensors")).string();
    options.best_checkpoint_path = (directory / (mine + "_best.safetensors")).string();

    auto replica = replica_of_seed(13);
    nn::AdamW optimizer(replica->parameters(), nn::AdamWOptions{.learning_rate = 1e-2});
    nn::Trainer trainer(*replica, optimizer, dist::options_for_this_rank(options));
    int evaluations_here = 0;
    // Before step 1, after step 2, after step 4: the third is worse than the second, so
    // patience 1 stops the run after step 4.
    const double scores[] = {0.1, 0.5, 0.25};
    nn::TrainingResult result = trainer.fit(
        dist::data_parallel_loss(
            [&](const nn::StepPosition& position, Generator&) {
                return nn::BatchLoss::with_graph(
                    distributed_share(LossKind::InfoNce, *replica, random_global_batch(7, 3, 200 + position.step)), 7);
            },
            *replica),
        dist::evaluate_on_main_rank([&](nn::EmbeddingModel&) { return scores[evaluations_here++]; }));

    CHECK(evaluations_here == (rank() == 0 ? 3 : 0));
    CHECK(result.stopped_early);  // every rank saw rank 0's scores and stopped together
    CHECK(result.steps == 4);
    CHECK(result.best_metric == 0.5);
    for (const char* file : {"_log.jsonl", "_last.safetensors", "_best.safetensors"})
        CHECK(std::filesystem::exists(directory / (mine + file)) == (rank() == 0));
    dist::barrier();
    if (rank() == 0) std::filesystem::remove_all(directory);
}

TEST_CASE("rank output folder: rank 0 writes the run's folder, the others a scratch folder removed afterwards") {
    std::string scratch;
    {
        dist::RankOutputFolder output("runs/somewhere");
        CHECK((output.path() == "runs/somewhere") == (rank() == 0));
        if (rank() != 0) {
            scratch = output.path();
            CHECK(std::filesystem::is_directory(scratch));
        }
    }
    if (rank() != 0) CHECK(!std::filesystem::exists(scratch));
    CHECK(!std::filesystem::exists("runs/somewhere"));  // rank 0's folder is the caller's to make
}

TEST_CASE("distributed losses: bad input gives the same one-line error on every rank") {
    Generator generator(21);
    Var q = Var::parameter(generator.normal({2, 4}, Dtype::Float64));
    Var p = Var::parameter(generator.normal({2, 4}, Dtype::Float64));
    if (world_size() > 1) {
        Var negatives_on_rank_0 = rank() == 0 ? Var(generator.normal({1, 4}, Dtype::Float64)) : Var();
        CHECK_ERROR_MENTIONS(dist::infonce(q, p, negatives_on_rank_0, Var(), kTau), "pass them on every rank");
        Var no_rows_on_rank_1 = rank() == 1 ? Var::parameter(Tensor::zeros({0, 4}, Dtype::Float64)) : q;
        CHECK_ERROR_MENTIONS(dist::infonce(no_rows_on_rank_1, no_rows_on_rank_1, Var(), Var(), kTau),
                             "rank 1 holds 0 pairs");
    }
    CHECK_ERROR_MENTIONS(dist::ntxent(Var::parameter(generator.normal({3, 4}, Dtype::Float64)), Var(), kTau),
                         "2B rows");
    Var wide = Var::parameter(generator.normal({2, 5}, Dtype::Float64));
    CHECK_ERROR_MENTIONS(dist::infonce(q, wide, Var(), Var(), kTau), "infonce");
}

// main: joins MPI (a world of one process when not started by mpirun), runs the tests on
// every rank, and fails when any rank failed. Two flags serve tests/distributed_test.sh:
//   --mpi-compiled-in        prints yes or no and exits
//   --throw-on-rank=R        rank R throws while the others wait in a collective; the
//                            handler must end the whole run (MPI_Abort) instead of hanging.
//   --throw-uncaught-on-rank=R   the same with an exception that nothing catches.
int main(int argc, char** argv) {
    for (int i = 1; i < argc; ++i)
        if (std::strcmp(argv[i], "--mpi-compiled-in") == 0) {
            std::puts(dist::mpi_compiled_in() ? "yes" : "no");
            return 0;
        }
    dist::WorldSession session(argc, argv, dist::WorldSession::Mode::Always);
    for (int i = 1; i < argc; ++i) {
        std::string argument = argv[i];
        for (const std::string flag : {"--throw-on-rank=", "--throw-uncaught-on-rank="}) {
            if (argument.rfind(flag, 0) != 0) continue;
            int failing_rank = std::stoi(argument.substr(flag.size()));
            auto run = [&] {
                if (rank() == failing_rank) fail("deliberate failure on rank {}", failing_rank);
                dist::barrier();  // the others wait here for a rank that never comes
            };
            if (flag == "--throw-uncaught-on-rank=") run();  // std::terminate -> the handler
            try {
                run();
            } catch (const std::exception& error) {
                dist::abort_world(error.what());
            }
            return 0;
        }
    }

    doctest::Context context;
    context.applyCommandLine(argc, argv);
    int failures = context.run();
    if (context.shouldExit()) return failures;
    return dist::all_reduce_max(failures != 0 ? 1.0 : 0.0) > 0 ? 1 : 0;
}
