// The fused, row-blocked kernels of infonce and infonce_symmetric (losses/infonce_blocks.h)
// against three others: the same kernel unblocked (one block of all N rows), the plain
// op-by-op form (losses/infonce_reference.h) and a naive long-double loop of the closed
// forms. Block sizes 1, ones that do not divide N, N and more; with negatives and a
// learnable log_tau; float64 to 1e-12 and float32 to 1e-6 (relative to the largest entry).
// Also: a forward without gradients, bit-identical repeats, extreme temperatures, buffers
// reused from call to call, and a bad block_rows.
#include <cmath>
#include <vector>

#include "losses/infonce_reference.h"
#include "losses/losses.h"
#include "tests/loss_test_helpers.h"
#include "tests/test_helpers.h"

using namespace nce;
using namespace nce::testing;
using losses::LogitBlocking;

namespace infonce_blocked_tests {

struct Problem {
    int64_t N, d, M;  // M = 0: no negatives
    double tau;
    bool learnable;
};

// q, p, negatives (may be undefined), log_tau (undefined when not learnable), in `dtype`.
struct Inputs {
    Tensor q, p, negatives, log_tau;
};

Inputs make_inputs(const Problem& problem, Generator& generator, Dtype dtype) {
    Inputs inputs{unit_rows(generator, problem.N, problem.d).to(dtype), unit_rows(generator, problem.N, problem.d).to(dtype),
                  Tensor(), Tensor()};
    if (problem.M > 0) inputs.negatives = unit_rows(generator, problem.M, problem.d).to(dtype);
    if (problem.learnable) inputs.log_tau = Tensor::scalar(std::log(problem.tau), Dtype::Float64);
    return inputs;
}

// The loss and the gradients of q, p, negatives, log_tau (undefined where not an input).
struct Evaluation {
    double loss = 0;
    Tensor dq, dp, dnegatives, dlog_tau;
};

using LossCall = std::function<Var(const Var&, const Var&, const Var&, const Var&)>;

Evaluation evaluate(const LossCall& loss_function, const Inputs& inputs) {
    Var q(inputs.q, true), p(inputs.p, true);
    Var negatives = inputs.negatives.defined() ? Var(inputs.negatives, true) : Var();
    Var log_tau = inputs.log_tau.defined() ? Var(inputs.log_tau, true) : Var();
    Var loss = loss_function(q, p, negatives, log_tau);
    loss.backward();
    return {loss.value().item(), q.grad(), p.grad(), negatives.defined() ? negatives.grad() : Tensor(),
            log_tau.defined() ? log_tau.grad() : Tensor()};
}

// Loss, gradients and dlog_tau each within `tolerance` of b, relative to b's largest entry;
// dlog_tau only when `with_temperature` (see the float32 test for why it may be left out).
void check_same(const Evaluation& a, const Evaluation& b, double tolerance, bool with_temperature = true) {
    CHECK(relative_error(a.loss, b.loss) < tolerance);
    CHECK(relative_error(a.dq, b.dq) < tolerance);
    CHECK(relative_error(a.dp, b.dp) < tolerance);
    CHECK(a.dnegatives.defined() == b.dnegatives.defined());
    if (a.dnegatives.defined()) CHECK(relative_error(a.dnegatives, b.dnegatives) < tolerance);
    CHECK(a.dlog_tau.defined() == b.dlog_tau.defined());
    if (a.dlog_tau.defined() && with_temperature)
        CHECK(relative_error(a.dlog_tau.item(), b.dlog_tau.item()) < tolerance);
}

LossCall fused(bool symmetric, double tau, int64_t block_rows) {
    return [=](const Var& q, const Var& p, const Var& negatives, const Var& log_tau) {
        return symmetric ? losses::infonce_symmetric(q, p, negatives, log_tau, tau, LogitBlocking{block_rows})
                         : losses::infonce(q, p, negatives, log_tau, tau, LogitBlocking{block_rows});
    };
}

LossCall reference(bool symmetric, double tau) {
    return [=](const Var& q, const Var& p, const Var& negatives, const Var& log_tau) {
        return symmetric ? losses::infonce_symmetric_reference(q, p, negatives, log_tau, tau)
                         : losses::infonce_reference(q, p, negatives, log_tau, tau);
    };
}

// ---- the closed forms with plain loops in long double ----

using Matrix = std::vector<std::vector<long double>>;

Matrix to_matrix(const Tensor& x) {
    Matrix m(x.size(0), std::vector<long double>(x.size(1)));
    for (int64_t i = 0; i < x.size(0); ++i)
        for (int64_t j = 0; j < x.size(1); ++j) m[i][j] = x.at(i * x.size(1) + j);
    return m;
}

Tensor to_tensor(const Matrix& m) {
    std::vector<double> values;
    for (const auto& row : m)
        for (long double v : row) values.push_back(static_cast<double>(v));
    return Tensor::from_vector(values, {static_cast<int64_t>(m.size()), static_cast<int64_t>(m[0].size())},
                               Dtype::Float64);
}

// a_ij = q_i·c_j / tau, C = [p; negatives];
// infonce:            G = (P_row - Y) / N
// infonce_symmetric:  G = (P_row - Y) / 2N + [j < N] (P_column - Y) / 2N    (P_column: softmax of a[:, j] over i < N)
// L from the same softmaxes; dq = G C / tau, dC = G^T q / tau, dlog_tau = tau · (-(1/tau) sum G a).
Evaluation naive(const Inputs& inputs, double tau_value, bool symmetric) {
    Matrix q = to_matrix(inputs.q), C = to_matrix(inputs.p);
    if (inputs.negatives.defined())
        for (const auto& row : to_matrix(inputs.negatives)) C.push_back(row);
    size_t N = q.size(), K = C.size(), d = q[0].size();
    long double tau = tau_value;
    Matrix a(N, std::vector<long double>(K)), G(N, std::vector<long double>(K, 0));
    for (size_t i = 0; i < N; ++i)
        for (size_t j = 0; j < K; ++j) {
            long double dot = 0;
            for (size_t k = 0; k < d; ++k) dot += q[i][k] * C[j][k];
            a[i][j] = dot / tau;
        }
    long double weight = symmetric ? 0.5L : 1.0L, loss = 0;
    for (size_t i = 0; i < N; ++i) {  // rows: lse_j a_ij - a_ii
        long double shift = a[i][0], total = 0;
        for (size_t j = 0; j < K; ++j) shift = std::max(shift, a[i][j]);
        for (size_t j = 0; j < K; ++j) total += std::exp(a[i][j] - shift);
        loss += weight * (shift + std::log(total) - a[i][i]) / N;
        for (size_t j = 0; j < K; ++j) G[i][j] += weight * (std::exp(a[i][j] - shift) / total - (i == j)) / N;
    }
    if (symmetric)
        for (size_t j = 0; j < N; ++j) {  // columns j < N: lse_i a_ij - a_jj
            long double shift = a[0][j], total = 0;
            for (size_t i = 0; i < N; ++i) shift = std::max(shift, a[i][j]);
            for (size_t i = 0; i < N; ++i) total += std::exp(a[i][j] - shift);
            loss += 0.5L * (shift + std::log(total) - a[j][j]) / N;
            for (size_t i = 0; i < N; ++i) G[i][j] += 0.5L * (std::exp(a[i][j] - shift) / total - (i == j)) / N;
        }
    Matrix dq(N, std::vector<long double>(d, 0)), dC(K, std::vector<long double>(d, 0));
    long double dtau = 0;
    for (size_t i = 0; i < N; ++i)
        for (size_t j = 0; j < K; ++j) {
            for (size_t k = 0; k < d; ++k) {
                dq[i][k] += G[i][j] * C[j][k] / tau;
                dC[j][k] += G[i][j] * q[i][k] / tau;
            }
            dtau -= G[i][j] * a[i][j] / tau;
        }
    Evaluation result{static_cast<double>(loss), to_tensor(dq), to_tensor(Matrix(dC.begin(), dC.begin() + N)),
                      Tensor(), Tensor()};
    if (K > N) result.dnegatives = to_tensor(Matrix(dC.begin() + N, dC.end()));
    if (inputs.log_tau.defined()) result.dlog_tau = Tensor::scalar(static_cast<double>(tau * dtau), Dtype::Float64);
    return result;
}

const Problem kProblems[] = {
    {37, 16, 0, 0.1, false},
    {37, 16, 11, 0.05, true},
    {2, 3, 0, 0.3, false},
    {5, 8, 9, 0.5, true},
};

std::vector<int64_t> block_sizes(int64_t N) { return {0, 1, 2, 3, 7, 16, N - 1, N, N + 5}; }


TEST_CASE("fused InfoNCE, float64: every block size equals the unblocked kernel, the op-by-op form and naive loops") {
    Generator generator(71);
    for (bool symmetric : {false, true})
        for (const Problem& problem : kProblems) {
            INFO((symmetric ? "infonce_symmetric" : "infonce") << " N " << problem.N << " M " << problem.M << " tau "
                                                                 << problem.tau << " learnable " << problem.learnable);
            Inputs inputs = make_inputs(problem, generator, Dtype::Float64);
            Evaluation unblocked = evaluate(fused(symmetric, problem.tau, problem.N), inputs);
            check_same(unblocked, evaluate(reference(symmetric, problem.tau), inputs), 1e-12);
            check_same(unblocked, naive(inputs, problem.tau, symmetric), 1e-12);
            for (int64_t block_rows : block_sizes(problem.N)) {
                if (block_rows < 0) continue;
                INFO("block_rows " << block_rows);
                check_same(evaluate(fused(symmetric, problem.tau, block_rows), inputs), unblocked, 1e-12);
            }
        }
}

// In float32 a logit of size 1/tau = 20 carries a rounding error of about 1e-6, and exp
// turns it into a relative error of 1e-6 in P: that is the floor every float32 form shares.
// So: the loss to 1e-6 of the unblocked kernel (it is in fact equal: a row of logits comes
// out of the GEMM the same whatever the block), the gradients to 2e-6 of it and of the
// op-by-op form, and everything to 5e-6 of float64. dlog_tau is compared with float64 only:
// the op-by-op form sums G ⊙ l in float32 and is itself 1e-5 off, the kernel's q ⊙ dq is not.
TEST_CASE("fused InfoNCE, float32: every block size equals the unblocked kernel and float64 within float32's floor") {
    Generator generator(72);
    for (bool symmetric : {false, true})
        for (Problem problem : {Problem{300, 32, 0, 0.05, false}, Problem{301, 24, 77, 0.05, true}}) {
            INFO((symmetric ? "infonce_symmetric" : "infonce") << " N " << problem.N << " M " << problem.M);
            Inputs exact = make_inputs(problem, generator, Dtype::Float64);
            Inputs inputs{exact.q.to(Dtype::Float32), exact.p.to(Dtype::Float32),
                          exact.negatives.defined() ? exact.negatives.to(Dtype::Float32) : Tensor(), exact.log_tau};
            Evaluation in_float64 = evaluate(fused(symmetric, problem.tau, problem.N), exact);
            Evaluation unblocked = evaluate(fused(symmetric, problem.tau, problem.N), inputs);
            CHECK(unblocked.dq.dtype() == Dtype::Float32);
            check_same(unblocked, in_float64, 5e-6);
            check_same(evaluate(reference(symmetric, problem.tau), inputs), unblocked, 2e-6, false);
            for (int64_t block_rows : {int64_t{0}, int64_t{1}, int64_t{64}, int64_t{100}, problem.N - 1}) {
                INFO("block_rows " << block_rows);
                Evaluation blocked = evaluate(fused(symmetric, problem.tau, block_rows), inputs);
                CHECK(relative_error(blocked.loss, unblocked.loss) < 1e-6);
                check_same(blocked, unblocked, 2e-6);
                check_same(blocked, in_float64, 5e-6);
            }
        }
}

TEST_CASE("fused InfoNCE at tau = 1e-4 and with logits in the thousands: finite and equal to the op-by-op form") {
    Generator generator(73);
    for (bool symmetric : {false, true}) {
        Inputs cold = make_inputs({13, 8, 4, 1e-4, false}, generator, Dtype::Float64);
        Inputs large = make_inputs({13, 8, 4, 0.01, false}, generator, Dtype::Float64);
        large.q = large.q * 30.0;  // |l| up to 3000
        for (int64_t block_rows : {int64_t{0}, int64_t{4}}) {
            Evaluation fused_cold = evaluate(fused(symmetric, 1e-4, block_rows), cold);
            CHECK(std::isfinite(fused_cold.loss));
            CHECK(all_finite(fused_cold.dq));
            check_same(fused_cold, evaluate(reference(symmetric, 1e-4), cold), 1e-12);
            check_same(evaluate(fused(symmetric, 0.01, block_rows), large), evaluate(reference(symmetric, 0.01), large),
                       1e-12);
        }
    }
}

TEST_CASE("fused InfoNCE without gradients: the same loss, and no node") {
    Generator generator(74);
    Inputs inputs = make_inputs({29, 8, 5, 0.07, false}, generator, Dtype::Float64);
    for (bool symmetric : {false, true})
        for (int64_t block_rows : {int64_t{0}, int64_t{6}}) {
            Evaluation with_gradient = evaluate(fused(symmetric, 0.07, block_rows), inputs);
            NoGradGuard no_grad;
            Var loss = fused(symmetric, 0.07, block_rows)(Var(inputs.q, true), Var(inputs.p), Var(inputs.negatives),
                                                          Var());
            CHECK(!loss.requires_grad());
            CHECK(relative_error(loss.value().item(), with_gradient.loss) < 1e-14);
        }
}

TEST_CASE("fused InfoNCE: the same inputs give the same bits; dy scales every gradient") {
    Generator generator(75);
    Inputs inputs = make_inputs({150, 16, 20, 0.05, true}, generator, Dtype::Float32);
    for (bool symmetric : {false, true}) {
        Evaluation first = evaluate(fused(symmetric, 0.05, 32), inputs);
        Evaluation second = evaluate(fused(symmetric, 0.05, 32), inputs);
        CHECK(first.loss == second.loss);
        CHECK(max_abs_difference(first.dq, second.dq) == 0.0);
        CHECK(max_abs_difference(first.dp, second.dp) == 0.0);
        CHECK(max_abs_difference(first.dnegatives, second.dnegatives) == 0.0);
        CHECK(first.dlog_tau.item() == second.dlog_tau.item());

        Var q(inputs.q, true), p(inputs.p, true);
        Var loss = fused(symmetric, 0.05, 32)(q, p, Var(inputs.negatives), Var(inputs.log_tau));
        loss.backward(Tensor::scalar(-2.5, Dtype::Float32));
        CHECK(relative_error(q.grad(), first.dq * -2.5) < 1e-7);
        CHECK(relative_error(p.grad(), first.dp * -2.5) < 1e-7);
    }
}

TEST_CASE("fused InfoNCE reuses its buffers: a second call allocates nothing new") {
    Generator generator(76);
    Inputs inputs = make_inputs({200, 16, 0, 0.05, false}, generator, Dtype::Float32);
    for (bool symmetric : {false, true}) {
        evaluate(fused(symmetric, 0.05, 64), inputs);  // warms the caching allocator
        AllocatorStats before = CachingAllocator::host().stats();
        evaluate(fused(symmetric, 0.05, 64), inputs);
        AllocatorStats after = CachingAllocator::host().stats();
        CHECK(after.allocations > before.allocations);
        CHECK(after.allocations - before.allocations == after.cache_hits - before.cache_hits);
    }
}

TEST_CASE("fused InfoNCE: a negative block_rows is one clear error") {
    Generator generator(77);
    Var q(unit_rows(generator, 4, 3)), p(unit_rows(generator, 4, 3));
    CHECK_ERROR_MENTIONS(losses::infonce(q, p, Var(), Var(), 0.05, LogitBlocking{-1}), "block_rows");
    CHECK_ERROR_MENTIONS(losses::infonce_symmetric(q, p, Var(), Var(), 0.05, LogitBlocking{-3}), "block_rows");
}

// A logit 2000 below its row's maximum has probability exp(-2000): exactly 0 in float64 and
// float32, so its gradient is exactly 0. With K >= 8 the columns come in whole SIMD packets,
// where Eigen's vectorised exp clamps its argument and would give a denormal (5e-309), and
// dq a stray 1e-306; exact_exp flushes it to 0.
//   q_i = (1, 0) for every i;  p_0 = (1, 0);  p_j = (-1, 1/2) for j >= 1;  tau = 1e-3
// Row 0: l_00 = 1000, l_0j = -1000: P_00 = 1, P_0j = 0, so dq_0 = (P_00 - 1) p_0 / (N tau)
// + sum_j P_0j p_j / (N tau) = 0 in both coordinates.
TEST_CASE("fused InfoNCE: a negative far below the row maximum gets a gradient of exactly 0, no denormal") {
    const int64_t N = 16;
    for (Dtype dtype : {Dtype::Float64, Dtype::Float32}) {
        Tensor q = Tensor::zeros({N, 2}, Dtype::Float64), p = Tensor::zeros({N, 2}, Dtype::Float64);
        for (int64_t i = 0; i < N; ++i) {
            q.data<double>()[2 * i] = 1.0;
            p.data<double>()[2 * i] = i == 0 ? 1.0 : -1.0;
            p.data<double>()[2 * i + 1] = i == 0 ? 0.0 : 0.5;
        }
        for (int64_t block_rows : {int64_t{0}, int64_t{3}}) {
            Var q_var(q.to(dtype), true), p_var(p.to(dtype), true);
            losses::infonce(q_var, p_var, Var(), Var(), 1e-3, LogitBlocking{block_rows}).backward();
            Tensor dq = q_var.grad().to(Dtype::Float64);
            CAPTURE(dtype_name(dtype));
            CAPTURE(block_rows);
            CHECK(dq.data<double>()[0] == 0.0);
            CHECK(dq.data<double>()[1] == 0.0);
        }
    }
}

}  // namespace infonce_blocked_tests
