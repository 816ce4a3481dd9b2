#include "losses/contrastive.h"

#include <cmath>

#include "losses/loss_common.h"
#include "losses/random_inputs.h"
#include "losses/worked_example.h"

namespace nce::losses {
namespace {

void check_contrastive_inputs(const Var& x, const Var& y, double margin) {
    check_matrix(x, "contrastive", "x");
    check_matrix(y, "contrastive", "y");
    check_same_shape(x, y, "contrastive", "x", "y");
    NCE_CHECK(x.dtype() == y.dtype(), "contrastive: x ({}) and y ({}) must have the same dtype",
              dtype_name(x.dtype()), dtype_name(y.dtype()));
    check_min_rows(x.size(0), 1, "contrastive", "N (rows of x)");
    NCE_CHECK(margin >= 0 && std::isfinite(margin), "contrastive: parameter margin must be >= 0, got {}", margin);
}

}  // namespace

ContrastiveMetric parse_contrastive_metric(const std::string& text) {
    if (text == "cosine") return ContrastiveMetric::Cosine;
    if (text == "euclidean") return ContrastiveMetric::Euclidean;
    fail("contrastive: parameter metric must be cosine or euclidean, got '{}'", text);
}

// Contrastive.     x, y: [N, d]     label: [N]     D: [N]
//   L = (1/N) sum_i 1/2 [ label_i D_i^2 + (1 - label_i) relu(margin - D_i)^2 ]
//
// Through D first (d/dz of 1/2 relu(z)^2 is relu(z), and z = margin - D has dz/dD = -1):
//   dL/dD_i = ( label_i D_i - (1 - label_i) relu(margin - D_i) ) / N        [N]
// Then D into the embeddings, row by row:
//   cosine:    D_i = 1 - x_i·y_i      dD_i/dx_i = -y_i               dD_i/dy_i = -x_i
//   euclidean: D_i = |x_i - y_i|      dD_i/dx_i = u_i = (x_i - y_i) / D_i   dD_i/dy_i = -u_i
//              (u_i = 0 when D_i = 0: |x| has a corner at 0 and 0 is the subgradient chosen)
//   dL/dx_i = dL/dD_i dD_i/dx_i       dL/dy_i = dL/dD_i dD_i/dy_i         [N, 1] * [N, d]
Var contrastive(const Var& x, const Var& y, const Tensor& label, double margin, ContrastiveMetric metric) {
    check_contrastive_inputs(x, y, margin);
    int64_t N = x.size(0);
    std::vector<double> label_values = read_values(Var(label), N, "contrastive", "label");
    Tensor labels = Tensor::from_vector(label_values, {N}, x.dtype()).to(x.value().device());  // [N]

    const Tensor &xv = x.value(), &yv = y.value();
    Tensor distance;                        // D  [N]
    Tensor distance_by_x, distance_by_y;    // dD_i/dx_i, dD_i/dy_i  [N, d]
    if (metric == ContrastiveMetric::Cosine) {
        distance = 1.0 - sum(xv * yv, 1);
        distance_by_x = -yv;
        distance_by_y = -xv;
    } else {
        Tensor difference = xv - yv;
        distance = row_norms(difference);
        distance_by_x = unit_rows(difference, distance);
        distance_by_y = -distance_by_x;
    }
    Tensor shortfall = relu(margin - distance);                                         // relu(margin - D)  [N]
    Tensor loss = mean(labels * square(distance) + (1.0 - labels) * square(shortfall)) * 0.5;  // []
    Tensor dloss_ddistance = (labels * distance - (1.0 - labels) * shortfall) / static_cast<double>(N);  // [N]
    return Var::from_op("contrastive", std::move(loss), {x, y},
        [slope = dloss_ddistance.reshape({N, 1}), distance_by_x, distance_by_y](const Tensor& dy) -> Grads {
            Tensor dloss_dD = slope * dy.item();  // [N, 1]
            return {dloss_dD * distance_by_x, dloss_dD * distance_by_y};
        });
}

LossDefinition contrastive_definition() {
    LossDefinition loss;
    loss.name = "contrastive";
    loss.inputs = {{"x", InputKind::Embedding}, {"y", InputKind::Embedding}, {"label", InputKind::Data}};
    loss.params = {{"margin", "0.5", ParamRule::NonNegative, {}},
                   {"metric", "cosine", ParamRule::Choice, {"cosine", "euclidean"}}};
    loss.compute = [](const LossArguments& arguments) {
        return contrastive(arguments.input("x"), arguments.input("y"), arguments.input("label").value(),
                           arguments.number("margin"), parse_contrastive_metric(arguments.text("metric")));
    };
    // Random unit rows; labels alternate 1, 0, 1, ... so both terms appear. Each pair is
    // redrawn (up to 1000 times) until, under both metrics, D is at least 0.05 away from the
    // default margin 0.5 and the euclidean distance is at least 0.1 (away from the corner at 0).
    loss.example = [](Generator& generator, int64_t rows, int64_t dim) {
        auto unit_row = [&] { return random_unit_rows(generator, 1, dim); };
        std::vector<Tensor> xs, ys;
        std::vector<double> labels;
        for (int64_t i = 0; i < rows; ++i) {
            Tensor x, y;
            for (int attempt = 0; attempt < 1000; ++attempt) {
                x = unit_row(), y = unit_row();
                double cosine_distance = 1.0 - sum(x * y).item();
                double euclidean_distance = row_norms(x - y).item();
                if (std::abs(cosine_distance - 0.5) > 0.05 && std::abs(euclidean_distance - 0.5) > 0.05 &&
                    euclidean_distance > 0.1)
                    break;
            }
            xs.push_back(x), ys.push_back(y), labels.push_back(i % 2 == 0 ? 1.0 : 0.0);
        }
        return std::map<std::string, Tensor>{{"x", concat(xs, 0)},
                                             {"y", concat(ys, 0)},
                                             {"label", Tensor::from_vector(labels, {rows}, Dtype::Float64)}};
    };
    // The page's example: the default cosine metric and margin 0.5. Pair 0 is similar
    // (D_0 = 1 - 0.8 = 0.2); pair 1 is dissimilar and inside the margin (D_1 = 1 - 0.96 = 0.04 < 0.5).
    loss.worked_example = [] {
        WorkedExample example;
        example.inputs = {{"x", matrix({{1.0, 0.0}, {0.6, 0.8}})},
                          {"y", matrix({{0.8, 0.6}, {0.8, 0.6}})},
                          {"label", Tensor::from_vector({1.0, 0.0}, {2}, Dtype::Float64)}};
        example.steps = [](const LossArguments& arguments) {
            Tensor x = arguments.input("x").value(), y = arguments.input("y").value();
            Tensor label = arguments.input("label").value();
            double margin = arguments.number("margin");
            int64_t N = x.size(0);
            Tensor D = 1.0 - sum(x * y, 1);                                                  // [N]
            Tensor shortfall = relu(margin - D);                                              // [N]
            Tensor g = (label * D - (1.0 - label) * shortfall) / static_cast<double>(N);     // [N]
            Tensor g_rows = g.reshape({N, 1});                                                // [N, 1]
            return std::vector<DerivationStep>{
                {"D", "1 - x_i.y_i", D},
                {"relu(margin - D)", "how far inside the margin (counts where label = 0)", shortfall},
                {"g", "dL/dD = (label D - (1 - label) relu(margin - D)) / N", g},
                {"dx", "-g_i y_i", -(g_rows * y)},
                {"dy", "-g_i x_i", -(g_rows * x)}};
        };
        return example;
    };
    return loss;
}

}  // namespace nce::losses
