#include "losses/distill_kl.h"

#include <cmath>
#include <limits>
#include <vector>

#include "losses/loss_common.h"
#include "losses/random_inputs.h"
#include "losses/worked_example.h"

namespace nce::losses {
namespace {

constexpr const char* kDistillKl = "distill_kl";
constexpr double kInfinity = std::numeric_limits<double>::infinity();

// Each teacher score is finite, or -inf for a candidate the teacher rules out; each row
// needs one finite score, or it has no distribution.   teacher: [N, K]
void check_teacher_scores(const Tensor& teacher) {
    int64_t N = teacher.size(0), K = teacher.size(1);
    std::vector<double> scores = teacher.to(Dtype::Float64).to_vector();
    for (int64_t i = 0; i < N; ++i) {
        bool any_finite = false;
        for (int64_t k = 0; k < K; ++k) {
            double score = scores[static_cast<size_t>(i * K + k)];
            NCE_CHECK(!std::isnan(score) && score != kInfinity,
                      "{}: teacher[{}, {}] is {}; a teacher score must be finite (or -inf to rule the candidate out)",
                      kDistillKl, i, k, score);
            any_finite = any_finite || std::isfinite(score);
        }
        NCE_CHECK(any_finite, "{}: teacher row {} is all -inf; give each query at least one candidate with a finite score",
                  kDistillKl, i);
    }
}

void check_distill_kl_inputs(const Var& q, const Var& c, const Tensor& teacher, double tau, double teacher_tau) {
    check_matrix(q, kDistillKl, "q");
    check_min_rows(q.size(0), 1, kDistillKl, "N (rows of q)");
    NCE_CHECK(c.defined(), "{}: input c is missing", kDistillKl);
    NCE_CHECK(c.dtype() == q.dtype(), "{}: c ({}) must have q's dtype ({}); give both the same dtype", kDistillKl,
              dtype_name(c.dtype()), dtype_name(q.dtype()));
    int64_t N = q.size(0), d = q.size(1);
    NCE_CHECK(c.value().rank() == 3 && c.size(0) == N && c.size(2) == d,
              "{}: c must have shape [N, K, d] = [{}, K, {}] to match q {}, got {}", kDistillKl, N, d,
              shape_string(q.shape()), shape_string(c.shape()));
    check_min_rows(c.size(1), 1, kDistillKl, "K (candidates per query, axis 1 of c)");
    check_finite(c.value(), kDistillKl, "c");
    NCE_CHECK(teacher.defined(), "{}: input teacher is missing", kDistillKl);
    NCE_CHECK(is_floating(teacher.dtype()), "{}: teacher must be float32 or float64 (the teacher's scores), got {}",
              kDistillKl, dtype_name(teacher.dtype()));
    NCE_CHECK(teacher.shape() == Shape({N, c.size(1)}),
              "{}: teacher must have shape [N, K] = [{}, {}] (one score per candidate of c {}), got {}", kDistillKl, N,
              c.size(1), shape_string(c.shape()), shape_string(teacher.shape()));
    check_teacher_scores(teacher);
    NCE_CHECK(tau > 0 && std::isfinite(tau), "{}: parameter tau must be > 0, got {}", kDistillKl, tau);
    NCE_CHECK(teacher_tau > 0 && std::isfinite(teacher_tau), "{}: parameter teacher_tau must be > 0, got {}", kDistillKl,
              teacher_tau);
}

// The teacher's distribution t = softmax_k(teacher_ik / teacher_tau): data, no gradient.
struct TeacherDistribution {
    Tensor t;      // [N, K]; 0 for a -inf score
    Tensor log_t;  // [N, K]; log t, and 0 where t = 0, so t·log t is 0 there (0·log 0 = 0)
};

// Computed in float64 from the scores as given, then cast to q's dtype and device. Each row is shifted by
// its top score before the division (softmax is unchanged by a shift), so a huge score over a
// small teacher_tau cannot overflow; a -inf score gives log t = -inf, t = 0.
TeacherDistribution teacher_distribution(const Tensor& teacher, double teacher_tau, const Tensor& q) {
    Tensor scores = teacher.to(Dtype::Float64).to(q.device());
    Tensor shifted = scores - max(scores, 1, /*keepdim=*/true).values;  // <= 0, the top score at 0
    Tensor log_t = log_softmax(shifted / teacher_tau);                   // -inf where t = 0
    Tensor t = exp(log_t);
    return {t.to(q.dtype()), keep_where(log_t, t, 0.0).to(q.dtype())};
}

}  // namespace

// Distillation KL.    q: [N, d]    c: [N, K, d]    teacher, s, t, P: [N, K]
//   s_ik = q_i·c_ik / tau                          the student's logits
//   log P_ik = s_ik - lse_j s_ij                   the student's distribution (log_softmax over k)
//   t_ik = softmax_k(teacher_ik / teacher_tau)     the teacher's; data, so only P depends on q, c
//   L = (1/N) sum_ik t_ik ( log t_ik - log P_ik ),  0·log 0 = 0
//
// d(-log P_ik)/ds_ij = P_ij - [j = k], and sum_k t_ik = 1, so
//   dL/ds_ij = (1/N) sum_k t_ik (P_ij - [j = k]) = (P_ij - t_ij) / N
//   dL/ds = (P - t) / N                                     [N, K]
// Then through s_ik = q_i·c_ik / tau (q_i is in all K logits of row i, c_ik in one):
//   dL/dq_i  = sum_k dL/ds_ik c_ik / tau                    [N, 1, K]·[N, K, d] -> [N, d]
//   dL/dc_ik = dL/ds_ik q_i / tau                           [N, K, 1] * [N, 1, d] -> [N, K, d]
Var distill_kl(const Var& q, const Var& c, const Tensor& teacher, double tau, double teacher_tau) {
    check_distill_kl_inputs(q, c, teacher, tau, teacher_tau);
    const Tensor &qv = q.value(), &cv = c.value();
    int64_t N = cv.size(0), K = cv.size(1), d = cv.size(2);
    Tensor s = matmul(cv, qv.reshape({N, d, 1})).reshape({N, K}) / tau;  // [N, K, d]·[N, d, 1] -> [N, K]
    Tensor log_P = log_softmax(s);                                         // stable: shifted by the row max
    TeacherDistribution target = teacher_distribution(teacher, teacher_tau, qv);
    Tensor loss = sum(target.t * (target.log_t - log_P)) / static_cast<double>(N);  // []
    return Var::from_op(kDistillKl, std::move(loss), {q, c},
        [qv, cv, P = exp(log_P), t = target.t, tau](const Tensor& dy) -> Grads {
            int64_t N = cv.size(0), K = cv.size(1), d = cv.size(2);
            Tensor ds = (P - t) * (dy.item() / static_cast<double>(N));               // [N, K]
            Tensor dq = matmul(ds.reshape({N, 1, K}), cv).reshape({N, d}) / tau;     // [N, d]
            Tensor dc = ds.reshape({N, K, 1}) * qv.reshape({N, 1, d}) / tau;          // [N, K, d]
            return {dq, dc};
        });
}

LossDefinition distill_kl_definition() {
    LossDefinition loss;
    loss.name = kDistillKl;
    loss.inputs = {{"q", InputKind::Embedding}, {"c", InputKind::Embedding}, {"teacher", InputKind::Data}};
    loss.params = {{"tau", "0.05", ParamRule::Positive, {}}, {"teacher_tau", "1.0", ParamRule::Positive, {}}};
    loss.compute = [](const LossArguments& arguments) {
        return distill_kl(arguments.input("q"), arguments.input("c"), arguments.input("teacher").value(),
                          arguments.number("tau"), arguments.number("teacher_tau"));
    };
    // N = rows queries with K = 4 candidates each: unit rows for q and every c_ik, teacher
    // scores uniform in [-2, 4), and query 0's last candidate ruled out by the teacher (-inf:
    // t = 0 there, the 0·log 0 term). The loss is smooth: no kinks to avoid.
    loss.example = [](Generator& generator, int64_t rows, int64_t dim) {
        const int64_t K = 4;
        Tensor q = random_unit_rows(generator, rows, dim);
        Tensor c = random_unit_rows(generator, rows * K, dim).reshape({rows, K, dim});
        Tensor teacher = generator.uniform({rows, K}, Dtype::Float64, -2.0, 4.0);
        teacher.data<double>()[K - 1] = -kInfinity;
        return std::map<std::string, Tensor>{{"q", q}, {"c", c}, {"teacher", teacher}};
    };
    // The page's example: N = 2 queries with K = 3 candidates each, d = 2, tau = 0.5 and
    // teacher_tau = 2 (away from the defaults, so both divisions show). The teacher rules out
    // query 0's last candidate (-inf), the one the student likes best.
    loss.worked_example = [] {
        WorkedExample example;
        example.inputs = {{"q", matrix({{1.0, 0.0}, {0.6, 0.8}})},
                          {"c", Tensor::from_vector({0.6, 0.8, 0.0, 1.0, 1.0, 0.0,      // c_00, c_01, c_02
                                                     1.0, 0.0, 0.8, 0.6, 0.0, 1.0},     // c_10, c_11, c_12
                                                    {2, 3, 2}, Dtype::Float64)},
                          {"teacher", matrix({{2.0, 1.0, -kInfinity}, {0.0, 4.0, 2.0}})}};
        example.params = {{"tau", "0.5"}, {"teacher_tau", "2"}};
        example.steps = [](const LossArguments& arguments) {
            Tensor q = arguments.input("q").value(), c = arguments.input("c").value();
            Tensor teacher = arguments.input("teacher").value();
            double tau = arguments.number("tau"), teacher_tau = arguments.number("teacher_tau");
            int64_t N = c.size(0), K = c.size(1), d = c.size(2);
            Tensor s = sum(q.reshape({N, 1, d}) * c, 2) / tau;                        // [N, K]
            Tensor P = softmax(s);                                                     // [N, K]
            Tensor t = softmax(teacher / teacher_tau);                                 // [N, K]
            Tensor log_t = keep_where(log(t), t, 0.0);                                 // 0 where t = 0
            Tensor row_kl = sum(t * (log_t - log(P)), 1);                              // [N]
            Tensor G = (P - t) / static_cast<double>(N);                               // [N, K]
            return std::vector<DerivationStep>{
                {"s", "q_i.c_ik / tau", s},
                {"P", "softmax_k(s_i), the student's distribution", P},
                {"t", "softmax_k(teacher_i / teacher_tau), the teacher's (0 where teacher = -inf)", t},
                {"KL_i", "sum_k t_ik (log t_ik - log P_ik), 0 log 0 = 0 (L is their mean)", row_kl},
                {"G", "dL/ds = (P - t) / N", G},
                {"dq", "sum_k G_ik c_ik / tau", sum(G.reshape({N, K, 1}) * c, 1) / tau},
                {"dc", "G_ik q_i / tau", G.reshape({N, K, 1}) * q.reshape({N, 1, d}) / tau}};
        };
        return example;
    };
    return loss;
}

}  // namespace nce::losses
