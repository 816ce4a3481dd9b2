#include "losses/triplet.h"

#include <cmath>

#include "losses/loss_common.h"
#include "losses/random_inputs.h"
#include "losses/worked_example.h"

namespace nce::losses {
namespace {

void check_triplet_inputs(const Var& a, const Var& p, const Var& n, double margin) {
    check_matrix(a, "triplet", "a");
    check_matrix(p, "triplet", "p");
    check_matrix(n, "triplet", "n");
    check_same_shape(a, p, "triplet", "a", "p");
    check_same_shape(a, n, "triplet", "a", "n");
    NCE_CHECK(a.dtype() == p.dtype() && a.dtype() == n.dtype(),
              "triplet: a ({}), p ({}) and n ({}) must have the same dtype", dtype_name(a.dtype()),
              dtype_name(p.dtype()), dtype_name(n.dtype()));
    check_min_rows(a.size(0), 1, "triplet", "N (rows of a)");
    NCE_CHECK(margin >= 0 && std::isfinite(margin), "triplet: parameter margin must be >= 0, got {}", margin);
}

// Triplet, dot metric.     a, p, n: [N, d]
//   h_i = a_i·n_i - a_i·p_i + margin              [N]
//   L   = (1/N) sum_i relu(h_i)
//
//   dL/dh_i = active_i / N                        active_i = 1 if h_i > 0 else 0
//   dh_i/da_i = n_i - p_i,  dh_i/dp_i = -a_i,  dh_i/dn_i = a_i, so
//   dL/da_i =  dL/dh_i (n_i - p_i)                [N, 1] * [N, d]
//   dL/dp_i = -dL/dh_i a_i
//   dL/dn_i =  dL/dh_i a_i
Var triplet_dot(const Var& a, const Var& p, const Var& n, double margin) {
    const Tensor &av = a.value(), &pv = p.value(), &nv = n.value();
    Tensor hinge = sum(av * nv, 1) - sum(av * pv, 1) + margin;  // h  [N]
    Tensor loss = mean(relu(hinge));                             // []
    return Var::from_op("triplet", std::move(loss), {a, p, n},
        [av, pv, nv, slope = hinge_slope(hinge)](const Tensor& dy) -> Grads {
            Tensor dloss_dhinge = slope * dy.item();  // [N, 1]
            Tensor dn = dloss_dhinge * av;            // [N, d]
            return {dloss_dhinge * (nv - pv), -dn, dn};
        });
}

// Triplet, euclidean metric.     a, p, n: [N, d]
//   dist_ap_i = |a_i - p_i|,  dist_an_i = |a_i - n_i|              [N]
//   h_i = dist_ap_i - dist_an_i + margin,   L = (1/N) sum_i relu(h_i)
//
//   The length of a vector has gradient d|x|/dx = x / |x|, a unit vector; at x = 0 it has a
//   corner and we take the subgradient 0:
//   u_ap_i = (a_i - p_i) / dist_ap_i,  u_an_i = (a_i - n_i) / dist_an_i   [N, d]
//   dL/dh_i = active_i / N                        active_i = 1 if h_i > 0 else 0
//   dL/da_i =  dL/dh_i (u_ap_i - u_an_i)          a appears in both distances
//   dL/dp_i = -dL/dh_i u_ap_i
//   dL/dn_i =  dL/dh_i u_an_i
Var triplet_euclidean(const Var& a, const Var& p, const Var& n, double margin) {
    Tensor to_positive = a.value() - p.value(), to_negative = a.value() - n.value();  // [N, d]
    Tensor dist_ap = row_norms(to_positive), dist_an = row_norms(to_negative);        // [N]
    Tensor hinge = dist_ap - dist_an + margin;                                         // h  [N]
    Tensor loss = mean(relu(hinge));                                                   // []
    return Var::from_op("triplet", std::move(loss), {a, p, n},
        [u_ap = unit_rows(to_positive, dist_ap), u_an = unit_rows(to_negative, dist_an),
         slope = hinge_slope(hinge)](const Tensor& dy) -> Grads {
            Tensor dloss_dhinge = slope * dy.item();  // [N, 1]
            return {dloss_dhinge * (u_ap - u_an), -(dloss_dhinge * u_ap), dloss_dhinge * u_an};
        });
}

}  // namespace

TripletMetric parse_triplet_metric(const std::string& text) {
    if (text == "dot") return TripletMetric::Dot;
    if (text == "euclidean") return TripletMetric::Euclidean;
    fail("triplet: parameter metric must be dot or euclidean, got '{}'", text);
}

Var triplet(const Var& a, const Var& p, const Var& n, double margin, TripletMetric metric) {
    check_triplet_inputs(a, p, n, margin);
    return metric == TripletMetric::Dot ? triplet_dot(a, p, n, margin) : triplet_euclidean(a, p, n, margin);
}

LossDefinition triplet_definition() {
    LossDefinition loss;
    loss.name = "triplet";
    loss.inputs = {{"a", InputKind::Embedding}, {"p", InputKind::Embedding}, {"n", InputKind::Embedding}};
    loss.params = {{"margin", "0.3", ParamRule::NonNegative, {}},
                   {"metric", "dot", ParamRule::Choice, {"dot", "euclidean"}}};
    loss.compute = [](const LossArguments& arguments) {
        return triplet(arguments.input("a"), arguments.input("p"), arguments.input("n"), arguments.number("margin"),
                       parse_triplet_metric(arguments.text("metric")));
    };
    // Random unit rows, each triplet redrawn (up to 1000 times) until, at the default margin
    // 0.3 and under both metrics, its hinge is at least 0.05 away from the relu's kink and
    // both distances are at least 0.1 (away from the corner of |x| at 0).
    loss.example = [](Generator& generator, int64_t rows, int64_t dim) {
        auto unit_row = [&] { return random_unit_rows(generator, 1, dim); };
        auto dot = [](const Tensor& x, const Tensor& y) { return sum(x * y).item(); };
        auto distance = [](const Tensor& x, const Tensor& y) { return row_norms(x - y).item(); };
        std::vector<Tensor> anchors, positives, negatives;
        for (int64_t i = 0; i < rows; ++i) {
            Tensor a, p, n;
            for (int attempt = 0; attempt < 1000; ++attempt) {
                a = unit_row(), p = unit_row(), n = unit_row();
                double dot_hinge = dot(a, n) - dot(a, p) + 0.3;
                double dist_ap = distance(a, p), dist_an = distance(a, n);
                double euclidean_hinge = dist_ap - dist_an + 0.3;
                if (std::abs(dot_hinge) > 0.05 && std::abs(euclidean_hinge) > 0.05 && dist_ap > 0.1 && dist_an > 0.1)
                    break;
            }
            anchors.push_back(a), positives.push_back(p), negatives.push_back(n);
        }
        return std::map<std::string, Tensor>{
            {"a", concat(anchors, 0)}, {"p", concat(positives, 0)}, {"n", concat(negatives, 0)}};
    };
    // The page's example: the default dot metric and margin 0.3; triplet 0 is active
    // (h_0 = 0.8 - 0.96 + 0.3 = 0.14 > 0), triplet 1 is not (h_1 = 0 - 0.8 + 0.3 = -0.5).
    loss.worked_example = [] {
        WorkedExample example;
        example.inputs = {{"a", matrix({{0.6, 0.8}, {1.0, 0.0}})},
                          {"p", matrix({{0.8, 0.6}, {0.8, 0.6}})},
                          {"n", matrix({{0.0, 1.0}, {0.0, 1.0}})}};
        example.steps = [](const LossArguments& arguments) {
            Tensor a = arguments.input("a").value(), p = arguments.input("p").value();
            Tensor n = arguments.input("n").value();
            double margin = arguments.number("margin");
            int64_t N = a.size(0);
            Tensor s_ap = sum(a * p, 1), s_an = sum(a * n, 1);                 // [N]
            Tensor h = s_an - s_ap + margin;                                    // [N]
            Tensor w = step(h) / static_cast<double>(N);                        // [N]
            Tensor w_rows = w.reshape({N, 1});                                  // [N, 1]
            return std::vector<DerivationStep>{
                {"s_ap", "a_i.p_i", s_ap},
                {"s_an", "a_i.n_i", s_an},
                {"h", "s_an - s_ap + margin", h},
                {"relu(h)", "max(h, 0), each triplet's term", relu(h)},
                {"w", "dL/dh = relu'(h) / N", w},
                {"da", "w_i (n_i - p_i)", w_rows * (n - p)},
                {"dp", "-w_i a_i", -(w_rows * a)},
                {"dn", "w_i a_i", w_rows * a}};
        };
        return example;
    };
    return loss;
}

}  // namespace nce::losses
