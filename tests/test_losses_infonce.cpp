// The InfoNCE family (infonce, infonce_symmetric, ntxent), each proved three ways:
//   (1) the hand backward against central finite differences (nce::gradcheck),
//   (2) against the same formula composed from engine Var ops and differentiated by autograd,
//   (3) against the closed forms of docs/losses_contract.md, written here with plain loops;
// forward values against naive long-double references; stability at tau = 1e-4, logits in
// the thousands and identical rows; and one-line errors for bad input.
#include <cmath>
#include <functional>
#include <vector>

#include "losses/losses.h"
#include "tests/loss_test_helpers.h"
#include "tests/test_helpers.h"

using namespace nce;
using namespace nce::testing;

namespace infonce_tests {

using Function = std::function<Var(const std::vector<Var>&)>;

Tensor arange(int64_t n) {
    std::vector<int64_t> values(n);
    for (int64_t i = 0; i < n; ++i) values[i] = i;
    return Tensor::from_indices(values, {n});
}

// The loss and the gradient of every input, each input a fresh leaf.
struct Evaluation {
    double loss = 0;
    std::vector<Tensor> grads;
};

Evaluation evaluate(const Function& f, const std::vector<Tensor>& inputs) {
    std::vector<Var> leaves;
    for (const Tensor& input : inputs) leaves.emplace_back(input, true);
    Var loss = f(leaves);
    loss.backward();
    Evaluation result{loss.value().item(), {}};
    for (const Var& leaf : leaves) result.grads.push_back(leaf.grad().defined() ? leaf.grad() : zeros_like(leaf.value()));
    return result;
}

void check_same_evaluation(const Evaluation& hand, const Evaluation& reference, double tolerance) {
    CHECK(relative_error(hand.loss, reference.loss) < tolerance);
    REQUIRE(hand.grads.size() == reference.grads.size());
    for (size_t k = 0; k < hand.grads.size(); ++k) {
        INFO("input " << k);
        CHECK(hand.grads[k].shape() == reference.grads[k].shape());
        CHECK(relative_error(hand.grads[k], reference.grads[k]) < tolerance);
    }
}

bool all_grads_finite(const Evaluation& e) {
    bool finite = std::isfinite(e.loss);
    for (const Tensor& g : e.grads) finite = finite && all_finite(g);
    return finite;
}

// ---- naive references: plain loops in long double ----

using Matrix = std::vector<std::vector<long double>>;

Matrix to_matrix(const Tensor& x) {
    Matrix m(x.size(0), std::vector<long double>(x.size(1)));
    for (int64_t i = 0; i < x.size(0); ++i)
        for (int64_t j = 0; j < x.size(1); ++j) m[i][j] = x.at(i * x.size(1) + j);
    return m;
}

long double dot(const std::vector<long double>& a, const std::vector<long double>& b) {
    long double total = 0;
    for (size_t k = 0; k < a.size(); ++k) total += a[k] * b[k];
    return total;
}

// logits_ij = a_i·b_j / tau
Matrix naive_logits(const Matrix& a, const Matrix& b, long double tau) {
    Matrix l(a.size(), std::vector<long double>(b.size()));
    for (size_t i = 0; i < a.size(); ++i)
        for (size_t j = 0; j < b.size(); ++j) l[i][j] = dot(a[i], b[j]) / tau;
    return l;
}

// Row softmax, without the max shift: exp(l) of |l| < 11000 fits in long double, which covers
// every test here (tau = 1e-4 on unit rows gives |l| <= 1e4).
Matrix naive_softmax(const Matrix& l) {
    Matrix P = l;
    for (size_t i = 0; i < l.size(); ++i) {
        long double total = 0;
        for (long double v : l[i]) total += std::exp(v);
        for (size_t j = 0; j < l[i].size(); ++j) P[i][j] = std::exp(l[i][j]) / total;
    }
    return P;
}

// (1/R) sum_i ( log sum_j exp(l_ij) - l_i,target(i) ), j = i left out when skip_diagonal;
// no max shift (see naive_softmax).
long double naive_mean_cross_entropy(const Matrix& l, const std::vector<size_t>& target, bool skip_diagonal = false) {
    long double total = 0;
    for (size_t i = 0; i < l.size(); ++i) {
        long double row_sum = 0;
        for (size_t j = 0; j < l[i].size(); ++j)
            if (!(skip_diagonal && i == j)) row_sum += std::exp(l[i][j]);
        total += std::log(row_sum) - l[i][target[i]];
    }
    return total / l.size();
}

std::vector<size_t> diagonal_targets(size_t n) {
    std::vector<size_t> t(n);
    for (size_t i = 0; i < n; ++i) t[i] = i;
    return t;
}

Matrix stacked(const Matrix& a, const Matrix& b) {
    Matrix c = a;
    c.insert(c.end(), b.begin(), b.end());
    return c;
}

long double naive_infonce(const Tensor& q, const Tensor& p, const Tensor& negatives, long double tau) {
    Matrix C = negatives.defined() ? stacked(to_matrix(p), to_matrix(negatives)) : to_matrix(p);
    return naive_mean_cross_entropy(naive_logits(to_matrix(q), C, tau), diagonal_targets(q.size(0)));
}

long double naive_infonce_symmetric(const Tensor& q, const Tensor& p, const Tensor& negatives, long double tau) {
    Matrix p_to_q = naive_logits(to_matrix(p), to_matrix(q), tau);
    return (naive_infonce(q, p, negatives, tau) + naive_mean_cross_entropy(p_to_q, diagonal_targets(q.size(0)))) / 2;
}

std::vector<size_t> ntxent_targets(size_t two_b) {
    std::vector<size_t> t(two_b);
    for (size_t i = 0; i < two_b; ++i) t[i] = (i + two_b / 2) % two_b;
    return t;
}

long double naive_ntxent(const Tensor& z, long double tau, bool mask_self) {
    Matrix Z = to_matrix(z);
    return naive_mean_cross_entropy(naive_logits(Z, Z, tau), ntxent_targets(Z.size()), mask_self);
}

Tensor to_tensor(const Matrix& m) {
    std::vector<double> values;
    for (const auto& row : m)
        for (long double v : row) values.push_back(static_cast<double>(v));
    return Tensor::from_vector(values, {static_cast<int64_t>(m.size()), static_cast<int64_t>(m[0].size())},
                               Dtype::Float64);
}

// ---- the same losses composed from engine ops (autograd differentiates them) ----

// similarities / tau, with tau = exp(log_tau) when log_tau is given (no clamp: tests keep it above 1e-4).
Var divided_by_temperature(const Var& similarities, const Var& log_tau, double tau) {
    return log_tau.defined() ? similarities / exp(log_tau) : similarities * (1.0 / tau);
}

Var composed_infonce(const Var& q, const Var& p, const Var& negatives, const Var& log_tau, double tau) {
    Var candidates = negatives.defined() ? concat({p, negatives}, 0) : p;
    Var logits = divided_by_temperature(matmul(q, candidates, Transpose::Second), log_tau, tau);
    return cross_entropy(logits, arange(q.size(0)));
}

Var composed_infonce_symmetric(const Var& q, const Var& p, const Var& negatives, const Var& log_tau, double tau) {
    Var p_to_q = divided_by_temperature(matmul(p, q, Transpose::Second), log_tau, tau);
    return (composed_infonce(q, p, negatives, log_tau, tau) + cross_entropy(p_to_q, arange(q.size(0)))) * 0.5;
}

Var composed_ntxent(const Var& z, const Var& log_tau, double tau, bool mask_self) {
    int64_t two_b = z.size(0), B = two_b / 2;
    Var logits = divided_by_temperature(matmul(z, z, Transpose::Second), log_tau, tau);
    if (mask_self) {
        // -1e30 on the diagonal: its exp is exactly 0 after log_softmax's shift (a finite
        // stand-in for -inf, so no inf - inf can appear anywhere in the composition).
        std::vector<double> diagonal(two_b * two_b, 0.0);
        for (int64_t i = 0; i < two_b; ++i) diagonal[i * two_b + i] = -1e30;
        logits = logits + Var(Tensor::from_vector(diagonal, {two_b, two_b}, z.dtype()));
    }
    std::vector<int64_t> targets(two_b);
    for (int64_t i = 0; i < two_b; ++i) targets[i] = (i + B) % two_b;
    return cross_entropy(logits, Tensor::from_indices(targets, {two_b}));
}

// ---- one problem: the inputs and the functions that read them ----

struct InfonceProblem {
    int64_t N, d, M;  // M = 0: no negatives
    double tau;
    bool learnable;   // log_tau = log(tau) given as an input
};

std::vector<Tensor> infonce_inputs(const InfonceProblem& problem, Generator& generator) {
    std::vector<Tensor> inputs{unit_rows(generator, problem.N, problem.d), unit_rows(generator, problem.N, problem.d)};
    if (problem.M > 0) inputs.push_back(unit_rows(generator, problem.M, problem.d));
    if (problem.learnable) inputs.push_back(Tensor::from_vector({std::log(problem.tau)}, {1}, Dtype::Float64));
    return inputs;
}

using InfonceSignature = Var (*)(const Var&, const Var&, const Var&, const Var&, double);

// Positional inputs [q, p, (negatives), (log_tau)] -> the loss.
Function bind_infonce(InfonceSignature loss, const InfonceProblem& problem) {
    return [loss, problem](const std::vector<Var>& x) {
        Var negatives = problem.M > 0 ? x[2] : Var();
        Var log_tau = problem.learnable ? x.back() : Var();
        return loss(x[0], x[1], negatives, log_tau, problem.tau);
    };
}

// Temperatures keep the gradients well above finite differences' noise (about 1e-10 here):
// at tau = 0.05 a batch of two random rows can have a loss near 1e-10, too flat to difference.
const InfonceProblem kInfonceProblems[] = {
    {2, 3, 0, 0.3, false}, {5, 8, 3, 0.1, false}, {9, 16, 0, 0.5, true},
    {4, 6, 7, 2.0, true},   {3, 4, 1, 0.05, true},
};


// ---------------------------------------------------------------- infonce

TEST_CASE("infonce: hand backward equals finite differences, for q, p, negatives and log_tau") {
    Generator generator(11);
    for (const InfonceProblem& problem : kInfonceProblems) {
        INFO("N " << problem.N << " d " << problem.d << " M " << problem.M << " tau " << problem.tau);
        GradcheckResult result =
            gradcheck(bind_infonce(losses::infonce, problem), infonce_inputs(problem, generator));
        CHECK(result.passed);
        CHECK(result.max_rel_error < 1e-6);
    }
}

TEST_CASE("infonce: hand backward equals the composition of engine ops, loss and every gradient") {
    Generator generator(12);
    for (const InfonceProblem& problem : kInfonceProblems) {
        INFO("N " << problem.N << " d " << problem.d << " M " << problem.M << " tau " << problem.tau);
        std::vector<Tensor> inputs = infonce_inputs(problem, generator);
        check_same_evaluation(evaluate(bind_infonce(losses::infonce, problem), inputs),
                              evaluate(bind_infonce(composed_infonce, problem), inputs), 1e-12);
    }
}

TEST_CASE("infonce: forward equals a naive long-double reference, and cross_entropy(q p^T / tau, arange(N))") {
    Generator generator(13);
    for (const InfonceProblem& problem : kInfonceProblems) {
        std::vector<Tensor> inputs = infonce_inputs(problem, generator);
        Tensor negatives = problem.M > 0 ? inputs[2] : Tensor();
        Var loss = bind_infonce(losses::infonce, problem)(std::vector<Var>(inputs.begin(), inputs.end()));
        CHECK(loss.shape() == Shape{});
        CHECK(relative_error(loss.value().item(),
                                  static_cast<double>(naive_infonce(inputs[0], inputs[1], negatives, problem.tau))) <
              1e-12);
        if (problem.M == 0) {
            Tensor logits = matmul(inputs[0], inputs[1], Transpose::Second) / problem.tau;
            Var expected = cross_entropy(Var(logits), arange(problem.N));
            CHECK(relative_error(loss.value().item(), expected.value().item()) < 1e-12);
        }
    }
}

TEST_CASE("infonce: gradients equal the closed forms (P - Y) C / (N tau), (P - Y)^T q / (N tau), -sum G l") {
    Generator generator(14);
    for (const InfonceProblem& problem : kInfonceProblems) {
        INFO("N " << problem.N << " M " << problem.M << " tau " << problem.tau);
        std::vector<Tensor> inputs = infonce_inputs(problem, generator);
        Evaluation hand = evaluate(bind_infonce(losses::infonce, problem), inputs);

        Matrix q = to_matrix(inputs[0]), C = to_matrix(inputs[1]);
        if (problem.M > 0) C = stacked(C, to_matrix(inputs[2]));
        size_t N = q.size(), d = q[0].size(), columns = C.size();
        long double tau = problem.tau;
        Matrix l = naive_logits(q, C, tau), G = naive_softmax(l);  // G = (P - Y) / N
        for (size_t i = 0; i < N; ++i) {
            G[i][i] -= 1;
            for (size_t j = 0; j < columns; ++j) G[i][j] /= N;
        }
        Matrix dq(N, std::vector<long double>(d, 0)), dC(columns, std::vector<long double>(d, 0));
        long double dtau = 0;
        for (size_t i = 0; i < N; ++i)
            for (size_t j = 0; j < columns; ++j) {
                for (size_t k = 0; k < d; ++k) {
                    dq[i][k] += G[i][j] * C[j][k] / tau;
                    dC[j][k] += G[i][j] * q[i][k] / tau;
                }
                dtau -= G[i][j] * l[i][j] / tau;
            }
        CHECK(relative_error(hand.grads[0], to_tensor(dq)) < 1e-12);
        Matrix dp(dC.begin(), dC.begin() + N);
        CHECK(relative_error(hand.grads[1], to_tensor(dp)) < 1e-12);
        if (problem.M > 0) CHECK(relative_error(hand.grads[2], to_tensor(Matrix(dC.begin() + N, dC.end()))) < 1e-12);
        if (problem.learnable)  // dL/dlog_tau = tau · dL/dtau
            CHECK(relative_error(hand.grads.back().item(), static_cast<double>(tau * dtau)) < 1e-12);
    }
}

TEST_CASE("infonce: log_tau below log(1e-4) clamps tau at 1e-4 and gets gradient 0") {
    Generator generator(15);
    Tensor q = unit_rows(generator, 4, 5), p = unit_rows(generator, 4, 5);
    Tensor log_tau = Tensor::scalar(std::log(1e-5), Dtype::Float64);
    Evaluation clamped = evaluate([](const std::vector<Var>& x) { return losses::infonce(x[0], x[1], Var(), x[2]); },
                                  {q, p, log_tau});
    Evaluation fixed = evaluate([](const std::vector<Var>& x) { return losses::infonce(x[0], x[1], Var(), Var(), 1e-4); },
                                {q, p});
    CHECK(clamped.loss == fixed.loss);
    CHECK(clamped.grads[2].shape() == Shape{});
    CHECK(clamped.grads[2].item() == 0.0);
    CHECK(relative_error(clamped.grads[0], fixed.grads[0]) < 1e-15);
}

// ---------------------------------------------------------------- infonce_symmetric

TEST_CASE("infonce_symmetric: hand backward equals finite differences, for q, p, negatives and log_tau") {
    Generator generator(21);
    for (const InfonceProblem& problem : kInfonceProblems) {
        INFO("N " << problem.N << " d " << problem.d << " M " << problem.M << " tau " << problem.tau);
        GradcheckResult result =
            gradcheck(bind_infonce(losses::infonce_symmetric, problem), infonce_inputs(problem, generator));
        CHECK(result.passed);
        CHECK(result.max_rel_error < 1e-6);
    }
}

TEST_CASE("infonce_symmetric: hand backward equals the composition of engine ops, loss and every gradient") {
    Generator generator(22);
    for (const InfonceProblem& problem : kInfonceProblems) {
        INFO("N " << problem.N << " d " << problem.d << " M " << problem.M << " tau " << problem.tau);
        std::vector<Tensor> inputs = infonce_inputs(problem, generator);
        check_same_evaluation(evaluate(bind_infonce(losses::infonce_symmetric, problem), inputs),
                              evaluate(bind_infonce(composed_infonce_symmetric, problem), inputs), 1e-12);
    }
}

TEST_CASE("infonce_symmetric: equals 1/2 [infonce(q, p, neg) + infonce(p, q)] (negatives q->p only), with gradients") {
    Generator generator(23);
    for (const InfonceProblem& problem : kInfonceProblems) {
        INFO("N " << problem.N << " M " << problem.M);
        std::vector<Tensor> inputs = infonce_inputs(problem, generator);
        Tensor negatives = problem.M > 0 ? inputs[2] : Tensor();
        CHECK(relative_error(
                  bind_infonce(losses::infonce_symmetric, problem)(std::vector<Var>(inputs.begin(), inputs.end()))
                      .value()
                      .item(),
                  static_cast<double>(naive_infonce_symmetric(inputs[0], inputs[1], negatives, problem.tau))) < 1e-12);
        Function halves = [problem](const std::vector<Var>& x) {
            Var negatives = problem.M > 0 ? x[2] : Var();
            Var log_tau = problem.learnable ? x.back() : Var();
            return (losses::infonce(x[0], x[1], negatives, log_tau, problem.tau) +
                    losses::infonce(x[1], x[0], Var(), log_tau, problem.tau)) *
                   0.5;
        };
        check_same_evaluation(evaluate(bind_infonce(losses::infonce_symmetric, problem), inputs),
                              evaluate(halves, inputs), 1e-12);
    }
}

// ---------------------------------------------------------------- ntxent


struct NtxentProblem {
    int64_t B, d;
    double tau;
    bool mask_self, learnable;
};

const NtxentProblem kNtxentProblems[] = {
    {2, 3, 0.1, true, false}, {3, 4, 0.5, false, false}, {5, 8, 0.07, true, true},
    {4, 6, 1.0, false, true}, {8, 16, 0.2, true, false},
};

std::vector<Tensor> ntxent_inputs(const NtxentProblem& problem, Generator& generator) {
    std::vector<Tensor> inputs{unit_rows(generator, 2 * problem.B, problem.d)};
    if (problem.learnable) inputs.push_back(Tensor::scalar(std::log(problem.tau), Dtype::Float64));
    return inputs;
}

using NtxentSignature = Var (*)(const Var&, const Var&, double, bool);

Function bind_ntxent(NtxentSignature loss, const NtxentProblem& problem) {
    return [loss, problem](const std::vector<Var>& x) {
        return loss(x[0], problem.learnable ? x[1] : Var(), problem.tau, problem.mask_self);
    };
}


TEST_CASE("ntxent: hand backward equals finite differences, for z and log_tau, with and without mask_self") {
    Generator generator(31);
    for (const NtxentProblem& problem : kNtxentProblems) {
        INFO("B " << problem.B << " d " << problem.d << " tau " << problem.tau << " mask_self " << problem.mask_self);
        GradcheckResult result = gradcheck(bind_ntxent(losses::ntxent, problem), ntxent_inputs(problem, generator));
        CHECK(result.passed);
        CHECK(result.max_rel_error < 1e-6);
    }
}

TEST_CASE("ntxent: hand backward equals the composition of engine ops, loss and every gradient") {
    Generator generator(32);
    for (const NtxentProblem& problem : kNtxentProblems) {
        INFO("B " << problem.B << " d " << problem.d << " tau " << problem.tau << " mask_self " << problem.mask_self);
        std::vector<Tensor> inputs = ntxent_inputs(problem, generator);
        check_same_evaluation(evaluate(bind_ntxent(losses::ntxent, problem), inputs),
                              evaluate(bind_ntxent(composed_ntxent, problem), inputs), 1e-12);
    }
}

TEST_CASE("ntxent: forward equals a naive long-double reference; positive of row i is (i + B) mod 2B") {
    Generator generator(33);
    for (const NtxentProblem& problem : kNtxentProblems) {
        std::vector<Tensor> inputs = ntxent_inputs(problem, generator);
        Var loss = bind_ntxent(losses::ntxent, problem)(std::vector<Var>(inputs.begin(), inputs.end()));
        CHECK(loss.shape() == Shape{});
        CHECK(relative_error(loss.value().item(),
                                  static_cast<double>(naive_ntxent(inputs[0], problem.tau, problem.mask_self))) < 1e-12);
    }
}

TEST_CASE("ntxent with mask_self=0: dL/dZ = (G + G^T) Z / (2B tau), G = P - onehot(p(i)), the seed's closed form") {
    Generator generator(34);
    for (int64_t B : {2, 3, 6}) {
        double tau = 0.3;
        Tensor z = unit_rows(generator, 2 * B, 5);
        Evaluation hand = evaluate([tau](const std::vector<Var>& x) { return losses::ntxent(x[0], Var(), tau, false); },
                                   {z});
        Matrix Z = to_matrix(z), G = naive_softmax(naive_logits(Z, Z, tau));
        std::vector<size_t> positive = ntxent_targets(Z.size());
        for (size_t i = 0; i < Z.size(); ++i) G[i][positive[i]] -= 1;
        Matrix dZ(Z.size(), std::vector<long double>(Z[0].size(), 0));
        for (size_t k = 0; k < Z.size(); ++k)
            for (size_t j = 0; j < Z.size(); ++j)
                for (size_t c = 0; c < Z[0].size(); ++c) dZ[k][c] += (G[k][j] + G[j][k]) * Z[j][c] / (2.0L * B * tau);
        CHECK(relative_error(hand.grads[0], to_tensor(dZ)) < 1e-12);
    }
}

// ---------------------------------------------------------------- stability

TEST_CASE("InfoNCE family at tau = 1e-4: loss and gradients finite, equal to the naive and composed versions") {
    Generator generator(41);
    Tensor q = unit_rows(generator, 6, 8), p = unit_rows(generator, 6, 8), negatives = unit_rows(generator, 3, 8);
    InfonceProblem problem{6, 8, 3, 1e-4, false};
    std::vector<Tensor> inputs{q, p, negatives};
    for (InfonceSignature loss : {InfonceSignature(losses::infonce), InfonceSignature(losses::infonce_symmetric)}) {
        Evaluation hand = evaluate(bind_infonce(loss, problem), inputs);
        CHECK(all_grads_finite(hand));
        CHECK(hand.loss > 100);  // logits ~ 1e4: far from the easy regime
    }
    Evaluation hand = evaluate(bind_infonce(losses::infonce, problem), inputs);
    CHECK(relative_error(hand.loss, static_cast<double>(naive_infonce(q, p, negatives, 1e-4L))) < 1e-12);
    check_same_evaluation(hand, evaluate(bind_infonce(composed_infonce, problem), inputs), 1e-12);
    Evaluation symmetric = evaluate(bind_infonce(losses::infonce_symmetric, problem), inputs);
    CHECK(relative_error(symmetric.loss, static_cast<double>(naive_infonce_symmetric(q, p, negatives, 1e-4L))) <
          1e-12);
    check_same_evaluation(symmetric, evaluate(bind_infonce(composed_infonce_symmetric, problem), inputs), 1e-12);

    Tensor z = unit_rows(generator, 8, 8);
    for (bool mask_self : {true, false}) {
        NtxentProblem ntxent_problem{4, 8, 1e-4, mask_self, false};
        Evaluation hand_ntxent = evaluate(bind_ntxent(losses::ntxent, ntxent_problem), {z});
        CHECK(all_grads_finite(hand_ntxent));
        CHECK(relative_error(hand_ntxent.loss, static_cast<double>(naive_ntxent(z, 1e-4L, mask_self))) < 1e-12);
        check_same_evaluation(hand_ntxent, evaluate(bind_ntxent(composed_ntxent, ntxent_problem), {z}), 1e-12);
    }
}

TEST_CASE("InfoNCE family with logits in the thousands (rows of norm 30): finite, equal to the references") {
    Generator generator(42);
    Tensor q = unit_rows(generator, 5, 6) * 30.0, p = unit_rows(generator, 5, 6), negatives = unit_rows(generator, 2, 6);
    InfonceProblem problem{5, 6, 2, 0.01, false};  // |l| up to 3000
    std::vector<Tensor> inputs{q, p, negatives};
    Evaluation hand = evaluate(bind_infonce(losses::infonce, problem), inputs);
    CHECK(all_grads_finite(hand));
    CHECK(relative_error(hand.loss, static_cast<double>(naive_infonce(q, p, negatives, 0.01L))) < 1e-12);
    check_same_evaluation(hand, evaluate(bind_infonce(composed_infonce, problem), inputs), 1e-12);
    Evaluation symmetric = evaluate(bind_infonce(losses::infonce_symmetric, problem), inputs);
    CHECK(all_grads_finite(symmetric));
    check_same_evaluation(symmetric, evaluate(bind_infonce(composed_infonce_symmetric, problem), inputs), 1e-12);

    Tensor z = unit_rows(generator, 6, 6) * 10.0;  // |l| up to 1000 at tau = 0.1
    NtxentProblem ntxent_problem{3, 6, 0.1, true, false};
    Evaluation hand_ntxent = evaluate(bind_ntxent(losses::ntxent, ntxent_problem), {z});
    CHECK(all_grads_finite(hand_ntxent));
    CHECK(relative_error(hand_ntxent.loss, static_cast<double>(naive_ntxent(z, 0.1L, true))) < 1e-12);
    check_same_evaluation(hand_ntxent, evaluate(bind_ntxent(composed_ntxent, ntxent_problem), {z}), 1e-12);
}

TEST_CASE("InfoNCE family on a batch of identical rows: the loss is log(#candidates), gradients finite") {
    Generator generator(43);
    Tensor row = unit_rows(generator, 1, 5);
    Tensor same = concat({row, row, row, row}, 0);  // [4, 5], every row equal: every logit ties
    InfonceProblem problem{4, 5, 0, 0.05, true};
    std::vector<Tensor> inputs{same, same, Tensor::scalar(std::log(0.05), Dtype::Float64)};
    // Every candidate equally likely: P = 1/N, and sum_j G_ij c_j, sum_i G_ij q_i, sum_ij G_ij l_ij
    // all vanish because the rows are equal and each row of G sums to 0, so every gradient is
    // 0 up to rounding (|l| = 20 here, so rounding is ~1e-14).
    Evaluation hand = evaluate(bind_infonce(losses::infonce, problem), inputs);
    CHECK(all_grads_finite(hand));
    CHECK(relative_error(hand.loss, std::log(4.0)) < 1e-12);
    for (const Tensor& grad : hand.grads) CHECK(max_abs(grad) < 1e-12);
    Evaluation symmetric = evaluate(bind_infonce(losses::infonce_symmetric, problem), inputs);
    CHECK(relative_error(symmetric.loss, std::log(4.0)) < 1e-12);
    CHECK(all_grads_finite(symmetric));
    for (const Tensor& grad : symmetric.grads) CHECK(max_abs(grad) < 1e-12);

    Evaluation masked = evaluate([](const std::vector<Var>& x) { return losses::ntxent(x[0], Var(), 0.1, true); },
                                 {same});
    CHECK(all_grads_finite(masked));
    CHECK(relative_error(masked.loss, std::log(3.0)) < 1e-12);  // 2B - 1 = 3 candidates
    CHECK(max_abs(masked.grads[0]) < 1e-12);
    Evaluation unmasked = evaluate([](const std::vector<Var>& x) { return losses::ntxent(x[0], Var(), 0.1, false); },
                                   {same});
    CHECK(relative_error(unmasked.loss, std::log(4.0)) < 1e-12);
    CHECK(max_abs(unmasked.grads[0]) < 1e-12);
}

TEST_CASE("InfoNCE family in float32: loss within 1e-5 of float64, gradients finite") {
    Generator generator(44);
    Tensor q = unit_rows(generator, 5, 8), p = unit_rows(generator, 5, 8), negatives = unit_rows(generator, 3, 8);
    Tensor z = unit_rows(generator, 6, 8);
    for (InfonceSignature loss : {InfonceSignature(losses::infonce), InfonceSignature(losses::infonce_symmetric)}) {
        InfonceProblem problem{5, 8, 3, 0.05, false};
        Evaluation single = evaluate(bind_infonce(loss, problem),
                                     {q.to(Dtype::Float32), p.to(Dtype::Float32), negatives.to(Dtype::Float32)});
        Evaluation full = evaluate(bind_infonce(loss, problem), {q, p, negatives});
        CHECK(relative_error(single.loss, full.loss) < 1e-5);
        CHECK(all_grads_finite(single));
        CHECK(single.grads[0].dtype() == Dtype::Float32);
    }
    NtxentProblem problem{3, 8, 0.1, true, false};
    Evaluation single = evaluate(bind_ntxent(losses::ntxent, problem), {z.to(Dtype::Float32)});
    Evaluation full = evaluate(bind_ntxent(losses::ntxent, problem), {z});
    CHECK(relative_error(single.loss, full.loss) < 1e-5);
    CHECK(all_grads_finite(single));
}

// ---------------------------------------------------------------- validation

TEST_CASE("InfoNCE family: bad input is one clear error naming the input") {
    Generator generator(51);
    Var q(unit_rows(generator, 3, 4)), p(unit_rows(generator, 3, 4));
    Var wide(unit_rows(generator, 3, 5)), one_row(unit_rows(generator, 1, 4));
    std::vector<double> with_nan{1, 0, 0, 0, NAN, 1, 0, 0, 0, 0, 1, 0};
    Var nan_rows(Tensor::from_vector(with_nan, {3, 4}, Dtype::Float64));

    for (InfonceSignature loss : {InfonceSignature(losses::infonce), InfonceSignature(losses::infonce_symmetric)}) {
        CHECK_ERROR_MENTIONS(loss(q, wide, Var(), Var(), 0.05), "same shape");
        CHECK_ERROR_MENTIONS(loss(one_row, one_row, Var(), Var(), 0.05), "N (rows of q");
        CHECK_ERROR_MENTIONS(loss(nan_rows, p, Var(), Var(), 0.05), "q contains NaN");
        CHECK_ERROR_MENTIONS(loss(q, p, wide, Var(), 0.05), "neg");
        CHECK_ERROR_MENTIONS(loss(q, p, Var(), Var(), 0.0), "tau");
        CHECK_ERROR_MENTIONS(loss(q, p, Var(), Var(), -1.0), "tau");
        CHECK_ERROR_MENTIONS(loss(q, p, Var(), Var(Tensor::zeros({2}, Dtype::Float64)), 0.05), "log_tau");
        CHECK_ERROR_MENTIONS(loss(q, p, Var(), Var(Tensor::scalar(INFINITY, Dtype::Float64)), 0.05), "log_tau");
        CHECK_ERROR_MENTIONS(loss(q, Var(p.value().to(Dtype::Float32)), Var(), Var(), 0.05), "dtype");
        CHECK_ERROR_MENTIONS(loss(Var(q.value().reshape({12})), p, Var(), Var(), 0.05), "matrix");
    }
    Var five_rows(unit_rows(generator, 5, 4)), two_rows(unit_rows(generator, 2, 4));
    CHECK_ERROR_MENTIONS(losses::ntxent(five_rows, Var(), 0.1, true), "2B rows");
    CHECK_ERROR_MENTIONS(losses::ntxent(two_rows, Var(), 0.1, true), "B (z has 2B rows) >= 2");
    CHECK_ERROR_MENTIONS(losses::ntxent(q, Var(), 0.1, true), "2B rows");
    CHECK_ERROR_MENTIONS(losses::ntxent(Var(unit_rows(generator, 4, 4)), Var(), 0.0, true), "tau");
    CHECK_ERROR_MENTIONS(losses::ntxent(Var(Tensor::from_vector({1, 0, NAN, 0, 0, 1, 1, 1}, {4, 2}, Dtype::Float64)),
                                        Var(), 0.1, true),
                         "z contains NaN");
}

}  // namespace infonce_tests
